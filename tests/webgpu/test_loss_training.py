"""Loss and in-place training WGSL kernels against the CPU kernels (themselves checked against onnxruntime).

The optimizers and InplaceClipGradNorm update sequences of parameters in place: their tests feed GPU buffers that
outlive the run (residents), read them back after each run, and compare them with the arrays the CPU kernels
updated."""
import numpy as np
import pytest

from gpu_cases import (assert_close, check_node, gpu_session, make_model, make_node, node_model, run_both,
                       sequence_info, tensor, tensor_info)
from onnxtrain.ir.dtypes import DataType
from onnxtrain.runtime import Session
from onnxtrain.runtime.allocate import Buffer
from onnxtrain.runtime.program import Program, Storage
from onnxtrain.runtime.program import Tensor as GPUTensor
from onnxtrain.runtime.residency import Resident as RuntimeResident
from onnxtrain.webgpu import open_provider
from onnxtrain.webgpu.lowering import Dispatch, pack_params
from onnxtrain.webgpu.shaders import shader
from onnxtrain.webgpu.tensors import from_gpu_bytes, to_gpu_array

IN_PYODIDE = True
MS = "com.microsoft"
rng = np.random.default_rng(0)


def floats(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def labels(shape, classes, ignore=None):
    out = rng.integers(0, classes, shape).astype(np.int64)
    if ignore is not None:
        out.reshape(-1)[::3] = ignore
    return out


# -- losses ---------------------------------------------------------------------------------------

LOSS_CASES = {
    "2d": dict(shape=(5, 37)),
    "weights": dict(shape=(6, 9), weights=True),
    "ignore": dict(shape=(7, 5), ignore=2),
    "3d-weights-ignore": dict(shape=(3, 4, 5, 2), weights=True, ignore=-1),
    "wide": dict(shape=(3, 300)),
}


def loss_inputs(shape, weights=False, ignore=None):
    scores = floats(*shape, scale=3.0)
    inputs = {"scores": scores, "labels": labels(shape[:1] + shape[2:], shape[1], ignore)}
    if weights:
        inputs["weights"] = np.abs(floats(shape[1])) + 0.1
    attrs = {} if ignore is None else {"ignore_index": ignore}
    return inputs, attrs


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("case", LOSS_CASES.values(), ids=LOSS_CASES.keys())
def test_softmax_cross_entropy_loss(case, reduction):
    inputs, attrs = loss_inputs(**case)
    check_node("SoftmaxCrossEntropyLoss", inputs, ["loss", "log_prob"], reduction=reduction, **attrs)


def test_softmax_cross_entropy_loss_alone_and_all_ignored():
    inputs, _ = loss_inputs((4, 6))
    check_node("SoftmaxCrossEntropyLoss", inputs, ["loss"])
    inputs["labels"][:] = 3
    check_node("SoftmaxCrossEntropyLoss", inputs, ["loss", "log_prob"], ignore_index=3)   # the (zero) sum
    check_node("NegativeLogLikelihoodLoss", {"x": inputs["scores"], "t": inputs["labels"]}, ignore_index=3)  # NaN


@pytest.mark.parametrize("case", ["weights", "3d-weights-ignore"])
def test_softmax_cross_entropy_loss_internal(case):
    inputs, attrs = loss_inputs(**LOSS_CASES[case])
    inputs.setdefault("weights", np.ones(inputs["scores"].shape[1], np.float32))
    inputs["ignore_index"] = np.array(attrs.get("ignore_index", -100), np.int64)
    check_node("SoftmaxCrossEntropyLossInternal", inputs, ["loss", "log_prob"], domain=MS, output_type=1)
    fed = dict(inputs)
    ignore = {"ignore_index": fed.pop("ignore_index")}
    check_node("SoftmaxCrossEntropyLossInternal", fed, ["loss", "log_prob"], domain=MS, initializers=ignore,
               reduction="sum", _input_order=list(fed) + ["ignore_index"])


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("case", ["2d", "weights", "ignore", "3d-weights-ignore"])
def test_nll_loss(case, reduction):
    inputs, attrs = loss_inputs(**LOSS_CASES[case])
    inputs["scores"] = (inputs["scores"] - 4).astype(np.float32)
    check_node("NegativeLogLikelihoodLoss", inputs, reduction=reduction, **attrs)
    if "ignore_index" in attrs:
        inputs.setdefault("weights", np.ones(inputs["scores"].shape[1], np.float32))
        inputs["ignore_index"] = np.array(attrs["ignore_index"], np.int64)
        check_node("NegativeLogLikelihoodLossInternal2", inputs, domain=MS, reduction=reduction)
        check_node("NegativeLogLikelihoodLossInternal", inputs, domain=MS, reduction=reduction)


def grad_inputs(case, reduction):
    inputs, attrs = loss_inputs(**LOSS_CASES[case])
    scores = inputs.pop("scores")
    log_prob = scores - scores.max(1, keepdims=True)
    log_prob = (log_prob - np.log(np.exp(log_prob).sum(1, keepdims=True))).astype(np.float32)
    dy = floats(*inputs["labels"].shape) if reduction == "none" else np.array(1.7, np.float32)
    return {"dY": dy, "log_prob": log_prob, **inputs}, attrs


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("case", LOSS_CASES.keys())
def test_softmax_cross_entropy_loss_grad(case, reduction):
    inputs, attrs = grad_inputs(case, reduction)
    check_node("SoftmaxCrossEntropyLossGrad", inputs, domain=MS, reduction=reduction, **attrs)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_softmax_cross_entropy_loss_internal_grad(reduction):
    inputs, _ = grad_inputs("3d-weights-ignore", reduction)
    inputs["ignore_index"] = np.array(-1, np.int64)
    inputs["bias"] = floats(*inputs["log_prob"].shape)
    check_node("SoftmaxCrossEntropyLossInternalGrad", inputs, domain=MS, reduction=reduction)
    inputs.pop("bias")
    inputs["labels"][:] = -1                    # every label ignored: the mean's scale stays dY
    check_node("SoftmaxCrossEntropyLossInternalGrad", inputs, domain=MS, reduction=reduction)


def test_empty_batch_falls_back():
    gpu = gpu_session(node_model("NegativeLogLikelihoodLoss", {"x": floats(0, 4), "t": labels((0,), 4)}, ["Y"],
                                   reduction="sum"))
    got, want, gpu = run_both(gpu.model, [floats(0, 4), labels((0,), 4)], allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "empty scores" in gpu.fallbacks[0]


def test_loss_is_deterministic():
    inputs, attrs = loss_inputs((700, 3, 5), weights=True, ignore=1)
    model = node_model("SoftmaxCrossEntropyLoss", inputs, ["loss", "log_prob"], **attrs)
    got, want, gpu = run_both(model, list(inputs.values()))
    assert_close(got, want)
    again = gpu.run(list(inputs.values()))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(got, again))


# -- InPlaceAccumulatorV2 ---------------------------------------------------------------------------

FLAGS = {"noflag": None, "overwrite": np.array([True]), "accumulate": np.array([False]),
         "overwrite-scalar": np.array(True)}


@pytest.mark.parametrize("flag", FLAGS.values(), ids=FLAGS.keys())
@pytest.mark.parametrize("shapes", [((4, 67), (4, 67)), ((3, 5), (5,)), ((), ())], ids=["same", "broadcast", "0d"])
def test_in_place_accumulator(shapes, flag):
    inputs = {"buffer": floats(*shapes[0]), "value": floats(*shapes[1])}
    if flag is not None:
        inputs["flag"] = flag
    check_node("InPlaceAccumulatorV2", inputs, ["updated", "out"], domain=MS)


# -- optimizers and clipping, on residents ----------------------------------------------------------

class Resident(RuntimeResident):
    """A GPU buffer fed to a session in place of an array (a parameter, gradient or moment)."""
    __slots__ = ()

    def __init__(self, device, array):
        super().__init__(device.buffer(max(4, array.nbytes), "a test resident"), array.shape, array.dtype)
        device.write(self.buffer, to_gpu_array(array, "a test resident"))

    def read(self, device):
        nbytes = 4 * int(np.prod(self.shape))
        return from_gpu_bytes(device.read([(self.buffer, nbytes)])[0], self.dtype, self.shape)


def seq_model(op, inputs: list, outputs: list, initializers=None, **attrs):
    """A one-node model: ``inputs`` [(name, array or list of arrays)], fed, then ``initializers`` {name: array},
    ``outputs`` [(name, is a sequence)]."""
    initializers = initializers or {}
    def info(name, value):
        if isinstance(value, list):
            return sequence_info(name, DataType.FLOAT)
        elem = {np.dtype(np.float32): DataType.FLOAT, np.dtype(np.int64): DataType.INT64,
                np.dtype(np.bool_): DataType.BOOL}[np.asarray(value).dtype]
        return tensor_info(name, elem)
    node = make_node(op, [n for n, _ in inputs] + list(initializers), [n for n, _ in outputs], domain=MS, **attrs)
    outs = [sequence_info(n, DataType.FLOAT) if seq else tensor_info(n) for n, seq in outputs]
    return make_model([node], op, [info(n, v) for n, v in inputs], outs,
                      [tensor(n, v) for n, v in initializers.items()], {"": 17, MS: 1})


def params(shapes, seed, scale=1.0, positive=False):
    r = np.random.default_rng(seed)
    out = [(r.standard_normal(s) * scale).astype(np.float32) for s in shapes]
    return [np.abs(a) for a in out] if positive else out


SHAPES = [(5, 3), (300,), (2, 3, 4), (1,)]


def run_steps(op, state: dict, fed: dict, steps, outputs, rtol=1e-5, atol=1e-6, initializers=None, **attrs):
    """Run ``op`` for each feed of ``steps`` (a dict of the non-sequence inputs per step), sequences in ``state``
    held on the GPU as residents and on the CPU as arrays updated in place; after each step, compare them."""
    device = open_provider().device
    names = list(fed) + list(state)
    first = {**fed, **steps[0], **state}
    model = seq_model(op, [(n, first[n]) for n in names], outputs, initializers, **attrs)
    gpu, cpu = gpu_session(model, device), Session(model)
    residents = {n: [Resident(device, a) for a in seq] for n, seq in state.items()}
    host = {n: [a.copy() for a in seq] for n, seq in state.items()}
    for feeds in steps:
        feeds = {**fed, **feeds}
        got = gpu.run([feeds[n] if n in feeds else residents[n] for n in names], 
                      output_names=[] if outputs[0][1] else [outputs[0][0]])
        want = cpu.run([feeds[n] if n in feeds else host[n] for n in names])
        assert gpu.fallbacks == []
        if not outputs[0][1]:
            assert_close(got, want[:1])
        for n in state:
            assert_close([r.read(device) for r in residents[n]], host[n], rtol, atol)
    return gpu, residents, host


ADAMW = {
    "mode0-decay": dict(alpha=0.8, beta=0.99, weight_decay=0.1, adam_mode=0),
    "mode1-decay": dict(epsilon=1e-6, weight_decay=0.05, adam_mode=1),
    "mode1-nobias": dict(weight_decay=0.01, correct_bias=0, adam_mode=1),
}


@pytest.mark.parametrize("attrs", ADAMW.values(), ids=ADAMW.keys())
def test_adamw_steps(attrs):
    state = {"weights": params(SHAPES, 1), "gradients": params(SHAPES, 2),
             "m1": params(SHAPES, 3, 0.1), "m2": params(SHAPES, 4, 0.01, positive=True)}
    steps = [{"step": np.array([t], np.int64)} for t in (1, 2, 3, 10, 1000)]
    _, _, host = run_steps("AdamWOptimizer", state, {"lr": np.array([0.01], np.float32), "step": None}, steps,
              [("flag", False), ("w", True), ("m1_out", True), ("m2_out", True)], **attrs)
    assert not any(np.array_equal(a, b) for a, b in zip(host["weights"] + host["m1"], state["weights"] + state["m1"]))


@pytest.mark.parametrize("signal", [True, False])
def test_adamw_with_a_known_update_signal(signal):
    state = {"weights": params(SHAPES, 1), "gradients": params(SHAPES, 2),
             "m1": params(SHAPES, 3, 0.1), "m2": params(SHAPES, 4, 0.01, positive=True)}
    fed = {"lr": np.array([0.01], np.float32), "step": np.array([3], np.int64)}
    _, residents, _ = run_steps("AdamWOptimizer", state, fed, [{}],
                                [("flag", False), ("w", True), ("m1_out", True), ("m2_out", True)],
                                initializers={"signal": np.array([signal])})
    assert (np.array_equal(residents["weights"][1].read(open_provider().device), state["weights"][1])) != signal


def test_sgd_steps():
    state = {"weights": params(SHAPES, 5), "gradients": params(SHAPES, 6)}
    steps = [{"lr": np.array([lr], np.float32)} for lr in (0.1, 0.03)]
    _, _, host = run_steps("SGDOptimizerV2", state, {"lr": None}, steps, [("flag", False), ("w", True)])
    np.testing.assert_allclose(host["weights"][0], state["weights"][0] - 0.13 * state["gradients"][0], rtol=1e-5)


@pytest.mark.parametrize("max_norm", [1.0, 1e4])
def test_clip_grad_norm(max_norm):
    state = {"gradients": params([(70, 81), (7,), (3, 5)], 7)}
    _, _, host = run_steps("InplaceClipGradNorm", state, {}, [{}, {}], [("out", True)], max_norm=max_norm)
    norm = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in host["gradients"]))
    assert norm == pytest.approx(min(max_norm, norm), rel=1e-5)


