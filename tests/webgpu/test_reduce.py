"""Reduction, Softmax and ArgMax WGSL kernels against the CPU kernels (themselves checked against onnxruntime),
on both paths: a workgroup per output (a tree in workgroup memory) and a thread per output."""
import numpy as np
import pytest

from gpu_cases import assert_close, check_node, gpu_session, node_model, run_both
from onnxtrain.webgpu.kernels import reduce as kernels
from onnxtrain.webgpu.kernels.reduce import REDUCTIONS
from onnxtrain.webgpu.lowering import GPULowering

IN_PYODIDE = True
rng = np.random.default_rng(0)
MS = "com.microsoft"
EPS = float(np.finfo(np.float32).eps)


def floats(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.fixture(params=["workgroup", "thread"])
def path(request, monkeypatch):
    """Each output reduced by a workgroup, or by a thread, whatever the lengths."""
    monkeypatch.setattr(kernels, "WIDE_MIN", 1 if request.param == "workgroup" else 10 ** 9)
    return request.param


@pytest.fixture(params=["workgroup", "thread", "split"])
def reduce_path(request, monkeypatch):
    """As ``path``, or (split) over chunks of 7 reduced elements by a workgroup each, then over the partials."""
    monkeypatch.setattr(kernels, "WIDE_MIN", 10 ** 9 if request.param == "thread" else 1)
    if request.param == "split":
        monkeypatch.setattr(kernels, "SPLIT_MIN", 2)
        monkeypatch.setattr(kernels, "CHUNK", 7)
    return request.param


def data_for(op, shape):
    if op == "ReduceProd":    # near 1, so that a product of 1000 neither overflows nor vanishes
        return (1 + 0.01 * rng.standard_normal(shape)).astype(np.float32)
    if op == "ReduceLogSum":
        return (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32)
    return floats(*shape)


def order_atol(op, x, length):
    """Summing n terms in another order than numpy's (pairwise) moves the float32 result by up to about
    n * eps * |term| (the bound of a sequential sum; the terms here are about 1); a mean divides it by n."""
    if op in ("ReduceSum", "ReduceSumSquare", "ReduceL1"):
        return max(1e-6, 2 * EPS * length * float(np.abs(x).max()) ** (2 if op == "ReduceSumSquare" else 1))
    if op == "ReduceMean":
        return max(1e-6, 2 * EPS * float(np.abs(x).max()))
    return 1e-6


# (shape, axes, keepdims): contiguous and strided reduced axes, a set of axes apart, negative axes, all axes
# (None: no axes given), a reduced length of 1, 3, 257 and 1000
CASES = [((3, 257), [1], 0), ((257, 3), [0], 1), ((2, 3, 5), [0, 2], 1), ((2, 3, 5), [-1, -2], 0),
         ((1000,), None, 0), ((4, 5, 2), None, 1), ((4, 1, 6), [1], 0), ((2, 3, 4, 5), [1, 3], 0),
         ((3, 1000), [-1], 1)]


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_reductions(op, reduce_path):
    for i, (shape, axes, keepdims) in enumerate(CASES):
        x = data_for(op, shape)
        length = int(np.prod([shape[a] for a in axes] if axes is not None else shape))
        atol = order_atol(op, x, length)
        inits = {} if axes is None else {"axes": np.array(axes, np.int64)}
        gpu = check_node(op, {"X": x}, opset=13 if op == "ReduceSum" else 18, initializers=inits,
                         keepdims=keepdims, atol=atol)
        if reduce_path == "split" and length >= 2 * kernels.CHUNK and op != "ReduceLogSumExp":
            assert gpu.last_program.dispatch_count == 2
        if i % 3 == 0:    # the axes as an attribute (opsets before 13 or 18)
            attrs = {} if axes is None else {"axes": axes}
            check_node(op, {"X": x}, opset=11, keepdims=keepdims, atol=atol, **attrs)


def test_noop_with_empty_axes():
    x = floats(3, 4)
    empty = {"axes": np.zeros(0, np.int64)}
    gpu = check_node("ReduceMax", {"X": x}, opset=18, initializers=empty, noop_with_empty_axes=1)
    assert gpu.last_program.dispatch_count == 0
    check_node("ReduceMax", {"X": x}, opset=18, initializers=empty, noop_with_empty_axes=0)
    check_node("ReduceSum", {"X": x}, opset=13, noop_with_empty_axes=1)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceSumSquare"])
def test_integer_reductions(op, reduce_path):
    x = rng.integers(-5, 6, (3, 4, 70)).astype(np.int64)
    if op == "ReduceProd":
        x = rng.integers(-2, 3, (3, 4, 7)).astype(np.int64)
    check_node(op, {"X": x}, opset=11, axes=[2], keepdims=0)
    check_node(op, {"X": x.astype(np.int32)}, opset=11, axes=[0, 2])


def test_many_workgroups(monkeypatch):
    """More outputs than a grid dimension holds workgroups: the grid spreads over x and y."""
    monkeypatch.setattr(kernels, "WIDE_MIN", 1)
    assert kernels.workgroup_grid(65535 * 3 + 1) == (49152, 4, 1)
    check_node("ReduceSum", {"X": floats(65600, 2)}, opset=11, axes=[1])


def _bits_twice(op, inputs, domain="", **attrs):
    model = node_model(op, inputs, ["Y"], domain, 17, **attrs)
    gpu = gpu_session(model)
    feeds = list(inputs.values())
    first, second = gpu.run(feeds)[0], gpu.run(feeds)[0]
    assert gpu.fallbacks == []
    assert first.tobytes() == second.tobytes()
    assert gpu_session(model).run(feeds)[0].tobytes() == first.tobytes()


def test_deterministic(reduce_path):
    x = floats(5, 1000, scale=3.0)
    _bits_twice("ReduceSum", {"X": x})
    _bits_twice("ReduceLogSumExp", {"X": x}, axes=[1])
    _bits_twice("Softmax", {"X": x}, axis=-1)
    _bits_twice("SoftmaxGrad_13", {"dY": x, "Y": floats(5, 1000)}, MS, axis=-1)
    _bits_twice("ArgMax", {"X": np.round(x)}, axis=1)


# -- Softmax and LogSoftmax --------------------------------------------------------------------------

# where opset 13's rows are those of opsets 1 to 12 too: the axis is the last
SOFTMAX_CASES = [((4, 257), -1), ((3, 1000), 1), ((2, 5, 3), 2), ((3, 1), -1), ((7,), 0), ((2, 3, 4, 5), -1)]


def told_opset(monkeypatch, opset):
    """The lowering context told the node's opset (``Lowering.opset``, which the compiler does not set yet)."""
    monkeypatch.setattr(GPULowering, "opset", opset, raising=False)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax(op, path, monkeypatch):
    for shape, axis in SOFTMAX_CASES:
        check_node(op, {"X": floats(*shape, scale=3.0)}, opset=13, axis=axis)
    # opsets 1 to 12 coerce the input to 2-D at the axis: the same rows when the axis is the last
    check_node(op, {"X": floats(2, 3, 257, scale=3.0)}, opset=11, axis=-1)
    check_node(op, {"X": floats(6, 9)}, opset=11)
    told_opset(monkeypatch, 13)
    check_node(op, {"X": floats(2, 3, 4)}, opset=13)
    check_node(op, {"X": floats(2, 3, 4)}, opset=13, axis=1)
    told_opset(monkeypatch, 11)
    check_node(op, {"X": floats(2, 3, 4)}, opset=11)
    check_node(op, {"X": floats(2, 3, 4)}, opset=11, axis=0)
    check_node(op, {"X": floats(5)}, opset=11)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_opsets_that_differ(op):
    """Opset 11's 2-D coercion and opset 13's single axis differ on a middle axis or with the default axis:
    the GPU runs them only when the lowering is told the opset; else the node falls back to the CPU."""
    for opset, attrs in ((11, {"axis": 1}), (11, {}), (13, {})):
        x = floats(2, 3, 4)
        got, want, gpu = run_both(node_model(op, {"X": x}, ["Y"], opset=opset, **attrs), [x], allow_fallback=True)
        assert_close(got, want)
        assert all(op in f and "opset" in f for f in gpu.fallbacks), gpu.fallbacks


@pytest.mark.parametrize("op", ["SoftmaxGrad_13", "LogSoftmaxGrad_13"])
def test_softmax_grads(op, path):
    for shape, axis in [((4, 257), -1), ((3, 1000), -1), ((2, 5, 3), 1), ((5, 2), 0)]:
        x = floats(*shape, scale=2.0)
        y = np.exp(x - x.max(axis=axis, keepdims=True))
        y = (y / y.sum(axis=axis, keepdims=True)).astype(np.float32)
        if op == "LogSoftmaxGrad_13":
            y = np.log(y).astype(np.float32)
        dy = floats(*shape)
        n = shape[axis]
        check_node(op, {"dY": dy, "Y": y}, domain=MS, axis=axis, atol=2 * EPS * n * float(np.abs(dy).max()))


# -- ArgMax and ArgMin ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions(op, path):
    for shape, axis in [((3, 257), 1), ((257, 3), 0), ((2, 3, 5), -2), ((4, 1), 1), ((1000,), 0)]:
        x = floats(*shape)
        ties = rng.integers(-2, 3, shape).astype(np.int64)     # many equal values: the first or the last index
        for keepdims in (0, 1):
            check_node(op, {"X": x}, axis=axis, keepdims=keepdims)
            for last in (0, 1):
                check_node(op, {"X": ties}, axis=axis, keepdims=keepdims, select_last_index=last)
                check_node(op, {"X": ties.astype(np.float32)}, axis=axis, keepdims=keepdims, select_last_index=last)


# -- what runs on the CPU --------------------------------------------------------------------------------

def test_fallbacks():
    x = rng.integers(-5, 6, (3, 4)).astype(np.int64)
    model = node_model("ReduceMean", {"X": x}, ["Y"], opset=11, axes=[1])
    got, want, gpu = run_both(model, [x], allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "ReduceMean" in gpu.fallbacks[0] and "int64" in gpu.fallbacks[0]

    f = floats(3, 4)
    axes = np.array([0], np.int64)   # fed at run time (0, so that the CPU fallback's shape probe on zeros holds)
    model = node_model("ReduceSum", {"X": f, "axes": axes}, ["Y"], opset=13)
    got, want, gpu = run_both(model, [f, axes], allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "axes" in gpu.fallbacks[0]


def test_reduce_sum_training_as_reduce_sum():
    x = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float32)
    check_node("ReduceSumTraining", {"X": x}, domain="com.microsoft", initializers={"axes": np.array([0, 2])},
               _input_order=["X", "axes"], keepdims=0)
