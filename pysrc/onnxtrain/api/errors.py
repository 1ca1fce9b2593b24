class ArtifactError(ValueError):
    """The training, eval or optimizer model and the checkpoint are malformed or do not fit together; the
    message names the model, input or parameter."""


class LearningRateError(ValueError):
    """A learning rate that is not a finite number >= 0 that fits in float32."""