def test_clip_grad_norm_is_deterministic():
    device = open_provider().device
    grads = params([(257, 130), (33,)], 8, scale=10.0)
    model = seq_model("InplaceClipGradNorm", [("gradients", grads)], [("out", True)], max_norm=0.5)
    gpu = gpu_session(model, device)
    results = []
    for _ in range(2):
        residents = [Resident(device, g) for g in grads]
        gpu.run([residents], output_names=[])
        results.append(b"".join(r.read(device).tobytes() for r in residents))
    assert results[0] == results[1]


def test_adamw_bias_correction_matches_the_cpu():
    """The f32 bias corrections from the step on the GPU equal the CPU's (a power in double, rounded to f32)."""
    steps = [1, 2, 3, 7, 10, 99, 1000, 4321, 100000]
    for alpha, beta in ((0.9, 0.999), (0.8, 0.99), (0.95, 0.9999)):
        for t in steps:
            got = adamw_scalars(0.01, t, alpha, beta)
            a, b = np.float32(alpha), np.float32(beta)
            ac, bc = np.float32(1) - np.float32(float(a) ** t), np.float32(1) - np.float32(float(b) ** t)
            lr_c = np.float32(0.01) * (np.sqrt(bc) / ac)
            np.testing.assert_array_equal(got[1:3], [ac, bc], err_msg=f"step {t}")
            np.testing.assert_allclose(got[3], lr_c, rtol=3e-7, err_msg=f"step {t}")


def adamw_scalars(lr, step, alpha, beta):
    """loss_training_adamw_scalars run on its own, as a program of that one dispatch (which the page's device runs
    as well as wgpu's): [lr, ac, bc, lr_c, lr * wd]."""
    lr_in, step_in = Storage(4, "feed", index=0), Storage(4, "feed", index=1)
    out = Storage(32, written=True, index=2)
    dispatch = Dispatch(shader("loss_training_adamw_scalars"), [lr_in, step_in], [out],
                        pack_params([float(alpha), float(beta), 0.0, 1]), (1, 1, 1), [4, 4, 32])
    program = Program([dispatch], [Buffer(4, "feed"), Buffer(4, "feed"), Buffer(32, "temp")],
                      [(0, None, lr_in), (1, None, step_in)], [GPUTensor((8,), np.dtype(np.float32), out)])
    runner = open_provider().runner(program)
    try:
        return runner.run([np.array([lr], np.float32), np.array([step], np.int32)], [0])[0]
    finally:
        runner.release()
