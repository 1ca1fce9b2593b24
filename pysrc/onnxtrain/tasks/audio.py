"""Teach your own sounds: classes of short audio clips (16 kHz float PCM, or WAV files) on a pretrained speech
backbone (Google's speech_embedding as openWakeWord's embedding_model.onnx), with a background-noise class as
Teachable Machine has.

Each clip is turned into log-mel features once (tasks.audio_frontend, in numpy), cut into the backbone's 76-frame
windows (775 ms) every 8 frames (80 ms: the backbone's own stride in openWakeWord, so that a word lands in
several windows at several offsets, which is the shift augmentation that few examples need), and each window is
embedded once (96 values) and cached.  A clip's windows much quieter than its loudest (below LOUDNESS_DB of it)
are not trained on, except in the background class, so that a word class does not learn its clips' silences.  A
run trains the text task's head (tasks.text_head: the embedding L2-normalized, then a Gemm started from a linear
probe) on the windows, or with ``fine_tune`` also the backbone's last convolution (on the cached values of its
input, ``block``); validation holds out whole clips.  A clip's prediction is the mean of its windows'
scores.  The export is one ONNX model from ``pcm`` float32 [batch, samples] (16 kHz, -1..1, at least 12,512
samples) to ``probabilities`` and ``label``, the front end inside."""
from __future__ import annotations

import hashlib

import numpy as np

from .. import ir
from ..api.module import session_on
from ..ir.builder import GraphBuilder
from ..ir.compose import compose, cut
from ..ir.dtypes import DataType
from ..ir.model import Graph, Model, Node, TensorType, ValueInfo
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
OPSET = 17


