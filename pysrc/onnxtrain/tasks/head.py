"""The export head every task puts on its trained model: preprocessing in front of the inference graph, and for a
classifier ``probabilities`` (Softmax) and ``label`` (ArgMax) after its ``output``, the class names in the
metadata and a doc string that says how to call the model."""
from __future__ import annotations

from ..ir.dtypes import DataType
from ..ir.model import Attribute, AttrType, Graph, Model, Node, TensorType, ValueInfo
from .checks import names_text

CLASSES = "onnxtrain.classes"  # metadata key: the class names as a JSON list, in label order


def with_head(inference: Model, inputs: list, nodes: list, initializers: list, doc: str, classes=None,
              min_opset: int = 0, min_ir_version: int = 0) -> Model:
    """``inference`` (an exported inference model whose first input takes the features and whose first output is
    ``output``) behind ``nodes``, which compute that input from the new graph ``inputs`` with ``initializers``.
    With ``classes`` (a list of names) the model also gives ``probabilities`` and ``label``."""
    g = inference.graph
    output = g.outputs[0].name
    outputs, tail, metadata = list(g.outputs), [], {}
    if classes is not None:
        tail = [Node("Softmax", [output], ["probabilities"], name="post.softmax",
                     attributes={"axis": Attribute("axis", AttrType.INT, -1)}),
                Node("ArgMax", [output], ["label"], name="post.argmax",
                     attributes={"axis": Attribute("axis", AttrType.INT, 1),
                                 "keepdims": Attribute("keepdims", AttrType.INT, 0)})]
        outputs += [ValueInfo("probabilities", TensorType(DataType.FLOAT, ["batch", len(classes)])),
                    ValueInfo("label", TensorType(DataType.INT64, ["batch"]))]
        metadata[CLASSES] = names_text(classes)
    graph = Graph(name=g.name, nodes=list(nodes) + list(g.nodes) + tail, inputs=list(inputs), outputs=outputs,
                  initializers=list(initializers) + list(g.initializers), value_info=list(g.value_info),
                  doc_string=doc)
    opsets = dict(inference.opset_imports)
    opsets.pop("ai.onnx", None)
    opsets[""] = max(inference.opset("") or min_opset, min_opset)
    return Model(graph=graph, ir_version=max(inference.ir_version, min_ir_version), opset_imports=opsets,
                 producer_name="onnxtrain", metadata_props=metadata)


def classes_doc(classes, capital: bool = True) -> str:
    """The doc string's words on a classifier's outputs (a sentence, or its end after a colon)."""
    return (f"{'O' if capital else 'o'}utput 'label' is the index of the class in {names_text(classes)}, "
            f"'probabilities' the probability of each.")
