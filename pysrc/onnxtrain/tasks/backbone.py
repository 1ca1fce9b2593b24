"""A pretrained image backbone for personalization: an ONNX model with input ``input`` float32 [N, 3, S, S]
(normalised as its ``onnxtrain.preprocess`` metadata says) and outputs ``features`` [N, F] (after global pooling)
and ``block`` (the input of the last convolution, so that fine-tuning can train that convolution on cached maps).
Here it is checked, its float16 weights are made float32 once (for speed), and it is run behind the preprocessing
graph of tasks.preprocess."""
from __future__ import annotations

import copy
import hashlib

import numpy as np

from .. import ir
from ..ir.compose import compose, cut, needed_nodes
from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, TensorType, ValueInfo
from ..ir.rewrite import fold_casts
from ..api.module import session_on
from ..train.data import DataError
from .preprocess import OPSET, preprocess_model, read_preprocess

#: ops whose definition changed at opset 18 (the preprocessing's): a backbone of a lower opset must not have them
CHANGED_AT_18 = {"Resize", "Pad", "Split", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                 "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ScatterElements", "ScatterND",
                 "LpPool", "OptionalHasElement", "OptionalGetElement"}
BATCH = 16  # images per forward pass when embedding


class Backbone:
    """The backbone's bytes checked: ``model`` as given (for the export), ``preprocess`` ({size, mean, std}),
    ``features`` (F), ``block_shape`` ([C, h, w]), ``embed(images)``, and the layers from ``block`` to
    ``features`` (``tail``) for fine-tuning."""

    def __init__(self, data: bytes, what: str = "the backbone", device: str = "cpu"):
        data = bytes(data)
        try:
            model = ir.load(data)
        except ir.ModelDecodeError as e:
            raise DataError(f"{what} is not an ONNX model ({e})") from None
        self.bytes, self.sha256 = len(data), hashlib.sha256(data).hexdigest()
        g = model.graph
        inputs = [v.name for v in g.inputs if v.name not in g.initializer_map()]
        outputs = [v.name for v in g.outputs]
        if inputs != ["input"] or "features" not in outputs or "block" not in outputs:
            raise DataError(f"{what} must have the input 'input' and the outputs 'features' and 'block'; it has "
                            f"inputs {inputs} and outputs {outputs}")
        extra = sorted(d for d in model.opset_imports if d not in ("", "ai.onnx"))
        if extra:
            raise DataError(f"{what} imports the opset domain {extra[0]!r}; only the default ONNX domain is allowed")
        opset = model.opset("") or 0
        if opset < OPSET:
            changed = sorted({n.op_type for n in g.nodes if n.op_type in CHANGED_AT_18})
            if changed:
                raise DataError(f"{what} is opset {opset} and has a {changed[0]} node, which changed at opset "
                                f"{OPSET} (the preprocessing's opset); export it with opset {OPSET} or later")
        self.preprocess = read_preprocess(model.metadata_props, what)
        self.source = model.metadata_props.get("onnxtrain.source", "")
        self.model = model
        self.folded = fold_casts(model)
        size = self.preprocess["size"]
        self.embedder = session_on(self._behind_preprocessing(cut(self.folded, {"features": "features",
                                                                                "block": "block"})), device)
        probe = self.embedder.run([np.zeros((1, size, size, 4), np.uint8)])   # RGBA, as the page's frames
        if probe[0].ndim != 2 or probe[1].ndim != 4:
            raise DataError(f"{what}'s outputs are features {list(probe[0].shape)} and block "
                            f"{list(probe[1].shape)}; they must be [N, F] and [N, C, h, w]")
        self.features, self.block_shape = probe[0].shape[1], list(probe[1].shape[1:])
        self.tail = self._tail(what)

    def _behind_preprocessing(self, backbone: Model) -> Model:
        p = self.preprocess
        return compose(preprocess_model(p["size"], p["mean"], p["std"]), backbone, {"input": "input"})

    def _tail(self, what: str) -> Model:
        """The layers from ``block`` to ``features`` (float32 weights) as a model of their own, and the name of its
        convolution's weight and bias (``conv``)."""
        g = self.folded.graph
        before = {id(n) for n in needed_nodes(g, ["block"])}
        nodes = [n for n in needed_nodes(g, ["features"]) if id(n) not in before]
        last = next((n for n in nodes if "features" in n.outputs), None)
        if last is not None and last.op_type == "Reshape":  # its shape may come from 'input': a Flatten does it
            flatten = Node("Flatten", [last.inputs[0]], ["features"], name=last.name or "features",
                           attributes={"axis": Attribute("axis", AttrType.INT, 1)})
            nodes = needed_nodes(Graph(nodes=[flatten if n is last else n for n in nodes]), ["features"])
        produced = {o for n in nodes for o in n.outputs} | {"block"}
        inits = g.initializer_map()
        reads = [x for n in nodes for x in n.inputs if x and x not in produced]
        strange = [x for x in reads if x not in inits]
        convs = [n for n in nodes if n.op_type == "Conv"]
        if strange or len(convs) != 1 or any(inits[x].data_type != DataType.FLOAT for x in reads):
            raise DataError(f"{what}: the layers from 'block' to 'features' must be one Conv with float weights, "
                            f"then activation and pooling, reading nothing but 'block' and weights (found "
                            f"{[n.op_type for n in nodes]}{', reading ' + strange[0] if strange else ''})")
        conv = convs[0]
        self.conv = [x for x in conv.inputs[1:] if x]
        types = g.value_info_map()
        graph = Graph(name="tail", nodes=list(nodes), initializers=[inits[x] for x in dict.fromkeys(reads)],
                      inputs=[ValueInfo("block", TensorType(DataType.FLOAT, ["batch", *self.block_shape]))],
                      outputs=[copy.deepcopy(types.get("features")) or ValueInfo("features")])
        graph.outputs[0].type = TensorType(DataType.FLOAT, ["batch", self.features])
        return Model(graph=graph, ir_version=self.model.ir_version, opset_imports={"": self.model.opset("")},
                     producer_name="onnxtrain")

    def embed(self, images: np.ndarray) -> tuple:
        """(features [n, F], block [n, C, h, w]) of uint8 images [n, H, W, 3 or 4], BATCH at a time."""
        parts = [self.embedder.run([images[i:i + BATCH]]) for i in range(0, len(images), BATCH)]
        return (np.concatenate([p[0] for p in parts]).astype(np.float32, copy=False),
                np.concatenate([p[1] for p in parts]).astype(np.float32, copy=False))

    def front(self, output: str) -> Model:
        """The preprocessing and the backbone as given (float16 weights stay float16) up to ``output``
        ("features" or "block"), for an export."""
        return self._behind_preprocessing(cut(self.model, {output: output}))
