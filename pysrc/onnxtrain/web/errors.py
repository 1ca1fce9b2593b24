"""The error a failed request of the JavaScript library answers with: {name, code, message, details}.

``name`` is the exception's class name, ``code`` a stable string for its class (the nearest class of CODES along
its bases, so a subclass keeps its parent's code), ``message`` its own message on one line (never the traceback),
``details`` the formatted traceback.  The page's onnxtrain.mjs makes each code an Error class of its own
(OnnxtrainError and its subclasses, named like onnxtrain's Python classes).  ``answer`` is how the engine calls the
Registry: it never raises, and a failed call leaves its session as Registry.call leaves it (as it was).
"""
from __future__ import annotations

import traceback

#: class name -> code, for onnxtrain's own errors (those a page's request may meet, the text room's and every task
#: kind's among them); onnxtrain.mjs has one class of each (ERROR_CLASSES there), web/lib/README.md documents the
#: table, and tests/web/test_task_kinds.py holds those to it
OWN = {
    "DataError": "DATA", "NpzError": "NPZ", "CheckpointError": "CHECKPOINT", "ModelDecodeError": "MODEL_DECODE",
    "DataTypeError": "DATA_TYPE", "ComposeError": "COMPOSE", "ArtifactError": "ARTIFACT",
    "LearningRateError": "LEARNING_RATE", "RunError": "RUN", "FeedError": "FEED", "GraphError": "GRAPH",
    "UnsupportedOpError": "UNSUPPORTED_OP", "GradientNotRegisteredError": "GRADIENT_NOT_REGISTERED",
    "NominalStateError": "NOMINAL_STATE", "NonFiniteError": "NON_FINITE", "NonFiniteStepError": "NON_FINITE_STEP",
    "NonFiniteStateError": "NON_FINITE_STATE", "WebGPUError": "WEBGPU", "NoAdapterError": "NO_ADAPTER",
    "GPUMemoryError": "GPU_MEMORY", "TokenizerError": "TOKENIZER", "EncoderError": "ENCODER",
    "WeightsError": "WEIGHTS", "AdapterError": "ADAPTER",
}
#: the Python errors a request may raise: OnnxtrainErrors in the page that keep Python's name
PYTHON = {
    "TypeError": "TYPE", "ValueError": "VALUE", "KeyError": "KEY", "IndexError": "INDEX",
    "RuntimeError": "RUNTIME", "NotImplementedError": "NOT_IMPLEMENTED", "MemoryError": "MEMORY",
    "ZeroDivisionError": "ZERO_DIVISION", "OverflowError": "OVERFLOW", "ArithmeticError": "ARITHMETIC",
    "UnicodeError": "UNICODE", "LookupError": "LOOKUP", "AssertionError": "ASSERTION", "OSError": "OS",
    "AttributeError": "ATTRIBUTE",
}
#: class name -> code
CODES = {**OWN, **PYTHON}
#: any other exception
OTHER = "PYTHON"
#: the longest message, in characters; the whole one is in ``details``
MESSAGE_CHARS = 300


def code_of(cls) -> str:
    """The code of an exception class: its own, else its nearest base's in CODES."""
    for base in cls.__mro__:
        if base.__name__ in CODES:
            return CODES[base.__name__]
    return OTHER


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` on one line (its whitespace runs as single spaces), cut to ``limit`` characters with an ellipsis."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"


def info(exc: BaseException) -> dict:
    """{name, code, message, details} of an exception."""
    name = type(exc).__name__
    message = str(exc.args[0]) if isinstance(exc, KeyError) and len(exc.args) == 1 else str(exc)
    return {"name": name, "code": code_of(type(exc)), "message": one_line(message) or name,
            "details": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))}


def from_text(name: str, text: str) -> dict:
    """The same for an error known only by its class name and Pyodide's text (the traceback, then
    ``name: message``): one raised in Python outside ``answer``, such as converting a request's arguments."""
    text = str(text)
    at = f"\n{text}".rfind(f"\n{name}: ")
    message = text[at + len(name) + 2:] if at >= 0 else text.strip().splitlines()[-1] if text.strip() else name
    return {"name": name, "code": CODES.get(name, OTHER), "message": one_line(message) or name, "details": text}


def answer(registry, method: str, handle, args) -> tuple:
    """``registry.call(method, handle, args)`` as (True, its result) or (False, ``info`` of its exception)."""
    try:
        return True, registry.call(method, handle, args)
    except Exception as exc:  # noqa: BLE001 - every failure is answered, none stops the worker
        return False, info(exc)
