"""Text classification on a pretrained sentence encoder (text.encoder's graph, as the site's MiniLM ships): the
user's classes and texts, each tokenized once (text.tokenizer) and embedded once when added; a run in one of two
modes, whose head starts from a linear probe fitted on the cached embeddings (tasks.text_head):

- ``head``: the embedding L2-normalized (as sentence-transformers' Normalize) and a Gemm, trained on the cached
  embeddings;
- ``lora``: the encoder with rank-r adapters on its attention projections (text.lora) and the same head, trained
  end to end on the token ids with the base weights frozen.

The export is one ONNX model from ``input_ids`` and ``attention_mask`` to ``probabilities`` and ``label``, the
adapters merged, the weights that float16 holds exactly stored as float16."""
from __future__ import annotations

import hashlib
import io
import json
import zipfile

import numpy as np

from .. import ir
from ..api.module import session_on
from ..ir.compose import compose, cut
from ..ir.model import Model
from ..ir.rewrite import float16_where_exact
from ..text import lora
from ..text.encoder import EncoderError, load_encoder
from ..text.tokenizer import Tokenizer
from ..train.archive import FAST
from ..train.csv import parse_csv
from ..train.data import DataError
from .checks import class_name, show, whole
from .csv_table import column
from .head import classes_doc, with_head
from .labelled import MAX_CLASSES, LabelledSamples
from .split import stratified_split
from .training import classification_metrics, inference_model, make_artifacts, probabilities, run_factory
from .text_head import head_model, linear_probe

BATCH = 16          # texts per forward pass when embedding or predicting
MODES = ("head", "lora")
MAX_RANK = 64
README = """# {name}

A text classifier trained with onnxtrain: {classes_line}

Files: `model.onnx` (inputs `input_ids`, `attention_mask`: int64 [batch, tokens]; outputs `probabilities` float32
[batch, {k}], `label` int64 [batch]; the class names are in the metadata `onnxtrain.classes`) and
`tokenizer.json` (the encoder's WordPiece tokenizer, lowercased; at most {max_length} tokens with `[CLS]` and
`[SEP]`; pad with 0 and set `attention_mask` to 0 there).

## onnxruntime (Python)

```python
import json
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
tok = Tokenizer.from_file("tokenizer.json")
tok.enable_padding(pad_id=0)
enc = tok.encode_batch(["some text", "another one"])
session = ort.InferenceSession("model.onnx")
feeds = {{"input_ids": np.array([e.ids for e in enc], np.int64),
          "attention_mask": np.array([e.attention_mask for e in enc], np.int64)}}
probabilities, label = session.run(["probabilities", "label"], feeds)
classes = json.loads(session.get_modelmeta().custom_metadata_map["onnxtrain.classes"])
```

## onnxruntime-web

```js
import * as ort from "onnxruntime-web";
const session = await ort.InferenceSession.create("model.onnx");
// ids: the tokenizer's ids of one text ([CLS] ... [SEP]), e.g. from transformers.js' AutoTokenizer
const feeds = {{
  input_ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]),
  attention_mask: new ort.Tensor("int64", BigInt64Array.from(ids, () => 1n), [1, ids.length]),
}};
const {{ probabilities, label }} = await session.run(feeds);
```
"""


def check_texts(texts, what: str, allow_empty: bool = False) -> list:
    """``texts`` as a list of str; DataError naming the first that is not a str or (unless ``allow_empty``) has
    nothing but whitespace."""
    if isinstance(texts, (str, bytes)) or not hasattr(texts, "__iter__"):
        raise DataError(f"{what} must be a list of texts, not a {type(texts).__name__}")
    texts = list(texts)
    if not texts:
        raise DataError(f"{what}: the list is empty")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise DataError(f"{what}: text {i} is a {type(text).__name__}, not a str")
        if not allow_empty and not text.strip():
            raise DataError(f"{what}: text {i} is empty")
    return texts


