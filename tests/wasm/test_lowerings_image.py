"""The lowerings the image backbone and its preprocessing need (tasks/backbone.py, tasks/preprocess.py), each against
the numpy provider bit for bit: Clip (Relu6), Resize over the last two axes, Slice, Concat, Split, Cast to float32,
and Transpose and Expand of other element types; Erf (MiniLM's GELU) with them, on simd.erf's kernel."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from helpers import node_model, run_both
from test_lowerings import check, rand
from test_lowerings_transformer import ints, node_model_

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("opset,attrs,bounds", [(17, {}, (np.float32(0), np.float32(6))),
                                                (17, {}, (np.float32(-1.5), np.float32(0.0))),
                                                (10, {"min": 0.0, "max": 6.0}, None), (10, {"max": 1.0}, None),
                                                (17, {}, ())])
def test_clip(opset, attrs, bounds):
    x = rand(16, 33) * 5
    x[0, :5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    inits = {} if not bounds else {"lo": np.asarray(bounds[0]).reshape(()), "hi": np.asarray(bounds[1]).reshape(())}
    check(node_model_("Clip", {"x": x}, initializers=inits, opset=opset, **attrs), [x])


def test_clip_with_one_bound_runs_on_the_host():
    x = rand(4, 5)
    model = node_model("Clip", {"x": x, "": None}, ["y"], initializers={"hi": np.float32(1.0).reshape(())})
    want, got, session, _ = run_both(model, [x])
    assert len(session.fallbacks) == 1 and "one bound" in session.fallbacks[0]


def test_erf():
    x = rand(64, 37) * 3
    x[0, :5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    check(node_model_("Erf", {"x": x}), [x])


@pytest.mark.parametrize("x_shape,sizes,attrs", [
    ((2, 3, 224, 224), (2, 3, 224, 224), {"mode": "linear", "antialias": 1}),
    ((2, 3, 240, 320), (2, 3, 224, 224), {"mode": "linear", "antialias": 1}),
    ((1, 3, 50, 40), (1, 3, 224, 224), {"mode": "linear", "antialias": 1}),
    ((1, 2, 9, 7), (1, 2, 4, 13), {"mode": "cubic"}),
    ((1, 2, 9, 7), (1, 2, 18, 7), {"mode": "nearest"}),
    ((1, 2, 9, 7), (1, 2, 5, 5), {"mode": "linear", "coordinate_transformation_mode": "align_corners"})])
def test_resize(x_shape, sizes, attrs):
    x = rand(*x_shape)
    model = node_model("Resize", {"x": x, "": None}, ["y"], opset=18, initializers={"sizes": ints(*sizes)},
                       **attrs)
    # node_model lists the initializers after the feeds: x, "", sizes -> X, roi (omitted), scales (sizes' slot)
    model = _with_inputs(model, ["x", "", "", "sizes"])
    check(model, [x])


def _with_inputs(model, inputs):
    model.graph.nodes[0].inputs = inputs
    return model


def test_resize_along_the_channels_runs_on_the_host():
    x = rand(1, 3, 4, 4)
    model = _with_inputs(node_model("Resize", {"x": x, "": None}, ["y"], opset=18,
                                    initializers={"sizes": ints(1, 6, 4, 4)}, mode="linear"), ["x", "", "", "sizes"])
    want, got, session, _ = run_both(model, [x])
    assert len(session.fallbacks) == 1 and "last two" in session.fallbacks[0]
    np.testing.assert_array_equal(got[0], want[0])


SLICES = [((4, 240, 320, 4), (0, 8, 0), (240, 232, 3), (1, 2, 3), None),
          ((10, 6), (-3, 1), (100, -1), None, None), ((10, 6), (8, 5), (1, 0), None, (-2, -1)),
          ((5, 7, 3), (1,), (4,), (1,), (2,))]


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64])
@pytest.mark.parametrize("shape,starts,ends,axes,steps", SLICES)
def test_slice(dtype, shape, starts, ends, axes, steps):
    x = (RNG.standard_normal(shape) * 100).astype(dtype)
    inits = {"starts": ints(*starts), "ends": ints(*ends)}
    inputs = ["x", "starts", "ends"]
    if axes is not None:
        inits["axes"] = ints(*axes)
        inputs.append("axes")
    if steps is not None:
        if axes is None:
            inits["axes"] = ints(*range(len(starts)))
            inputs.append("axes")
        inits["steps"] = ints(*steps)
        inputs.append("steps")
    model = _with_inputs(node_model_("Slice", {"x": x}, initializers=inits), inputs)
    check(model, [x])


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("shapes,axis", [([(2, 3), (2, 5)], 1), ([(2, 3), (4, 3), (1, 3)], 0),
                                         ([(2, 3, 4), (2, 1, 4)], -2)])
def test_concat(dtype, shapes, axis):
    feeds = {f"x{i}": (RNG.standard_normal(s) * 10).astype(dtype) for i, s in enumerate(shapes)}
    check(node_model_("Concat", feeds, axis=axis), list(feeds.values()))


@pytest.mark.parametrize("split,outputs", [((2, 4, 1), ["a", "b", "c"]), (None, ["a", "b"]), ((3, 4), ["", "b"])])
def test_split(split, outputs):
    x = rand(3, 7, 5)
    inits = {} if split is None else {"split": ints(*split)}
    if split is None:
        x = rand(3, 8, 5)
    model = node_model("Split", {"x": x}, outputs, initializers=inits, axis=1)
    check(model, [x])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.int64, np.bool_])
def test_cast_to_float(dtype):
    x = (RNG.standard_normal((6, 50)) * 3e9 if dtype == np.int64 else RNG.integers(-128, 255, (6, 50))).astype(dtype)
    check(node_model_("Cast", {"x": x}, to=TensorProto.FLOAT), [x])


@pytest.mark.parametrize("dtype", [np.uint8, np.int64])
def test_transpose_and_expand_of_other_types(dtype):
    x = RNG.integers(0, 200, (2, 5, 1)).astype(dtype)
    check(node_model_("Transpose", {"x": x}, perm=[2, 0, 1]), [x])
    check(node_model_("Expand", {"x": x}, initializers={"s": ints(3, 1, 5, 4)}), [x])
