"""Low-rank adapters (LoRA) on a model's linear layers, and their merge back into the weights.

For each ``MatMul(x, W)`` whose weight W [in, out] is a targeted initializer, ``add_adapters`` adds
``x @ A @ B * (alpha / r)`` to the product, with A [in, r] small and random (from a seed, as PEFT's Kaiming-uniform
start) and B [r, out] zeros, so the adapted model starts equal to the base model.  A, B and the scale are
initializers named ``<W>.lora_A``, ``<W>.lora_B`` and ``<W>.lora_scale``; the adapter's values are named
``<W>.lora/...``, so ``merge`` finds them in any graph made from the adapted one (the inference model of a run).

The targets by default are the attention's query, key and value projections: they are what LoRA's paper adapts
(it found the attention weights enough at a small rank), and with the base weights frozen they are 3 x r x
(in + out) parameters a layer.
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np

from ..ir.dtypes import DataType
from ..ir.model import Model, Node, Tensor

ATTENTION = ("attention.self.query.weight", "attention.self.key.weight", "attention.self.value.weight")


class AdapterError(ValueError):
    """A model or a setting the adapters cannot be added with."""


def targets(model: Model, suffixes=ATTENTION) -> list:
    """The names of the initializers ending in one of ``suffixes`` that a MatMul reads as its second input."""
    inits = model.graph.initializer_map()
    found = [n.inputs[1] for n in model.graph.nodes if n.op_type == "MatMul" and len(n.inputs) == 2
             and n.inputs[1] in inits and n.inputs[1].endswith(tuple(suffixes))]
    return list(dict.fromkeys(found))


def add_adapters(model: Model, rank: int = 8, alpha: float = None, seed: int = 0, names=None) -> tuple:
    """(a copy of ``model`` with a rank-``rank`` adapter on each weight of ``names`` (default: ``targets``),
    the adapters' trainable initializer names).  ``alpha`` defaults to ``rank`` (scale 1)."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise AdapterError(f"the LoRA rank is {rank!r}; it must be a whole number of 1 or more")
    names = targets(model) if names is None else list(names)
    if not names:
        raise AdapterError(f"the model has no MatMul weight to adapt (looked for names ending in {list(ATTENTION)})")
    scale = np.float32((rank if alpha is None else alpha) / rank)
    out = copy.copy(model)
    g = out.graph = copy.copy(model.graph)
    inits = g.initializer_map()
    rng = np.random.default_rng(seed)
    nodes, trainable, adapters = list(g.nodes), [], []
    for w in names:
        weight = inits.get(w)
        if weight is None or weight.data.ndim != 2:
            raise AdapterError(f"the weight {w!r} to adapt is not a 2-D initializer of the model")
        readers = [n for n in nodes if n.op_type == "MatMul" and n.inputs[1:2] == [w]]
        if len(readers) != 1:
            raise AdapterError(f"the weight {w!r} is read by {len(readers)} MatMul nodes; one is needed")
        n_in, n_out = weight.data.shape
        if rank > min(n_in, n_out):
            raise AdapterError(f"the LoRA rank {rank} is above the size of {w!r} {[n_in, n_out]}")
        bound = 1 / np.sqrt(n_in)
        a, b, s = f"{w}.lora_A", f"{w}.lora_B", f"{w}.lora_scale"
        adapters += [Tensor(a, rng.uniform(-bound, bound, (n_in, rank)).astype(np.float32), DataType.FLOAT),
                     Tensor(b, np.zeros((rank, n_out), np.float32), DataType.FLOAT),
                     Tensor(s, np.array(scale, np.float32), DataType.FLOAT)]
        trainable += [a, b]
        base = readers[0]
        x, y, v = base.inputs[0], base.outputs[0], f"{w}.lora/"
        at = next(i for i, n in enumerate(nodes) if n is base)
        nodes[at:at + 1] = [dataclasses.replace(base, outputs=[v + "base"], layout=None),
                            Node("MatMul", [x, a], [v + "down"], name=v + "down"),
                            Node("MatMul", [v + "down", b], [v + "up"], name=v + "up"),
                            Node("Mul", [v + "up", s], [v + "delta"], name=v + "scale"),
                            Node("Add", [v + "base", v + "delta"], [y], name=v + "add")]
    g.nodes, g.initializers = nodes, list(g.initializers) + adapters
    return out, trainable


def merge(model: Model) -> Model:
    """A copy of ``model`` with each adapter folded into its weight (W + A @ B * scale, in float64 then float32)
    and its nodes and initializers removed."""
    g = model.graph
    inits = g.initializer_map()
    weights = [t.name[:-len(".lora_A")] for t in g.initializers if t.name.endswith(".lora_A")]
    merged, drop, nodes = {}, set(), list(g.nodes)
    for w in weights:
        a, b, s = (inits.get(f"{w}{k}") for k in (".lora_A", ".lora_B", ".lora_scale"))
        if w not in inits or b is None or s is None:
            raise AdapterError(f"the adapter of {w!r} is incomplete (its weight, lora_B or lora_scale is missing)")
        delta = a.data.astype(np.float64) @ b.data.astype(np.float64) * float(s.data)
        merged[w] = Tensor(w, (inits[w].data.astype(np.float64) + delta).astype(np.float32), DataType.FLOAT)
        drop |= {a.name, b.name, s.name}
        v = f"{w}.lora/"
        add = next((n for n in nodes if n.op_type == "Add" and v + "base" in n.inputs), None)
        if add is None:
            raise AdapterError(f"the adapter of {w!r} has no Add of its base product")
        nodes = [dataclasses.replace(n, outputs=list(add.outputs), layout=None) if v + "base" in n.outputs else n
                 for n in nodes
                 if n is not add and not any(o.startswith(v) and o != v + "base" for o in n.outputs)]
    out = copy.copy(model)
    out.graph = copy.copy(g)
    out.graph.nodes = nodes
    out.graph.initializers = [merged.get(t.name, t) for t in g.initializers if t.name not in drop]
    return out