class SpeechBackbone:
    """embedding_model.onnx checked: ``input_1`` float32 [N, 76, 32, 1] -> ``conv2d_19`` [N, 1, 1, E];
    ``model`` (its unused ai.onnx.ml import dropped), ``size`` (E), ``embed(windows)``; its last layer, a Conv
    then the Reshape to the output, as ``tail`` (``block`` [N, C, h, w] -> ``embedding`` [N, E]) with the
    convolution's initializers ``conv``, for fine-tuning on cached ``block`` values."""

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
        producers = {o: n for n in g.nodes for o in n.outputs}
        reshape = producers.get(OUTPUT)
        conv = producers.get(reshape.inputs[0]) if reshape is not None and reshape.op_type == "Reshape" else None
        if conv is None or conv.op_type != "Conv":
            raise DataError(f"{what}'s output {OUTPUT!r} must come from a Conv then a Reshape, as in openWakeWord's "
                            f"embedding_model.onnx")
        self.block = conv.inputs[0]
        self.session = session_on(cut(model, {OUTPUT: OUTPUT, "block": self.block}), device)
        probe, block = self.session.run([np.zeros((1, WINDOW_FRAMES, N_MELS, 1), np.float32)])
        if probe.ndim != 4 or probe.shape[:3] != (1, 1, 1) or block.ndim != 4:
            raise DataError(f"{what} gives {list(probe.shape)} for one window; it must be [N, 1, 1, E]")
        self.size, self.block_shape = int(probe.shape[3]), list(block.shape[1:])
        self.conv = [x for x in conv.inputs[1:] if x]
        self.tail = self._tail(conv)

    def _tail(self, conv: Node) -> Model:
        inits = self.model.graph.initializer_map()
        b = GraphBuilder(Graph(name="tail", initializers=[inits[x] for x in self.conv],
                               inputs=[ValueInfo("block", TensorType(DataType.FLOAT, ["windows", *self.block_shape]))],
                               outputs=[ValueInfo("embedding", TensorType(DataType.FLOAT, ["windows", self.size]))]))
        b.graph.nodes.append(Node("Conv", ["block", *conv.inputs[1:]], ["tail_conv"], name="tail.conv",
                                  attributes=dict(conv.attributes)))
        b.scope = "tail"
        b.op("Reshape", ["tail_conv", b.ints([-1, self.size], "embedding_shape")], outputs=["embedding"])
        return Model(graph=b.graph, ir_version=self.model.ir_version, opset_imports={"": OPSET},
                     producer_name="onnxtrain")

    def embed(self, batch: np.ndarray) -> tuple:
        """(embeddings [n, E], block [n, C, h, w]) float32 of windows [n, 76, 32]."""
        parts = [self.session.run([batch[i:i + BATCH, ..., None].astype(np.float32)])
                 for i in range(0, len(batch), BATCH)]
        if not parts:
            return np.zeros((0, self.size), np.float32), np.zeros((0, *self.block_shape), np.float32)
        return (np.concatenate([p[0] for p in parts]).reshape(len(batch), self.size),
                np.concatenate([p[1] for p in parts]).astype(np.float32, copy=False))


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

    def _embedded(self, pcm: np.ndarray) -> tuple:
        """(embeddings [w, E], block [w, C, h, w']) of a clip's windows."""
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
            embeddings, block = self._embedded(pcm)
            keep = np.ones(len(embeddings), bool) if self._is_background(i) else loud_windows(pcm, len(embeddings))
            cached.append((embeddings, keep, block))
        ids = self._add(cached, [i] * len(cached))
        return {"ids": ids, "windows": [len(c[0]) for c in cached], "notices": notices}

    # ---- the run ----------------------------------------------------------------------------------------

    def setup(self, fine_tune=False, validation=0.0, seed=0, optimizer="AdamW") -> dict:
        """A new run on the clips there are now: the head on their windows' embeddings, or with ``fine_tune``
        also the backbone's last convolution (started from its pretrained weights, trained on the cached
        ``block`` values); ``validation`` (0, or above 0 and below 1) of each class's clips held out.  What the
        run trains on."""
        return self._setup(validation, seed, {"fine_tune": bool(fine_tune), "optimizer": str(optimizer)})

    def _rows(self, ids: list, labels, fine_tune: bool, trained: bool = True) -> tuple:
        """(the run's input [n, ...]: embeddings, or block with ``fine_tune``; labels [n]) of the clips' windows
        (only the trained ones with ``trained``)."""
        k = 2 if fine_tune else 0
        parts = [(self.store[s][k][self.store[s][1]] if trained else self.store[s][k]) for s in ids]
        y = np.concatenate([np.full(len(p), label, np.int64) for p, label in zip(parts, labels)])
        return np.concatenate(parts).astype(np.float32), y

    def _new_run(self, settings: dict, checkpoint: bytes = None) -> dict:
        share, seed, ids = settings["validation"], settings["seed"], settings["ids"]
        fine_tune = settings.get("fine_tune", False)
        y = np.array(settings["labels"], np.int64)
        train, val = stratified_split(y, share, seed) if share else (list(range(len(y))), [])
        embedded, y_train = self._rows([ids[k] for k in train], y[train], False)
        head = head_model(len(self.names), self.backbone.size, linear_probe(embedded, y_train, len(self.names)))
        trainable = ["head.weight", "head.bias"]
        if fine_tune:
            head, trainable = compose(self.backbone.tail, head, {"embedding": "embedding"}), trainable + \
                self.backbone.conv
        arts = make_artifacts(head, "CrossEntropyLoss", settings["optimizer"], trainable=trainable, frozen=[],
                              extra_outputs=["output"])
        x_train = self._rows([ids[k] for k in train], y[train], fine_tune)[0] if fine_tune else embedded
        validation_data = list(self._rows([ids[k] for k in val], y[val], fine_tune)) if val else None
        training = self.make_run(arts, [x_train, y_train], validation_data, seed)
        if checkpoint is not None:
            training.restore(checkpoint)
        self.training, self.validation, self.settings, self._model_cache = training, validation_data, settings, None
        self.split = (train, val)
        per_class = lambda r: np.bincount(y[r].astype(np.intp), minlength=len(self.names)).tolist()  # noqa: E731
        return {"samples": len(y), "train": len(train), "validation": len(val), "classes": list(self.names),
                "train_per_class": per_class(train), "validation_per_class": per_class(val),
                "train_windows": len(y_train), "fine_tune": fine_tune,
                "parameters": training.module.get_parameters_size(True)}

    def _clip_scores(self, ids: list) -> np.ndarray:
        """[clips, K]: the mean of each clip's windows' scores (all its windows), by the run's eval model."""
        module = self._run().module
        x, _ = self._rows(ids, [0] * len(ids), self.settings.get("fine_tune", False), trained=False)
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
            embeddings, block = self._embedded(pcm)
            scores = model.run([block if self.settings.get("fine_tune") else embeddings])[0].mean(axis=0)
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
        if self.settings.get("fine_tune"):    # the inference model starts at block, with the trained tail
            joint = "block"
            front = cut(self.backbone.model, {"block": self.backbone.block})
        else:
            joint = "embedding"
            front = cut(self.backbone.model, {OUTPUT: OUTPUT})
            b = GraphBuilder(front.graph)
            b.scope = "pool"
            b.op("Reshape", [OUTPUT, b.ints([-1, self.backbone.size], "embedding_shape")], outputs=["embedding"])
            front.graph.outputs = [ValueInfo("embedding", TensorType(DataType.FLOAT, ["windows", self.backbone.size]))]
        model = compose(frontend_model("windows"), front, {INPUT: "windows"}, prefix="backbone.",
                        outputs=[joint, "clips"])
        model = compose(model, inner, {joint: joint}, prefix="head.", outputs=["window_scores", "clips"])
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
        return self._run().checkpoint({**(properties or {}), "onnxtrain.audio": {
            "classes": self.names, "fine_tune": self.settings.get("fine_tune", False)}})

    def snapshot(self) -> bytes:
        """The classes, the clips (ids, classes, their windows' cached embeddings) and the run as .npz bytes, for
        ``from_snapshot`` with the same backbone."""
        ids = sorted(self.store)
        counts = [len(self.store[s][0]) for s in ids]
        rows = [self.store[s] for s in ids]
        joined = lambda k, empty: np.concatenate([r[k] for r in rows]) if ids else empty  # noqa: E731
        return self._snapshot(ids, {"backbone": self.backbone.sha256, "windows": counts},
                              {"embeddings": joined(0, np.zeros((0, self.backbone.size))).astype(np.float32),
                               "trained": joined(1, np.zeros(0, bool)).astype(bool),
                               "block": joined(2, np.zeros((0, *self.backbone.block_shape))).astype(np.float32)})

    @classmethod
    def from_snapshot(cls, backbone: bytes, snapshot: bytes, run=None, device: str = "cpu") -> "AudioSession":
        session = cls(backbone, run, device, background=False)
        meta, arrays, ids = session._read_snapshot(snapshot, "audio classifier",
                                                   ("backbone", session.backbone.sha256, "backbone model"))
        counts, embeddings, keep = meta.get("windows"), arrays.get("embeddings"), arrays.get("trained")
        block = arrays.get("block")
        n = sum(counts) if isinstance(counts, list) else -1
        readable = (isinstance(counts, list) and len(counts) == len(ids) and embeddings is not None
                    and keep is not None and block is not None and embeddings.shape == (n, session.backbone.size)
                    and keep.shape == (n,) and list(block.shape) == [n, *session.backbone.block_shape])
        if not readable:
            raise DataError(f"the saved audio classifier cannot be read (embeddings "
                            f"{None if embeddings is None else list(embeddings.shape)} for {len(ids)} stored clips)")
        bounds = np.cumsum([0] + counts)
        session._take_snapshot(meta, {s: (embeddings[a:b], keep[a:b], block[a:b]) for s, a, b in
                                      zip(ids, bounds[:-1], bounds[1:])})
        return session


__all__ = ["AudioSession", "BACKGROUND", "SpeechBackbone"]
