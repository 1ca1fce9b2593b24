"""The task kinds a page makes, declared once: for each, the onnxtrain flow that runs it (a module and its
factories), its JavaScript class's calls (names, arguments, what they resolve to, the flow's methods each calls in
the engine), how the engine shapes a result for JavaScript, and the error classes the flow raises.

task_sessions makes its allow-lists and factories from KINDS.  The JavaScript side is written by hand (each call
converts its arguments: images, texts, CSV bytes) and tests/web/test_task_kinds.py holds it to KINDS: the classes
of web/lib/src/tasks.mjs, those of web/lib/onnxtrain.d.ts, the tasks table of web/lib/README.md and the error codes
of web/errors.py and web/lib/src/errors.mjs.  docs/contributing.md ("Adding a task kind") says what to write.

An argument is written as onnxtrain.d.ts names it: ``"name"``, ``"name?"`` (optional) or ``"name{a, b}"`` (an
options object with the keys a and b, which tasks.mjs destructures; ``"name?{a, b}"`` when it is optional).
``result`` is the TypeScript type the call's promise resolves to; ``M`` is the kind's metrics type.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .train_loop import camel_keys

#: the bytes every export and snapshot resolves to
BYTES = "Uint8Array<ArrayBuffer>"


@dataclass(frozen=True)
class Call:
    """A method of a task's JavaScript class: ``python``, the flow's methods (or TaskSession's) it calls in the
    engine; ``overloads``, the .d.ts's other (args, result) signatures; ``deprecated``, the call that replaces it."""
    name: str
    python: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    result: str = "void"
    overloads: tuple[tuple[tuple[str, ...], str], ...] = ()
    deprecated: str | None = None

    @property
    def signatures(self) -> tuple[tuple[tuple[str, ...], str], ...]:
        return ((self.args, self.result), *self.overloads)


@dataclass(frozen=True)
class Factory:
    """A static method that makes a task: the engine's ``kind`` for it (create_task's), the factory in the flow's
    module (``Class`` or ``Class.method``), how many of the page's arguments it takes (executionProviders follows)."""
    name: str
    kind: str
    python: str
    count: int
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskKind:
    """One kind of task: ``kind`` (start()'s tasks name it), its JavaScript class ``js``, the onnxtrain module
    (relative to onnxtrain) that holds its factories, its metrics type, its factories and calls (beyond COMMON),
    ``statics`` (other static members of the class: helpers and constants, which call no engine), ``shapes``
    (a flow method -> (the TaskSession, its result) -> what JavaScript gets, where not the result itself) and
    ``errors``, the onnxtrain error classes its flow raises (each has a code in web/errors.py)."""
    kind: str
    js: str
    module: str
    metrics: str | None
    factories: tuple[Factory, ...]
    calls: tuple[Call, ...]
    errors: tuple[str, ...]
    statics: tuple[Call, ...] = ()
    shapes: dict = field(default_factory=dict, hash=False)

    def python_methods(self) -> set[str]:
        return {name for call in self.calls for name in call.python}


# ---- how results are shaped: keys in camelCase (the task's own names; the user's names inside stay) ---------------

def camel(_session, result):
    return camel_keys(result)


def camel_each(_session, result):
    return [camel_keys(item) for item in result]


def camel_with_provider(session, result):
    """camelCase, with the provider that runs the task."""
    return {**camel_keys(result), "executionProvider": session.provider}


def examples_only(_session, result):
    """A fine-tuning's losses being unknown when train() drove it, only what stays true."""
    return {"examples": result["examples"]}


# ---- what every task has (the base class Task of tasks.mjs): its run, the export, train() -------------------------

COMMON = (
    Call("train", ("train_begin", "train_continue", "train_end"), ("options?",), "TrainSummary<M>"),
    Call("checkpoint", ("checkpoint",), result=BYTES),
    Call("restore", ("restore",), ("checkpoint", "best?"), "number"),
    Call("artifactsZip", ("artifacts_zip",), result=BYTES),
    Call("exportModel", ("export_model",), result=BYTES),
    Call("signature", ("signature",), result="string"),
    Call("release"),
)

#: the options objects of the factories
PROVIDERS = "options?{executionProviders}"
LOAD = "options?{onLoad, executionProviders}"
TEXT_OPTIONS = "options?{encoder, tokenizer, onLoad, executionProviders}"
AUDIO_OPTIONS = "options?{backbone, onLoad, executionProviders}"


def _classes() -> tuple[Call, ...]:
    """The classes and samples of the flows that learn the user's own classes (personalize, text, audio)."""
    return (
        Call("addClass", ("add_class",), ("name",), "number"),
        Call("renameClass", ("rename_class",), ("index", "name")),
        Call("removeClass", ("remove_class",), ("index",)),
        Call("removeSample", ("remove_sample",), ("id",)),
        Call("classes", ("classes",), result="string[]"),
        Call("counts", ("counts",), result="number[]"),
        Call("samples", ("sample_list",), result="{ id: number; classIndex: number }[]"),
        Call("snapshot", ("snapshot",), result=BYTES),
    )


KINDS = (
    TaskKind(
        "tabular", "TabularTask", "tasks.tabular", "TabularMetrics",
        (Factory("create", "tabular", "TabularSession", 2, ("csv", "fileName?", PROVIDERS)),),
        (Call("describe", ("describe",), result="TableDescription"),
         Call("detectTask", ("detect_task",), ("label",), '"classification" | "regression"'),
         Call("setup", ("setup",), ("settings{label, task, hidden, validation, seed, optimizer}",), "TabularSetup"),
         Call("evaluate", ("evaluate",), result="TabularMetrics"),
         Call("predictValidation", ("predict_validation",), result="string[] | number[]"),
         Call("predictCsv", ("predict_csv",), ("csv", "page?{offset, limit}"), "CsvPredictions")),
        ("DataError",),
        shapes={"describe": camel, "setup": camel}),
    TaskKind(
        "images", "ImageTask", "tasks.images", "ClassificationMetrics",
        (Factory("create", "images", "ImageSession.from_rgba", 7,
                 ("images{pixels, count, size, labels, classes, validation, seed, optimizer, executionProviders}",)),),
        (Call("info", ("info",), result="ImageTaskInfo"),
         Call("evaluate", ("evaluate",), result="ClassificationMetrics"),
         Call("predict", ("size", "predict"), ("pixels",), "number[]")),
        ("DataError",),
        statics=(Call("decodeImages", (), ("files", "size", "options?{fit}"),
                      "{ pixels: Uint8Array<ArrayBuffer>; count: number; size: number; labels: number[]; "
                      "classes: string[]; skipped: string[] }"),),
        shapes={"info": camel}),
    TaskKind(
        "handwriting", "HandwritingTask", "tasks.handwriting", None,
        (Factory("create", "handwriting", "DigitsSession", 3, ("model", "replay?", PROVIDERS)),
         Factory("fromSnapshot", "handwriting_snapshot", "DigitsSession.restore", 2,
                 ("snapshot", "replay?", PROVIDERS))),
        (Call("classes", ("classes",), result="string[]"),
         Call("predict", ("predict",), ("pixels",), "number[]"),
         Call("addClass", ("add_class",), ("name",), "number"),
         Call("addExample", ("add_example",), ("pixels", "label"), "Record<string, number>"),
         Call("counts", ("counts",), result="Record<string, number>"),
         Call("snapshot", ("snapshot",), result=BYTES),
         Call("fineTune", ("start_fine_tune", "finish_fine_tune"),
              ("options?{headOnly, epochs, batchSize, learningRate, onProgress, signal}",),
              "TrainSummary & { examples: number }")),
        ("DataError",),
        shapes={"finish_fine_tune": examples_only}),
    TaskKind(
        "personalize", "PersonalizeTask", "web.personalize", "PersonalizeMetrics",
        (Factory("create", "personalize", "PersonalizeSession", 1, ("backbone", LOAD)),
         Factory("fromSnapshot", "personalize_snapshot", "PersonalizeSession.from_snapshot", 2,
                 ("backbone", "snapshot", LOAD))),
        (Call("info", ("info",), result="{ inputSize: number; features: number; blockShape: number[]; "
              "backboneBytes: number; backboneSha256: string; source: string; loadSeconds: number; "
              'executionProvider: "webgpu" | "wasm" | "cpu" }'),
         *_classes(),
         Call("addSamples", ("add_samples",), ("pixels", "size", "classIndex"), "number[]",
              overloads=((("image", "classIndex"), "number[]"),)),
         Call("setup", ("setup",), ("options?{fineTune, validation, seed, optimizer}",),
              "{ samples: number; train: number; validation: number; classes: string[]; trainPerClass: number[]; "
              "validationPerClass: number[]; fineTune: boolean; parameters: number }"),
         Call("evaluate", ("evaluate",), result="PersonalizeMetrics"),
         Call("predict", ("predict",), ("pixels", "size"), "Prediction", overloads=((("image",), "Prediction"),))),
        ("DataError", "ModelDecodeError"),
        shapes={"info": camel_with_provider, "setup": camel, "predict": camel_each}),
    TaskKind(
        "text", "TextTask", "tasks.text", "TextMetrics",
        (Factory("create", "text", "TextSession", 2, (TEXT_OPTIONS,)),
         Factory("fromSnapshot", "text_snapshot", "TextSession.from_snapshot", 3, ("snapshot", TEXT_OPTIONS))),
        (Call("info", ("info",), result="{ hidden: number; maxLength: number; encoderBytes: number; "
              'encoderSha256: string; loadSeconds: number; executionProvider: "webgpu" | "wasm" | "cpu" }'),
         *_classes(),
         Call("addTexts", ("add_texts",), ("texts", "classIndex"), "{ ids: number[]; truncated: number[] }"),
         Call("addCsv", ("add_csv",), ("csv", "columns{text, label}"),
              "{ added: number; classes: string[]; truncated: number }"),
         Call("texts", ("texts",), ("classIndex?",), "{ id: number; text: string; truncated: boolean }[]"),
         Call("setup", ("setup",), ("options?{mode, rank, validation, seed, optimizer}",),
              "{ samples: number; train: number; validation: number; classes: string[]; trainPerClass: number[]; "
              'validationPerClass: number[]; mode: "head" | "lora"; rank: number | null; parameters: number }'),
         Call("evaluate", ("evaluate",), result="TextMetrics"),
         Call("predict", ("predict",), ("texts",), "TextPrediction[]",
              overloads=((("text",), "TextPrediction"),)),
         Call("exportZip", ("export_zip",), result=BYTES),
         Call("exportOnnx", ("export_model",), result=BYTES, deprecated="exportModel")),
        ("DataError", "ModelDecodeError", "TokenizerError", "EncoderError", "WeightsError", "AdapterError"),
        statics=(Call("ENCODER", result="string"), Call("TOKENIZER", result="string")),
        shapes={"info": camel_with_provider, "setup": camel, "predict": camel_each}),
    TaskKind(
        "audio", "AudioTask", "web.audio", "AudioMetrics",
        (Factory("create", "audio", "AudioSession", 1, (AUDIO_OPTIONS,)),
         Factory("fromSnapshot", "audio_snapshot", "AudioSession.from_snapshot", 2, ("snapshot", AUDIO_OPTIONS))),
        (Call("info", ("info",), result="{ rate: number; windowSamples: number; hopSamples: number; embedding: number; "
              "backboneBytes: number; backboneSha256: string; loadSeconds: number; "
              'executionProvider: "webgpu" | "wasm" | "cpu" }'),
         *_classes(),
         Call("addClips", ("add_clips",), ("clips", "classIndex", "options?{rate, names}"), "AudioClipsAdded"),
         Call("setup", ("setup",), ("options?{fineTune, validation, seed, optimizer}",),
              "{ samples: number; train: number; validation: number; classes: string[]; trainPerClass: number[]; "
              "validationPerClass: number[]; trainWindows: number; fineTune: boolean; parameters: number }"),
         Call("evaluate", ("evaluate",), result="AudioMetrics"),
         Call("predict", ("predict",), ("clips", "options?{rate}"), "AudioPrediction[]",
              overloads=((("clip", "options?{rate}"), "AudioPrediction"),))),
        ("DataError", "ModelDecodeError"),
        statics=(Call("BACKBONE", result="string"), Call("BACKGROUND", result="string"),
                 Call("RATE", result="number")),
        shapes={"info": camel_with_provider, "setup": camel, "add_clips": camel, "predict": camel_each}),
)

BY_KIND = {kind.kind: kind for kind in KINDS}
