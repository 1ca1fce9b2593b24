class ArtifactError(ValueError):
    """The training, eval or optimizer model and the checkpoint are malformed or do not fit together; the
    message names the model, input or parameter."""


class LearningRateError(ValueError):
    """A learning rate that is not a finite number >= 0 that fits in float32."""


def reworded(e: Exception, message: str) -> Exception:
    """An exception of ``e``'s type with ``message``; where that type's constructor takes more than a message
    (UnicodeDecodeError, say), of the nearest base type that takes one."""
    for cls in type(e).__mro__:
        try:
            return cls(message)
        except TypeError:
            continue
    raise AssertionError("BaseException takes a message")
