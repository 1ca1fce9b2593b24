"""onnxtrain: ONNX on-device training in pure Python (numpy), compatible with onnxruntime-training 1.19.2."""
__version__ = "0.1.0"
