class ArtifactError(ValueError):
    """The training, eval or optimizer model and the checkpoint are malformed or do not fit together; the
    message names the model, input or parameter."""


class LearningRateError(ValueError):
    """A learning rate that is not a finite number >= 0 that fits in float32."""


class NominalStateError(RuntimeError):
    """A call that needs the parameters' values on a nominal checkpoint state (names and shapes only).  A
    RuntimeError, as onnxruntime-training raises; its message starts with ORT's sentence (``NOMINAL``)."""


class ParameterBufferError(ValueError, RuntimeError):
    """A buffer for copy_buffer_to_parameters of the wrong size or element type: a ValueError (bad input), and a
    RuntimeError, as onnxruntime-training raises; its message starts with ORT's sentence."""


#: onnxruntime-training 1.19.2's sentences for each call it refuses on a nominal state (read from its messages),
#: which callers match; onnxtrain's messages start with them.
NOMINAL = {
    "parameter": "Cannot get parameter from a nominal state. Please load the parameter states first",
    "set_parameter": "Cannot copy parameter to a nominal state. Please load all the parameter states first",
    "contiguous": "Cannot copy parameters from a nominal checkpoint state. Please load the model parameters first.",
    "TrainStep": "Cannot perform TrainStep with a nominal state. Please load the model parameters first.",
    "EvalStep": "Cannot perform EvalStep with a nominal state. Please load the model parameters first.",
    "export": "Cannot export the model with a nominal state. Please load the model parameters first.",
    "optimizer": "The optimizer state cannot be constructed. Please load the model parameters first.",
    "trainable_only": "For nominal checkpoint state, all parameters need to be loaded into the model "
                      "(trainable_only = false).",
}

#: how to leave a nominal state, after ORT's sentence
LOAD_HINT = ("the checkpoint holds the parameters' names and shapes only: load their values with "
             "Module.copy_buffer_to_parameters(buffer, trainable_only=False)")


def nominal_state_error(call: str, detail: str = "") -> NominalStateError:
    """The NominalStateError for ``call`` (a key of NOMINAL): ORT's sentence, then ``detail`` and how to load."""
    return NominalStateError(f"{NOMINAL[call]} ({detail + '; ' if detail else ''}{LOAD_HINT})")


def reworded(e: Exception, message: str) -> Exception:
    """An exception of ``e``'s type with ``message``; where that type's constructor takes more than a message
    (UnicodeDecodeError, say), of the nearest base type that takes one."""
    for cls in type(e).__mro__:
        try:
            return cls(message)
        except TypeError:
            continue
    raise AssertionError("BaseException takes a message")