class Encoder:
    """The sentence encoder's bytes checked (text.encoder.load_encoder), its weights made float32 once, cut to
    ``embedding`` [N, H] (``model``), and ``embed(batch)``."""

    def __init__(self, data: bytes, device: str = "cpu", what: str = "the encoder"):
        data = bytes(data)
        try:
            model = load_encoder(data, what)
        except EncoderError as e:
            raise DataError(str(e)) from None
        self.bytes, self.sha256 = len(data), hashlib.sha256(data).hexdigest()
        self.model = cut(model, {"embedding": "embedding"})
        self.session = session_on(self.model, device)
        probe = self.session.run([np.array([[101, 102]], np.int64), np.ones((1, 2), np.int64)])[0]
        if probe.ndim != 2 or probe.shape[0] != 1:
            raise DataError(f"{what}'s 'embedding' is {list(probe.shape)} for one text; it must be [N, H]")
        self.hidden = int(probe.shape[1])

    def embed(self, batch) -> np.ndarray:
        """The embeddings [n, H] of a tokenizer Batch."""
        return self.session.run([batch.input_ids, batch.attention_mask])[0].astype(np.float32, copy=False)


class TextSession(LabelledSamples):
    """Classes, their texts (tokenized and embedded when added) and a run in the ``head`` or ``lora`` mode, on the
    ``encoder`` (ONNX bytes) and its ``tokenizer`` (tokenizer.json bytes); ``run`` makes the training run (see
    tasks.training); ``device`` ("cpu" or "webgpu") runs the encoder, the training and the predictions.  A
    sample's cached values are (text, truncated, embedding)."""

    noun = "texts"

    def __init__(self, encoder: bytes, tokenizer: bytes, run=None, device: str = "cpu"):
        super().__init__(run_factory(run, device), device)
        try:
            self.tokenizer = Tokenizer.from_json(tokenizer)
        except ValueError as e:   # TokenizerError, and bytes that are not UTF-8 or JSON
            raise DataError(f"the tokenizer cannot be read: {e}") from None
        self.tokenizer_json = tokenizer.encode() if isinstance(tokenizer, str) else bytes(tokenizer)
        self.encoder = encoder if isinstance(encoder, Encoder) else Encoder(encoder, device)

    def info(self) -> dict:
        """The encoder: its embedding size, the tokenizer's longest input, bytes and SHA-256."""
        e = self.encoder
        return {"hidden": e.hidden, "max_length": self.tokenizer.max_length, "encoder_bytes": e.bytes,
                "encoder_sha256": e.sha256}

    def texts(self, index=None) -> list:
        """[sample id, text, truncated] of every text (of class ``index`` if given), in the order added."""
        i = None if index is None else self._index(index)
        return [[s, self.store[s][0], self.store[s][1]] for s, label in self.samples.items() if i in (None, label)]

    # ---- texts ------------------------------------------------------------------------------------------

    def _batches(self, texts: list):
        """(positions, tokenizer Batch) of ``texts`` in batches of BATCH texts of similar length (sorted by their
        characters, so that little of a batch is padding)."""
        lengths = [len(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda k: lengths[k])
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            yield rows, self.tokenizer.batch([texts[k] for k in rows])

    def _embed(self, texts: list) -> tuple:
        """(embeddings [n, H], truncated flags) of ``texts``."""
        out, truncated = np.zeros((len(texts), self.encoder.hidden), np.float32), [False] * len(texts)
        for rows, batch in self._batches(texts):
            out[rows] = self.encoder.embed(batch)
            for k, flag in zip(rows, batch.truncated):
                truncated[k] = bool(flag)
        return out, truncated

    @staticmethod
    def _cached(texts: list, embeddings: np.ndarray, truncated: list) -> list:
        return [(text, flag, row.copy()) for text, flag, row in zip(texts, truncated, embeddings)]

    def add_texts(self, texts, index) -> dict:
        """``texts`` (a list of str, none empty) of class ``index``, tokenized and embedded now: {"ids": their
        sample ids, "truncated": the positions in ``texts`` of those longer than the encoder takes (cut)}."""
        i = self._index(index)
        texts = check_texts(texts, f"the texts for class {show(self.names[i])}")
        embeddings, truncated = self._embed(texts)
        ids = self._add(self._cached(texts, embeddings, truncated), [i] * len(texts))
        return {"ids": ids, "truncated": [k for k, flag in enumerate(truncated) if flag]}

    def add_csv(self, data: bytes, text_column: str, label_column: str, what: str = "the CSV file") -> dict:
        """The rows of a CSV file (UTF-8, a header row) as texts of the classes their ``label_column`` names
        (classes that do not exist yet are added): {"added": texts added, "classes": the class names,
        "truncated": how many were cut}.  Nothing is added when a row is bad."""
        table = parse_csv(data, what)
        jt, jl = column(table, text_column), column(table, label_column)
        texts, labels, names = [], [], list(self.names)
        for r, row in enumerate(table.rows):
            text, label = row[jt], row[jl]
            if not text:
                raise DataError(f"{what}: line {table.line(r)} has no text in the column {show(text_column)}")
            if not label:
                raise DataError(f"{what}: line {table.line(r)} has no label in the column {show(label_column)}")
            known = next((k for k, n in enumerate(names) if n.casefold() == label.casefold()), None)
            if known is None:
                try:
                    names.append(class_name(label, names))
                except DataError as e:
                    raise DataError(f"{what}: line {table.line(r)}: {e}") from None
                known = len(names) - 1
            texts.append(text)
            labels.append(known)
        if len(names) > MAX_CLASSES:
            raise DataError(f"{what} names {len(names)} classes in the column {show(label_column)} (with the "
                            f"{len(self.names)} there were); at most {MAX_CLASSES}")
        embeddings, truncated = self._embed(texts)
        if names != self.names:
            self.names = names
            self._drop_run()
        self._add(self._cached(texts, embeddings, truncated), labels)
        return {"added": len(texts), "classes": list(self.names), "truncated": sum(truncated)}

    # ---- the run --------------------------------------------------------------------------------------

    def setup(self, mode="head", rank=8, validation=0.0, seed=0, optimizer="AdamW") -> dict:
        """A new run on the texts there are now, in ``mode`` "head" (a head on the cached embeddings) or "lora"
        (rank-``rank`` adapters in the encoder and the head, trained end to end); ``validation`` (0, or above 0 and
        below 1) of each class's texts held out.  What the run trains on."""
        if mode not in MODES:
            raise DataError(f"the mode is {show(mode)}; it must be \"head\" or \"lora\"")
        if mode == "lora" and whole(rank, 1, MAX_RANK) is None:
            raise DataError(f"the LoRA rank is {show(rank)}; it must be a whole number from 1 to {MAX_RANK}")
        return self._setup(validation, seed, {"mode": mode, "rank": whole(rank, 1) if mode == "lora" else None,
                                              "optimizer": str(optimizer)})

    def _new_run(self, settings: dict, checkpoint: bytes = None) -> dict:
        """The run ``settings`` describe, at ``checkpoint``; nothing changes when it cannot be made."""
        mode, share, seed, ids = settings["mode"], settings["validation"], settings["seed"], settings["ids"]
        y = np.array(settings["labels"], np.int64)
        train, val = stratified_split(y, share, seed) if share else (list(range(len(y))), [])
        embeddings = np.stack([self.store[s][2] for s in ids])
        head = head_model(len(self.names), self.encoder.hidden, linear_probe(embeddings[train], y[train],
                                                                             len(self.names)))
        if mode == "head":
            forward, trainable, frozen = head, ["head.weight", "head.bias"], []
        else:
            adapted, adapters = lora.add_adapters(self.encoder.model, settings["rank"], seed=seed)
            forward, trainable, frozen = compose(adapted, head, {"embedding": "embedding"}), adapters + [
                "head.weight", "head.bias"], []
        arts = make_artifacts(forward, "CrossEntropyLoss", settings["optimizer"], trainable=trainable, frozen=frozen,
                              extra_outputs=["output"])
        rows = lambda r: [*self._inputs([ids[k] for k in r], mode), y[r]]  # noqa: E731
        validation_data = rows(val) if val else None
        training = self.make_run(arts, rows(train), validation_data, seed)
        if checkpoint is not None:
            training.restore(checkpoint)
        self.training, self.validation, self.settings, self._model_cache = training, validation_data, settings, None
        per_class = lambda r: np.bincount(y[r].astype(np.intp), minlength=len(self.names)).tolist()  # noqa: E731
        return {"samples": len(y), "train": len(train), "validation": len(val), "classes": list(self.names),
                "train_per_class": per_class(train), "validation_per_class": per_class(val), "mode": mode,
                "rank": settings["rank"], "parameters": training.module.get_parameters_size(True)}

    def _inputs(self, ids: list, mode: str) -> list:
        """The run's inputs for the texts ``ids``: [embeddings] (head), or [input_ids, attention_mask] padded to
        the longest of them (lora)."""
        if mode == "head":
            return [np.stack([self.store[s][2] for s in ids]).astype(np.float32)]
        batch = self.tokenizer.batch([self.store[s][0] for s in ids])
        return [batch.input_ids, batch.attention_mask]

    def metrics(self) -> dict:
        """Accuracy, baseline, confusion matrix and the number of texts of each class ("counts") on the validation
        texts (on the training texts when there is no validation, "on" says which)."""
        run = self._run()
        if self.validation is not None:
            (*x, y), on = self.validation, "validation"
        else:
            x = self._inputs(self.settings["ids"], self.settings["mode"])
            y, on = np.array(self.settings["labels"], np.int64), "train"
        logits = self._scores(run.module, x, y)
        return {"on": on, "counts": np.bincount(y.astype(np.intp), minlength=len(self.names)).tolist(),
                **classification_metrics(logits, y, len(self.names))}

    @staticmethod
    def _scores(module, x: list, y: np.ndarray) -> np.ndarray:
        """The eval model's ``output`` for the rows of ``x`` (labels ``y``), BATCH rows at a time: no export, which
        for a LoRA run would write and read the whole encoder."""
        module.eval()
        try:
            return np.concatenate([module(*[a[i:i + BATCH] for a in x], y[i:i + BATCH])[1]
                                   for i in range(0, len(y), BATCH)])
        finally:
            module.train()

    def evaluate(self) -> dict:
        """``metrics()`` and the validation loss (None without validation)."""
        loss = self._run().validation_loss(chunk=BATCH) if self.validation is not None else None
        return {"loss": loss, **self.metrics()}

    def predict(self, texts) -> list:
        """For each text: {label, class_name, probabilities, truncated}."""
        texts = check_texts(texts, "the texts to predict", allow_empty=True)
        model = self._model()
        logits = np.zeros((len(texts), len(self.names)), np.float32)
        truncated = [False] * len(texts)
        for rows, batch in self._batches(texts):
            x = [batch.input_ids, batch.attention_mask]
            logits[rows] = model.run([self.encoder.embed(batch)] if self.settings["mode"] == "head" else x)[0]
            for k, flag in zip(rows, batch.truncated):
                truncated[k] = bool(flag)
        return [{"probabilities": probabilities(row), "label": int(row.argmax()),
                 "class_name": self.names[int(row.argmax())], "truncated": flag} for row, flag in zip(logits, truncated)]

    # ---- export, checkpoints, snapshots -------------------------------------------------------------------

    def exported(self) -> Model:
        """One model: ``input_ids`` and ``attention_mask`` int64 [N, T] -> the encoder (adapters merged) -> the
        head -> ``output`` (scores), ``probabilities``, ``label``; the class names in metadata
        ``onnxtrain.classes``; weights that float16 holds exactly stored as float16 (+ Cast)."""
        inner = inference_model(self._run().module)
        if self.settings["mode"] == "head":
            model = compose(self.encoder.model, inner, {"embedding": "embedding"}, prefix="head.")
        else:
            model = lora.merge(inner)
        model = float16_where_exact(model)
        doc = (f"Inputs 'input_ids' and 'attention_mask': int64 [batch, tokens], the ids of the tokenizer.json "
               f"beside it ([CLS] text [SEP], at most {self.tokenizer.max_length} tokens, padded with 0 where the "
               f"mask is 0). {classes_doc(self.names)}")
        out = with_head(model, list(model.graph.inputs), [], [], doc, self.names)
        out.metadata_props["onnxtrain.text"] = json.dumps({"max_length": self.tokenizer.max_length,
                                                           "mode": self.settings["mode"]})
        return out

    def export_model(self) -> bytes:
        return ir.to_bytes(self.exported())

    def export_zip(self, name: str = "Text classifier") -> bytes:
        """model.onnx, tokenizer.json and README.md (how to call it) as .zip bytes."""
        buffer = io.BytesIO()
        readme = README.format(name=name, classes_line=classes_doc(self.names), k=len(self.names),
                               max_length=self.tokenizer.max_length)
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=FAST) as z:
            z.writestr("model.onnx", self.export_model())
            z.writestr("tokenizer.json", self.tokenizer_json)
            z.writestr("README.md", readme)
        return buffer.getvalue()

    def checkpoint(self, properties: dict = None) -> bytes:
        return self._run().checkpoint({**(properties or {}), "onnxtrain.text": {
            "classes": self.names, "mode": self.settings["mode"], "rank": self.settings["rank"]}})

    def snapshot(self) -> bytes:
        """The classes, the texts (ids, classes, texts, cached embeddings) and the run (its setup and checkpoint)
        as .npz bytes, for ``from_snapshot`` with the same encoder."""
        ids = sorted(self.store)
        embeddings = np.stack([self.store[s][2] for s in ids]) if ids else np.zeros((0, self.encoder.hidden))
        return self._snapshot(ids, {"encoder": self.encoder.sha256, "texts": [self.store[s][0] for s in ids],
                                    "truncated": [self.store[s][1] for s in ids]},
                              {"embeddings": embeddings.astype(np.float32)})

    @classmethod
    def from_snapshot(cls, encoder: bytes, tokenizer: bytes, snapshot: bytes, run=None,
                      device: str = "cpu") -> "TextSession":
        """The session a ``snapshot`` was taken of, on ``encoder`` (the same model) and its tokenizer."""
        session = cls(encoder, tokenizer, run, device)
        session._load_snapshot(snapshot)
        return session

    def _load_snapshot(self, snapshot: bytes) -> None:
        """Take the classes, texts and run of ``snapshot`` (this session is new)."""
        meta, arrays, ids = self._read_snapshot(snapshot, "text classifier", ("encoder", self.encoder.sha256,
                                                                              "encoder"))
        embeddings, texts, truncated = arrays.get("embeddings"), meta.get("texts"), meta.get("truncated")
        mode = (meta["settings"] or {}).get("mode", "head")
        readable = (embeddings is not None and embeddings.shape == (len(ids), self.encoder.hidden)
                    and isinstance(texts, list) and isinstance(truncated, list)
                    and len(texts) == len(truncated) == len(ids) and all(isinstance(t, str) for t in texts)
                    and mode in MODES)
        if not readable:
            raise DataError(f"the saved text classifier cannot be read (embeddings "
                            f"{None if embeddings is None else list(embeddings.shape)}, texts for "
                            f"{len(texts) if isinstance(texts, list) else None} of {len(ids)} stored samples)")
        self._take_snapshot(meta, {s: (texts[k], bool(truncated[k]), embeddings[k].astype(np.float32))
                                   for k, s in enumerate(ids)})


__all__ = ["TextSession", "check_texts"]
