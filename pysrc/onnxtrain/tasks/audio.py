"""Teach your own sounds: classes of short audio clips (16 kHz float PCM, or WAV files) on a pretrained speech
backbone (Google's speech_embedding as openWakeWord's embedding_model.onnx), with a background-noise class as
Teachable Machine has.

Each clip is turned into log-mel features once (tasks.audio_frontend, in numpy), cut into the backbone's 76-frame
windows (775 ms) every 8 frames (80 ms: the backbone's own stride in openWakeWord, so that a word lands in
several windows at several offsets, which is the shift augmentation that few examples need), and each window is
embedded once (96 values) and cached.  A clip's windows much quieter than its loudest (below LOUDNESS_DB of it)
are not trained on, except in the background class, so that a word class does not learn its clips' silences.  A
run trains the text task's head (tasks.text_head: the embedding L2-normalized, then a Gemm started from a linear
probe) on the windows; validation holds out whole clips.  A clip's prediction is the mean of its windows'
scores.  The export is one ONNX model from ``pcm`` float32 [batch, samples] (16 kHz, -1..1, at least 12,512
samples) to ``probabilities`` and ``label``, the front end inside."""
from __future__ import annotations

import hashlib

import numpy as np

from .. import ir
from ..api.module import session_on
from ..ir.builder import GraphBuilder
from ..ir.compose import compose
from ..ir.dtypes import DataType
from ..ir.model import Model, TensorType, ValueInfo
from ..train.data import DataError
from .audio_frontend import (HOP, HOP_FRAMES, N_MELS, RATE, WINDOW_FRAMES, WINDOW_SAMPLES, features,
                             frontend_model, windows)
from .audio_input import clip_pcm, wav_pcm
from .checks import show
from .head import classes_doc, with_head
from .labelled import LabelledSamples
from .split import stratified_split
from .text_head import head_model, linear_probe
from .training import classification_metrics, inference_model, make_artifacts, probabilities, run_factory

BACKGROUND = "Background Noise"
BATCH = 64                 # windows per forward pass of the backbone
LOUDNESS_DB = 20.0         # windows quieter than the clip's loudest by more than this are not trained on
INPUT, OUTPUT = "input_1", "conv2d_19"   # embedding_model.onnx's names


class SpeechBackbone:
    """embedding_model.onnx checked: ``input_1`` float32 [N, 76, 32, 1] -> ``conv2d_19`` [N, 1, 1, E];
    ``model`` (its unused ai.onnx.ml import dropped), ``size`` (E), ``embed(windows)``."""

    def __init__(self, data: bytes, device: str = "cpu", what: str = "the audio backbone"):
        data = bytes(data)
        try:
            model = ir.load(data)
        except ir.ModelDecodeError as e:
            raise DataError(f"{what} is not an ONNX model ({e})") from None
        g = model.graph
        inputs = [v.name for v in g.inputs if v.name not in g.initializer_map()]
        outputs = [v.name for v in g.outputs]
        if inputs != [INPUT] or outputs != [OUTPUT]:
            raise DataError(f"{what} must have the input {INPUT!r} and the output {OUTPUT!r} (openWakeWord's "
                            f"embedding_model.onnx); it has inputs {inputs} and outputs {outputs}")
        used = {n.domain for n in g.nodes} - {"", "ai.onnx"}
        if used:
            raise DataError(f"{what} has nodes of the domain {sorted(used)[0]!r}; only the default ONNX domain "
                            f"is allowed")
        model.opset_imports = {d: v for d, v in model.opset_imports.items() if d in ("", "ai.onnx")}
        self.model, self.bytes, self.sha256 = model, len(data), hashlib.sha256(data).hexdigest()
        self.session = session_on(model, device)
        probe = self.session.run([np.zeros((1, WINDOW_FRAMES, N_MELS, 1), np.float32)])[0]
        if probe.ndim != 4 or probe.shape[:3] != (1, 1, 1):
            raise DataError(f"{what} gives {list(probe.shape)} for one window; it must be [N, 1, 1, E]")
        self.size = int(probe.shape[3])

    def embed(self, batch: np.ndarray) -> np.ndarray:
        """[n, E] float32 of windows [n, 76, 32]."""
        parts = [self.session.run([batch[i:i + BATCH, ..., None].astype(np.float32)])[0]
                 for i in range(0, len(batch), BATCH)]
        return np.concatenate(parts).reshape(len(batch), self.size) if parts else np.zeros((0, self.size),
                                                                                         np.float32)


