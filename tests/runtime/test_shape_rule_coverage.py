"""Every op the gradient builder differentiates or passes over has a shape rule, so that a training graph's
shapes are inferred by rules, never by running ops on made-up sizes."""
from onnxtrain.autodiff import GRADIENT_RULES, NO_GRADIENT
from onnxtrain.runtime.shape_rules import SHAPE_RULES


def test_every_op_with_a_gradient_rule_has_a_shape_rule():
    missing = sorted(op for op in set(GRADIENT_RULES) | set(NO_GRADIENT) if ("", op) not in SHAPE_RULES)
    assert not missing, f"ops of autodiff with no shape rule: {missing}"


def test_the_ops_of_ort_training_artifacts_have_shape_rules():
    ms = {"InPlaceAccumulatorV2", "AdamWOptimizer", "SGDOptimizerV2", "SoftmaxCrossEntropyLossInternal",
          "SoftmaxCrossEntropyLossGrad", "SoftmaxCrossEntropyLossInternalGrad", "ReluGrad", "SigmoidGrad",
          "GatherGrad", "ConvGrad", "BatchNormalizationGrad", "LayerNormalizationGrad", "FusedMatMul"}
    missing = sorted(op for op in ms if ("com.microsoft", op) not in SHAPE_RULES)
    assert not missing, f"com.microsoft ops with no shape rule: {missing}"
