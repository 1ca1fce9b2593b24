"""The op schemas' facts an ORT format file carries, as data: per domain, one entry per schema version
(see op_schemas.py, which reads them)."""

# Written by tests/ort_format/op_schemas_source.py from onnx 1.16.2's schemas and the ORT
# format files onnxruntime 1.19.2 writes.  Per domain, one entry per schema
# version: op@since(input keys)output keys, a key being the parameter's type constraint or, for a fixed
# type, its name; '*' marks a variadic parameter.
SCHEMAS = {
    '': """
    Abs@1(T)T Abs@6(T)T Abs@13(T)T Acos@7(T)T Acosh@9(T)T Add@1(T,T)T Add@6(T,T)T Add@7(T,T)T Add@13(T,T)T
    Add@14(T,T)T AffineGrid@20(T1,T2)T1 And@1(T,T)T1 And@7(T,T)T1 ArgMax@1(T)reduced ArgMax@11(T)reduced
    ArgMax@12(T)reduced ArgMax@13(T)reduced ArgMin@1(T)reduced ArgMin@11(T)reduced ArgMin@12(T)reduced
    ArgMin@13(T)reduced Asin@7(T)T Asinh@9(T)T Atan@7(T)T Atanh@9(T)T AveragePool@1(T)T AveragePool@7(T)T
    AveragePool@10(T)T AveragePool@11(T)T AveragePool@19(T)T BatchNormalization@1(T,T,T,T,T)T,T,T,T,T
    BatchNormalization@6(T,T,T,T,T)T,T,T,T,T BatchNormalization@7(T,T,T,T,T)T,T,T,T,T
    BatchNormalization@9(T,T,T,T,T)T,T,T,T,T BatchNormalization@14(T,T,T,U,U)T,U,U
    BatchNormalization@15(T,T1,T1,T2,T2)T,T2,T2 Bernoulli@15(T1)T2 BitShift@11(T,T)T BitwiseAnd@18(T,T)T
    BitwiseNot@18(T)T BitwiseOr@18(T,T)T BitwiseXor@18(T,T)T BlackmanWindow@17(T1)T2 Cast@1(T1)T2 Cast@6(T1)T2
    Cast@9(T1)T2 Cast@13(T1)T2 Cast@19(T1)T2 Cast@21(T1)T2 CastLike@15(T1,T2)T2 CastLike@19(T1,T2)T2
    CastLike@21(T1,T2)T2 Ceil@1(T)T Ceil@6(T)T Ceil@13(T)T Celu@12(T)T CenterCropPad@18(T,Tind)T Clip@1(T)T
    Clip@6(T)T Clip@11(T,T,T)T Clip@12(T,T,T)T Clip@13(T,T,T)T Col2Im@18(T,image_shape,block_shape)T
    Compress@9(T,T1)T Compress@11(T,T1)T Concat@1(T*)T Concat@4(T*)T Concat@11(T*)T Concat@13(T*)T
    ConcatFromSequence@11(S)T Constant@1()T Constant@9()T Constant@11()T Constant@12()T Constant@13()T
    Constant@19()T Constant@21()T ConstantOfShape@9(T1)T2 ConstantOfShape@20(T1)T2 ConstantOfShape@21(T1)T2
    Conv@1(T,T,T)T Conv@11(T,T,T)T ConvInteger@10(T1,T2,T1,T2)T3 ConvTranspose@1(T,T,T)T
    ConvTranspose@11(T,T,T)T Cos@7(T)T Cosh@9(T)T CumSum@11(T,T2)T CumSum@14(T,T2)T DFT@17(T1,T2)T1
    DFT@20(T1,T2,axis)T1 DeformConv@19(T,T,T,T,T)T DepthToSpace@1(T)T DepthToSpace@11(T)T DepthToSpace@13(T)T
    DequantizeLinear@10(T,x_scale,T)y DequantizeLinear@13(T,x_scale,T)y DequantizeLinear@19(T1,T2,T1)T2
    DequantizeLinear@21(T1,T2,T1)T2 Det@11(T)T Div@1(T,T)T Div@6(T,T)T Div@7(T,T)T Div@13(T,T)T Div@14(T,T)T
    Dropout@1(T)T,T Dropout@6(T)T,T Dropout@7(T)T,T Dropout@10(T)T,T1 Dropout@12(T,T1,T2)T,T2
    Dropout@13(T,T1,T2)T,T2 DynamicQuantizeLinear@11(T1)T2,y_scale,T2 Einsum@12(T*)T Elu@1(T)T Elu@6(T)T
    Equal@1(T,T)T1 Equal@7(T,T)T1 Equal@11(T,T)T1 Equal@13(T,T)T1 Equal@19(T,T)T1 Erf@9(T)T Erf@13(T)T Exp@1(T)T
    Exp@6(T)T Exp@13(T)T Expand@8(T,shape)T Expand@13(T,shape)T EyeLike@9(T1)T2 Flatten@1(T)T Flatten@9(T)T
    Flatten@11(T)T Flatten@13(T)T Flatten@21(T)T Floor@1(T)T Floor@6(T)T Floor@13(T)T GRU@1(T,T,T,T,T1,T)T,T
    GRU@3(T,T,T,T,T1,T)T,T GRU@7(T,T,T,T,T1,T)T,T GRU@14(T,T,T,T,T1,T)T,T Gather@1(T,Tind)T Gather@11(T,Tind)T
    Gather@13(T,Tind)T GatherElements@11(T,Tind)T GatherElements@13(T,Tind)T GatherND@11(T,indices)T
    GatherND@12(T,indices)T GatherND@13(T,indices)T Gelu@20(T)T Gemm@1(T,T,T)T Gemm@6(T,T,T)T Gemm@7(T,T,T)T
    Gemm@9(T,T,T)T Gemm@11(T,T,T)T Gemm@13(T,T,T)T GlobalAveragePool@1(T)T GlobalLpPool@1(T)T GlobalLpPool@2(T)T
    GlobalMaxPool@1(T)T Greater@1(T,T)T1 Greater@7(T,T)T1 Greater@9(T,T)T1 Greater@13(T,T)T1
    GreaterOrEqual@12(T,T)T1 GreaterOrEqual@16(T,T)T1 GridSample@16(T1,T2)T1 GridSample@20(T1,T2)T1
    GroupNormalization@18(T,T,T)T GroupNormalization@21(T,T,T)T HammingWindow@17(T1)T2 HannWindow@17(T1)T2
    HardSigmoid@1(T)T HardSigmoid@6(T)T HardSwish@14(T)T Hardmax@1(T)T Hardmax@11(T)T Hardmax@13(T)T
    Identity@1(T)T Identity@13(T)T Identity@14(V)V Identity@16(V)V Identity@19(V)V Identity@21(V)V If@1(B)V*
    If@11(B)V* If@13(B)V* If@16(B)V* If@19(B)V* If@21(B)V* ImageDecoder@20(T1)T2 InstanceNormalization@1(T,T,T)T
    InstanceNormalization@6(T,T,T)T IsInf@10(T1)T2 IsInf@20(T1)T2 IsNaN@9(T1)T2 IsNaN@13(T1)T2 IsNaN@20(T1)T2
    LRN@1(T)T LRN@13(T)T LSTM@1(T,T,T,T,T1,T,T,T)T,T,T LSTM@7(T,T,T,T,T1,T,T,T)T,T,T
    LSTM@14(T,T,T,T,T1,T,T,T)T,T,T LayerNormalization@17(T,T,T)T,U,U LeakyRelu@1(T)T LeakyRelu@6(T)T
    LeakyRelu@16(T)T Less@1(T,T)T1 Less@7(T,T)T1 Less@9(T,T)T1 Less@13(T,T)T1 LessOrEqual@12(T,T)T1
    LessOrEqual@16(T,T)T1 Log@1(T)T Log@6(T)T Log@13(T)T LogSoftmax@1(T)T LogSoftmax@11(T)T LogSoftmax@13(T)T
    Loop@1(I,B,V*)V* Loop@11(I,B,V*)V* Loop@13(I,B,V*)V* Loop@16(I,B,V*)V* Loop@19(I,B,V*)V* Loop@21(I,B,V*)V*
    LpNormalization@1(T)T LpPool@1(T)T LpPool@2(T)T LpPool@11(T)T LpPool@18(T)T MatMul@1(T,T)T MatMul@9(T,T)T
    MatMul@13(T,T)T MatMulInteger@10(T1,T2,T1,T2)T3 Max@1(T*)T Max@6(T*)T Max@8(T*)T Max@12(T*)T Max@13(T*)T
    MaxPool@1(T)T MaxPool@8(T)T,I MaxPool@10(T)T,I MaxPool@11(T)T,I MaxPool@12(T)T,I MaxPoolGrad@9(T,I)T
    MaxRoiPool@1(T,T)T MaxUnpool@9(T1,T2,T2)T1 MaxUnpool@11(T1,T2,T2)T1 Mean@1(T*)T Mean@6(T*)T Mean@8(T*)T
    Mean@13(T*)T MeanVarianceNormalization@9(T)T MeanVarianceNormalization@13(T)T
    MelWeightMatrix@17(T1,T1,T1,T2,T2)T3 Min@1(T*)T Min@6(T*)T Min@8(T*)T Min@12(T*)T Min@13(T*)T Mish@18(T)T
    Mod@10(T,T)T Mod@13(T,T)T Mul@1(T,T)T Mul@6(T,T)T Mul@7(T,T)T Mul@13(T,T)T Mul@14(T,T)T Multinomial@7(T1)T2
    Neg@1(T)T Neg@6(T)T Neg@13(T)T NegativeLogLikelihoodLoss@12(T,Tind,T)T
    NegativeLogLikelihoodLoss@13(T,Tind,T)T
    NonMaxSuppression@10(boxes,scores,max_output_boxes_per_class,iou_threshold,score_threshold)selected_indices
    NonMaxSuppression@11(boxes,scores,max_output_boxes_per_class,iou_threshold,score_threshold)selected_indices
    NonZero@9(T)Y NonZero@13(T)Y Not@1(T)T OneHot@9(T1,T2,T3)T3 OneHot@11(T1,T2,T3)T3 Optional@15(V)O
    OptionalGetElement@15(O)V OptionalGetElement@18(O)V OptionalHasElement@15(O)B OptionalHasElement@18(O)B
    Or@1(T,T)T1 Or@7(T,T)T1 PRelu@1(T,T)T PRelu@6(T,T)T PRelu@7(T,T)T PRelu@9(T,T)T PRelu@16(T,T)T Pad@1(T)T
    Pad@2(T)T Pad@11(T,pads,T)T Pad@13(T,pads,T)T Pad@18(T,pads,T,Tind)T Pad@19(T,pads,T,Tind)T
    Pad@21(T,pads,T,Tind)T Pow@1(T,T)T Pow@7(T,T)T Pow@12(T,T1)T Pow@13(T,T1)T Pow@15(T,T1)T
    QLinearConv@10(T1,x_scale,T1,T2,w_scale,T2,y_scale,T3,T4)T3
    QLinearMatMul@10(T1,a_scale,T1,T2,b_scale,T2,y_scale,T3)T3 QLinearMatMul@21(T1,TS,T1,T2,TS,T2,TS,T3)T3
    QuantizeLinear@10(T1,y_scale,T2)T2 QuantizeLinear@13(T1,y_scale,T2)T2 QuantizeLinear@19(T1,T1,T2)T2
    QuantizeLinear@21(T1,T1,T2)T2 RNN@1(T,T,T,T,T1,T)T,T RNN@7(T,T,T,T,T1,T)T,T RNN@14(T,T,T,T,T1,T)T,T
    RandomNormal@1()T RandomNormalLike@1(T1)T2 RandomUniform@1()T RandomUniformLike@1(T1)T2 Range@11(T,T,T)T
    Reciprocal@1(T)T Reciprocal@6(T)T Reciprocal@13(T)T ReduceL1@1(T)T ReduceL1@11(T)T ReduceL1@13(T)T
    ReduceL1@18(T,axes)T ReduceL2@1(T)T ReduceL2@11(T)T ReduceL2@13(T)T ReduceL2@18(T,axes)T ReduceLogSum@1(T)T
    ReduceLogSum@11(T)T ReduceLogSum@13(T)T ReduceLogSum@18(T,axes)T ReduceLogSumExp@1(T)T
    ReduceLogSumExp@11(T)T ReduceLogSumExp@13(T)T ReduceLogSumExp@18(T,axes)T ReduceMax@1(T)T ReduceMax@11(T)T
    ReduceMax@12(T)T ReduceMax@13(T)T ReduceMax@18(T,axes)T ReduceMax@20(T,axes)T ReduceMean@1(T)T
    ReduceMean@11(T)T ReduceMean@13(T)T ReduceMean@18(T,axes)T ReduceMin@1(T)T ReduceMin@11(T)T ReduceMin@12(T)T
    ReduceMin@13(T)T ReduceMin@18(T,axes)T ReduceMin@20(T,axes)T ReduceProd@1(T)T ReduceProd@11(T)T
    ReduceProd@13(T)T ReduceProd@18(T,axes)T ReduceSum@1(T)T ReduceSum@11(T)T ReduceSum@13(T,axes)T
    ReduceSumSquare@1(T)T ReduceSumSquare@11(T)T ReduceSumSquare@13(T)T ReduceSumSquare@18(T,axes)T
    RegexFullMatch@20(T1)T2 Relu@1(T)T Relu@6(T)T Relu@13(T)T Relu@14(T)T Reshape@1(T)T Reshape@5(T,shape)T
    Reshape@13(T,shape)T Reshape@14(T,shape)T Reshape@19(T,shape)T Reshape@21(T,shape)T Resize@10(T,scales)T
    Resize@11(T1,T2,scales,sizes)T1 Resize@13(T1,T2,scales,sizes)T1 Resize@18(T1,T2,scales,sizes)T1
    Resize@19(T1,T2,scales,sizes)T1 ReverseSequence@10(T,sequence_lens)T RoiAlign@10(T1,T1,T2)T1
    RoiAlign@16(T1,T1,T2)T1 Round@11(T)T STFT@17(T1,T2,T1,T2)T1 Scan@8(I,V*)V* Scan@9(V*)V* Scan@11(V*)V*
    Scan@16(V*)V* Scan@19(V*)V* Scan@21(V*)V* Scatter@9(T,Tind,T)T Scatter@11(T,Tind,T)T
    ScatterElements@11(T,Tind,T)T ScatterElements@13(T,Tind,T)T ScatterElements@16(T,Tind,T)T
    ScatterElements@18(T,Tind,T)T ScatterND@11(T,indices,T)T ScatterND@13(T,indices,T)T
    ScatterND@16(T,indices,T)T ScatterND@18(T,indices,T)T Selu@1(T)T Selu@6(T)T SequenceAt@11(S,I)T
    SequenceConstruct@11(T*)S SequenceEmpty@11()S SequenceErase@11(S,I)S SequenceInsert@11(S,T,I)S
    SequenceLength@11(S)I SequenceMap@17(S,V*)S* Shape@1(T)T1 Shape@13(T)T1 Shape@15(T)T1 Shape@19(T)T1
    Shape@21(T)T1 Shrink@9(T)T Sigmoid@1(T)T Sigmoid@6(T)T Sigmoid@13(T)T Sign@9(T)T Sign@13(T)T Sin@7(T)T
    Sinh@9(T)T Size@1(T)T1 Size@13(T)T1 Size@19(T)T1 Size@21(T)T1 Slice@1(T)T Slice@10(T,Tind,Tind,Tind,Tind)T
    Slice@11(T,Tind,Tind,Tind,Tind)T Slice@13(T,Tind,Tind,Tind,Tind)T Softmax@1(T)T Softmax@11(T)T
    Softmax@13(T)T SoftmaxCrossEntropyLoss@12(T,Tind,T)T,T SoftmaxCrossEntropyLoss@13(T,Tind,T)T,T
    Softplus@1(T)T Softsign@1(T)T SpaceToDepth@1(T)T SpaceToDepth@13(T)T Split@1(T,T)T* Split@2(T)T*
    Split@11(T)T* Split@13(T,split)T* Split@18(T,split)T* SplitToSequence@11(T,I)S Sqrt@1(T)T Sqrt@6(T)T
    Sqrt@13(T)T Squeeze@1(T)T Squeeze@11(T)T Squeeze@13(T,axes)T Squeeze@21(T,axes)T StringConcat@20(T,T)T
    StringNormalizer@10(X)Y StringSplit@20(T1)T2,T3 Sub@1(T,T)T Sub@6(T,T)T Sub@7(T,T)T Sub@13(T,T)T
    Sub@14(T,T)T Sum@1(T*)T Sum@6(T*)T Sum@8(T*)T Sum@13(T*)T Tan@7(T)T Tanh@1(T)T Tanh@6(T)T Tanh@13(T)T
    TfIdfVectorizer@9(T)T1 ThresholdedRelu@10(T)T Tile@1(T,T,T)T Tile@6(T,T1)T Tile@13(T,T1)T TopK@1(T)T,I
    TopK@10(T,K)T,I TopK@11(T,K)T,I Transpose@1(T)T Transpose@13(T)T Transpose@21(T)T Trilu@14(T,k)T
    Unique@11(T)T,indices,inverse_indices,counts Unsqueeze@1(T)T Unsqueeze@11(T)T Unsqueeze@13(T,axes)T
    Unsqueeze@21(T,axes)T Upsample@1(T)T Upsample@7(T)T Upsample@9(T,scales)T Upsample@10(T,scales)T
    Where@9(B,T,T)T Where@16(B,T,T)T Xor@1(T,T)T1 Xor@7(T,T)T1
""",
    'ai.onnx.ml': """
    ArrayFeatureExtractor@1(T,Y)T Binarizer@1(T)T CastMap@1(T1)T2 CategoryMapper@1(T1)T2 DictVectorizer@1(T1)T2
    FeatureVectorizer@1(T1*)Y Imputer@1(T)T LabelEncoder@1(T1)T2 LabelEncoder@2(T1)T2 LabelEncoder@4(T1)T2
    LinearClassifier@1(T1)T2,Z LinearRegressor@1(T)Y Normalizer@1(T)Y OneHotEncoder@1(T)Y
    SVMClassifier@1(T1)T2,Z SVMRegressor@1(T)Y Scaler@1(T)Y TreeEnsemble@5(T)T TreeEnsembleClassifier@1(T1)T2,Z
    TreeEnsembleClassifier@3(T1)T2,Z TreeEnsembleClassifier@5(T1)T2,Z TreeEnsembleRegressor@1(T)Y
    TreeEnsembleRegressor@3(T)Y TreeEnsembleRegressor@5(T)Y ZipMap@1(X)T
""",
    'ai.onnx.preview.training': """
    Adagrad@1(T1,T2,T3*)T3* Adam@1(T1,T2,T3*)T3* Gradient@1(T1*)T2* Momentum@1(T1,T2,T3*)T3*
""",
    'com.microsoft': """
    AdamWOptimizer@1(T1,T2,S_WEIGHT,S_GRAD,S_MOMENT,S_MOMENT,T_BOOL)T_BOOL,S_WEIGHT,S_MOMENT,S_MOMENT
    BatchNormInternal@1(T,T1,T1,T2,T2)T,T2,T2,T2,T2 BatchNormalizationGrad@1(T,T,T1,T2,T2)T,T1,T1
    BiasGelu@1(T,T)T ConvGrad@1(T,T,T)T,T,T DropoutGrad@1(T,T2,T1,T2)T FastGelu@1(T,T)T FusedConv@1(T,T,T,T)T
    FusedGemm@1(T,T,T)T FusedMatMul@1(T,T)T GRUGrad@1(T,T,T,T,TSize,T,T,T,T,T)T,T,T,T,T
    GRUTraining@1(T,T,T,T,TSize,T)T,T,T GatherElementsGrad@1(T,I,Tind)T GatherGrad@1(I,Tind,T)T Gelu@1(T)T
    GeluGrad@1(T,T)T InPlaceAccumulatorV2@1(T,T_GRAD,T_BOOL)T_BOOL,T InplaceClipGradNorm@1(S_GRAD)S_GRAD
    LSTMGrad@1(T,T,T,TSize,T,T,T,T,T,T,T,T)T,T,T,T,T,T,T LSTMTraining@1(T,T,T,T,TSize,T,T,T)T,T,T,T,T
    LayerNormalizationGrad@1(V,T,V,U,U)T,V,V LeakyReluGrad@1(T,T)T LogSoftmaxGrad_13@1(T,T)T QuickGelu@1(T)T
    ReduceAllL2@1(TIn*)TOut ReluGrad@1(T,T)T SGDOptimizerV2@1(T1,S_WEIGHT,S_GRAD,T_BOOL)T_BOOL,S_WEIGHT
    Scale@1(T,ScaleT)T SigmoidGrad@1(T,T)T SliceGrad@1(T,I,Tind,Tind,Tind,Tind)T
    SoftmaxCrossEntropyLossGrad@1(T,T,Tind,T)T SoftmaxGrad_13@1(T,T)T TanhGrad@1(T,T)T
""",
}