def loud_windows(pcm: np.ndarray, count: int) -> np.ndarray:
    """bool [count]: the windows whose mean power is within LOUDNESS_DB of the clip's loudest window."""
    step = HOP * HOP_FRAMES
    power = np.array([np.mean(np.square(pcm[k * step:k * step + WINDOW_SAMPLES], dtype=np.float64))
                      for k in range(count)])
    return power >= power.max() * 10 ** (-LOUDNESS_DB / 10)


class AudioSession(LabelledSamples):
    """Classes of clips on the backbone (embedding_model.onnx bytes); class 0 is BACKGROUND unless
    ``background`` is False.  A clip's cached values are (its windows' embeddings [w, E], which of them are
    trained on [w] bool); ``run`` makes the training run (tasks.training); ``device`` runs the backbone, the
    training and the predictions."""

    noun = "clips"
    trained = "head"

    def __init__(self, backbone: bytes, run=None, device: str = "cpu", background: bool = True):
        super().__init__(run_factory(run, device), device)
        self.backbone = backbone if isinstance(backbone, SpeechBackbone) else SpeechBackbone(backbone, device)
        if background:
            self.add_class(BACKGROUND)

    def info(self) -> dict:
        b = self.backbone
        return {"rate": RATE, "window_samples": WINDOW_SAMPLES, "hop_samples": HOP * HOP_FRAMES,
                "embedding": b.size, "backbone_bytes": b.bytes, "backbone_sha256": b.sha256}

    def _is_background(self, i: int) -> bool:
        return self.names[i] == BACKGROUND

    def _embedded(self, pcm: np.ndarray) -> np.ndarray:
        return self.backbone.embed(windows(features(pcm)))

    # ---- clips ------------------------------------------------------------------------------------------

    def add_clips(self, clips, index, rate=RATE, names=None) -> dict:
        """Clips (float PCM arrays [samples] or [samples, channels] at ``rate`` Hz; one array is one clip, a list
        holds several) of class
        ``index``, embedded now: {"ids", "windows" (each clip's), "notices" (clipped, resampled, mixed down)}.
        ``names`` name the clips in messages (default "clip k of class ...").  Nothing is added when one is
        bad."""
        i = self._index(index)
        clips = [clips] if isinstance(clips, np.ndarray) else list(clips)
        if not clips:
            raise DataError(f"no clips were given for class {show(self.names[i])}")
        names = names or [f"clip {k + 1} of class {show(self.names[i])}" for k in range(len(clips))]
        checked = [clip_pcm(c, rate, n, allow_silence=self._is_background(i)) for c, n in zip(clips, names)]
        return self._add_pcm([pcm for pcm, _ in checked], [n for _, ns in checked for n in ns], i)

    def add_wav(self, files, index, names=None) -> dict:
        """WAV files' bytes (one, or a list; integer PCM, any rate and channels) of class ``index``, as
        ``add_clips``; ``names`` (e.g. the file names) name them in messages."""
        i = self._index(index)
        files = [files] if isinstance(files, (bytes, bytearray, memoryview)) else list(files)
        if not files:
            raise DataError(f"no WAV files were given for class {show(self.names[i])}")
        names = names or [f"WAV file {k + 1} of class {show(self.names[i])}" for k in range(len(files))]
        checked = [wav_pcm(f, n, allow_silence=self._is_background(i)) for f, n in zip(files, names)]
        return self._add_pcm([pcm for pcm, _ in checked], [n for _, ns in checked for n in ns], i)

    def _add_pcm(self, clips: list, notices: list, i: int) -> dict:
        cached = []
        for pcm in clips:
            embeddings = self._embedded(pcm)
            keep = np.ones(len(embeddings), bool) if self._is_background(i) else loud_windows(pcm, len(embeddings))
            cached.append((embeddings, keep))
        ids = self._add(cached, [i] * len(cached))
        return {"ids": ids, "windows": [len(e) for e, _ in cached], "notices": notices}

    # ---- the run ----------------------------------------------------------------------------------------

    def setup(self, validation=0.0, seed=0, optimizer="AdamW") -> dict:
        """A new run on the clips there are now: the head on their windows' embeddings; ``validation`` (0, or
        above 0 and below 1) of each class's clips held out.  What the run trains on."""
        return self._setup(validation, seed, {"optimizer": str(optimizer)})

    def _rows(self, ids: list, labels, trained: bool = True) -> tuple:
        """(embeddings [n, E], labels [n]) of the clips' windows (only the trained ones with ``trained``)."""
        parts = [(self.store[s][0][self.store[s][1]] if trained else self.store[s][0]) for s in ids]
        y = np.concatenate([np.full(len(p), label, np.int64) for p, label in zip(parts, labels)])
        return np.concatenate(parts).astype(np.float32), y

    def _new_run(self, settings: dict, checkpoint: bytes = None) -> dict:
        share, seed, ids = settings["validation"], settings["seed"], settings["ids"]
        y = np.array(settings["labels"], np.int64)
        train, val = stratified_split(y, share, seed) if share else (list(range(len(y))), [])
        x_train, y_train = self._rows([ids[k] for k in train], y[train])
        head = head_model(len(self.names), self.backbone.size, linear_probe(x_train, y_train, len(self.names)))
        arts = make_artifacts(head, "CrossEntropyLoss", settings["optimizer"], trainable=["head.weight", "head.bias"],
                              frozen=[], extra_outputs=["output"])
        validation_data = list(self._rows([ids[k] for k in val], y[val])) if val else None
        training = self.make_run(arts, [x_train, y_train], validation_data, seed)
        if checkpoint is not None:
            training.restore(checkpoint)
        self.training, self.validation, self.settings, self._model_cache = training, validation_data, settings, None
        self.split = (train, val)
        per_class = lambda r: np.bincount(y[r].astype(np.intp), minlength=len(self.names)).tolist()  # noqa: E731
        return {"samples": len(y), "train": len(train), "validation": len(val), "classes": list(self.names),
                "train_per_class": per_class(train), "validation_per_class": per_class(val),
                "train_windows": len(y_train), "parameters": training.module.get_parameters_size(True)}

    def _clip_scores(self, ids: list) -> np.ndarray:
        """[clips, K]: the mean of each clip's windows' scores (all its windows), by the run's eval model."""
        module = self._run().module
        x, _ = self._rows(ids, [0] * len(ids), trained=False)
        module.eval()
        try:
            scores = np.concatenate([module(x[i:i + BATCH], np.zeros(len(x[i:i + BATCH]), np.int64))[1]
                                     for i in range(0, len(x), BATCH)])
        finally:
            module.train()
        bounds = np.cumsum([0] + [len(self.store[s][0]) for s in ids])
        return np.stack([scores[a:b].mean(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])

    def metrics(self) -> dict:
        """Accuracy, baseline, confusion matrix and each class's clip count on the validation clips (the training
        clips without validation; "on" says which), a clip scored by the mean of its windows' scores."""
        train, val = self.split
        rows, on = (val, "validation") if val else (train, "train")
        ids = [self.settings["ids"][k] for k in rows]
        y = np.array([self.settings["labels"][k] for k in rows], np.int64)
        return {"on": on, "counts": np.bincount(y.astype(np.intp), minlength=len(self.names)).tolist(),
                **classification_metrics(self._clip_scores(ids), y, len(self.names))}

    def evaluate(self) -> dict:
        """``metrics()`` and the validation loss over the held-out clips' windows (None without validation)."""
        loss = self._run().validation_loss(chunk=BATCH) if self.validation is not None else None
        return {"loss": loss, **self.metrics()}

    def predict(self, clips, rate=RATE) -> list:
        """For each clip (as ``add_clips`` takes them): {probabilities, label, class_name, notices}, the mean of
        its windows' scores."""
        model = self._model()
        clips = [clips] if isinstance(clips, np.ndarray) else list(clips)
        out = []
        for k, clip in enumerate(clips):
            pcm, notices = clip_pcm(clip, rate, f"clip {k + 1} to predict", allow_silence=True)
            scores = model.run([self._embedded(pcm)])[0].mean(axis=0)
            label = int(scores.argmax())
            out.append({"probabilities": probabilities(scores), "label": label, "class_name": self.names[label],
                        "notices": notices})
        return out

    # ---- export, checkpoints, snapshots -------------------------------------------------------------------

    def exported(self) -> Model:
        """One model: ``pcm`` float32 [batch, samples] -> the log-mel front end -> its windows -> the backbone ->
        the head -> the mean of the windows' scores ``output``, ``probabilities``, ``label``; the class names in
        metadata ``onnxtrain.classes``."""
        k = len(self.names)
        inner = inference_model(self._run().module)
        for node in inner.graph.nodes:
            node.outputs = ["window_scores" if o == "output" else o for o in node.outputs]
        inner.graph.outputs = [ValueInfo("window_scores", TensorType(DataType.FLOAT, ["windows", k]))]
        model = compose(frontend_model("windows"), self.backbone.model, {INPUT: "windows"}, prefix="backbone.",
                        outputs=[OUTPUT, "clips"])
        b = GraphBuilder(model.graph)
        b.scope = "pool"
        b.op("Reshape", [OUTPUT, b.ints([-1, self.backbone.size], "embedding_shape")], outputs=["embedding"])
        model.graph.outputs = [ValueInfo("embedding", TensorType(DataType.FLOAT, ["windows", self.backbone.size])),
                               model.graph.outputs[1]]
        model = compose(model, inner, {"embedding": "embedding"}, prefix="head.",
                        outputs=["window_scores", "clips"])
        b = GraphBuilder(model.graph)
        b.scope = "pool"
        shape = b.op("Concat", ["clips", b.ints([-1, k], "scores_shape")], axis=0)
        per_clip = b.op("Reshape", ["window_scores", shape])
        b.op("ReduceMean", [per_clip], axes=[1], keepdims=0, outputs=["output"])
        model.graph.outputs = [ValueInfo("output", TensorType(DataType.FLOAT, ["batch", k]))]
        doc = (f"Input 'pcm': float32 [batch, samples], mono audio at {RATE} Hz in -1..1, at least "
               f"{WINDOW_SAMPLES} samples ({WINDOW_SAMPLES / RATE:.3f} s); each clip is scored by the mean over its "
               f"{WINDOW_FRAMES}-frame windows every {HOP * HOP_FRAMES} samples. {classes_doc(self.names)}")
        out = with_head(model, list(model.graph.inputs), [], [], doc, self.names, min_opset=17)
        out.metadata_props["onnxtrain.audio"] = (f'{{"rate": {RATE}, "window_samples": {WINDOW_SAMPLES}, '
                                                 f'"hop_samples": {HOP * HOP_FRAMES}}}')
        return out

    def export_model(self) -> bytes:
        return ir.to_bytes(self.exported())

    def checkpoint(self, properties: dict = None) -> bytes:
        return self._run().checkpoint({**(properties or {}), "onnxtrain.audio": {"classes": self.names}})

    def snapshot(self) -> bytes:
        """The classes, the clips (ids, classes, their windows' cached embeddings) and the run as .npz bytes, for
        ``from_snapshot`` with the same backbone."""
        ids = sorted(self.store)
        counts = [len(self.store[s][0]) for s in ids]
        rows = [self.store[s] for s in ids]
        embeddings = np.concatenate([e for e, _ in rows]) if ids else np.zeros((0, self.backbone.size))
        keep = np.concatenate([m for _, m in rows]) if ids else np.zeros(0, bool)
        return self._snapshot(ids, {"backbone": self.backbone.sha256, "windows": counts},
                              {"embeddings": embeddings.astype(np.float32), "trained": keep.astype(bool)})

    @classmethod
    def from_snapshot(cls, backbone: bytes, snapshot: bytes, run=None, device: str = "cpu") -> "AudioSession":
        session = cls(backbone, run, device, background=False)
        meta, arrays, ids = session._read_snapshot(snapshot, "audio classifier",
                                                   ("backbone", session.backbone.sha256, "backbone model"))
        counts, embeddings, keep = meta.get("windows"), arrays.get("embeddings"), arrays.get("trained")
        readable = (isinstance(counts, list) and len(counts) == len(ids) and embeddings is not None
                    and keep is not None and embeddings.shape == (sum(counts), session.backbone.size)
                    and keep.shape == (sum(counts),))
        if not readable:
            raise DataError(f"the saved audio classifier cannot be read (embeddings "
                            f"{None if embeddings is None else list(embeddings.shape)} for {len(ids)} stored clips)")
        bounds = np.cumsum([0] + counts)
        session._take_snapshot(meta, {s: (embeddings[a:b], keep[a:b]) for s, a, b in
                                      zip(ids, bounds[:-1], bounds[1:])})
        return session


__all__ = ["AudioSession", "BACKGROUND", "SpeechBackbone"]
