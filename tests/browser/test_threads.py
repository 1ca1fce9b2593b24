"""The kernel pool (web/lib/threads.mjs) in Chromium: on a cross-origin isolated page GEMM, convolution, pooling and
the optimizers run on 2 and 4 threads with every result bit-identical to one thread's (and close to numpy's), a
training run's losses identical at 1 and 2 threads; without isolation, 1 thread and a console message saying why."""
import base64
import shutil
import threading

import numpy as np
import pytest

import build
import ort_cases as oc
from browser.conftest import Page

PAGE = """<!doctype html><meta charset="utf-8"><title>threads</title>
<script type="module">
import * as lib from "./onnxtrain/onnxtrain.mjs";
const ARRAYS = { float32: Float32Array, int64: BigInt64Array };
const decode = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const tensor = ([type, text, dims]) => new lib.Tensor(type, new ARRAYS[type](decode(text).buffer), dims);
const asked = new URLSearchParams(location.search).get("threads");
if (asked !== null) lib.env.wasm.numThreads = Number(asked);
window.info = lib.start();
window.lib = lib;
window.python = (code) => lib._engineCall("runPython", { code });
window.train = async (batches) => {
  const s = await lib.TrainingSession.create({ checkpointState: "cnn/checkpoint", trainModel: "cnn/training",
    evalModel: "cnn/eval", optimizerModel: "cnn/optimizer" });
  const losses = [];
  for (const batch of batches) {
    const feeds = Object.fromEntries(s.trainingInputNames.map((n, i) => [n, tensor(batch[i])]));
    const out = await s.runTrainStep(feeds);
    losses.push(out[s.trainingOutputNames[0]].data[0]);
    await s.runOptimizerStep();
    await s.lazyResetGrad();
  }
  await s.release();
  return losses;
};
</script>
"""

# Run in the engine: every pooled kernel at 1, 2 and 4 threads (the pool taking ops of any size), with numpy's
# answer; the result: per case, whether 2 and 4 threads gave one thread's bytes, and the error against numpy.
# Run in the engine first: the pool takes ops of any size, its calls counted.
COUNTED = r"""
from onnxtrain.ops import simd

class Counted:
    def __init__(self, pool):
        self.pool, self.threads, self.calls = pool, pool.threads, 0
    def run(self, *args):
        self.calls += 1
        return self.pool.run(*args)

pool = simd._pool = Counted(simd._pool)
saved = dict(simd.POOL_MIN), simd.POOL_INTENSITY
simd.POOL_MIN.update(dict.fromkeys(saved[0], 0))
simd.POOL_INTENSITY = 0
"""
# and last: the pool and its thresholds as they were
RESTORE = r"""
simd.POOL_MIN.update(saved[0])
simd.POOL_INTENSITY = saved[1]
simd._pool = pool.pool
simd.set_threads(simd._pool.threads)
"""

KERNELS = COUNTED + r"""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
rng = np.random.default_rng(0)
f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)

def windows(x, k, pad, stride, fill=0.0):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    return sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]   # N, C, oh, ow, k, k

def geometry(x, k, pad, stride):
    o = (x.shape[2] + 2 * pad - k) // stride + 1
    return dict(kernel_shape=(k, k), pads=(pad, pad), out=(o, o), strides=(stride, stride), dilations=(1, 1))

cases = {}
def case(name, compute, reference):
    runs = []
    for n in (1, 2, 4):
        simd.set_threads(n)
        before = pool.calls
        outs = compute()
        assert (pool.calls > before) == (n > 1), (name, n)
        runs.append([np.array(o) for o in outs])
    same = [all(a.tobytes() == b.tobytes() for a, b in zip(runs[0], r)) for r in runs[1:]]
    errors = [None if b is None else float(np.max(np.abs(np.float64(a) - b), initial=0.0))
              for a, b in zip(runs[0], reference)]
    cases[name] = [same, errors]

for m, n, k, ta, tb, beta in [(64, 128, 784, False, False, 0.0), (784, 128, 64, True, False, 0.0),
                              (64, 784, 128, False, True, 0.0), (37, 45, 300, False, False, 1.0),
                              (5, 700, 3, True, True, 0.5), (2, 3, 900, False, True, 0.0)]:
    a = f32(k, m).T if ta else f32(m, k)
    b = f32(n, k).T if tb else f32(k, n)
    c = f32(m, n)
    case(f"gemm {m}x{n}x{k} ta={ta} tb={tb} beta={beta}", lambda: [simd.gemm(a, b, c, 0.5, beta)],
         [0.5 * (np.float64(a) @ np.float64(b)) + beta * np.float64(c)])
a, b = f32(6, 20, 30), f32(30, 50)
case("gemm batched", lambda: [simd.gemm(a, b)], [np.float64(a) @ np.float64(b)])

x = f32(3, 5, 11, 11)
for k, pad, stride in [(3, 1, 1), (2, 0, 2), (5, 2, 2)]:
    g = geometry(x, k, pad, stride)
    oh = g["out"][0]
    cols_ref = windows(x, k, pad, stride).transpose(0, 1, 4, 5, 2, 3).reshape(3, 5, k * k, oh, oh)
    case(f"im2col k={k} pad={pad} stride={stride}", lambda: [simd.im2col(x, **g)], [cols_ref])
    cols = f32(3, 5, k * k, oh, oh)
    # the adjoint: <col2im(cols), x> = <cols, im2col(x)>
    name = f"col2im k={k} pad={pad} stride={stride}"
    case(name, lambda: [simd.col2im(cols, x.shape, **g)], [None])
    got = np.sum(np.float64(simd.col2im(cols, x.shape, **g)) * x)
    cases[name][1] = [abs(float(got - np.sum(np.float64(cols) * cols_ref)))]
    case(f"maxpool k={k} pad={pad} stride={stride}",
         lambda: list(simd.maxpool(x, g["kernel_shape"], g["pads"], g["out"], g["strides"], g["dilations"], True)),
         [windows(x, k, pad, stride, -np.inf).max(axis=(4, 5)), None])
    w, bias = f32(5, 1, k, k), f32(5)
    win = np.float64(windows(x, k, pad, stride))
    case(f"depthwise k={k} pad={pad} stride={stride}",
         lambda: [simd.depthwise(x, w, bias, g["pads"], g["out"], g["strides"], g["dilations"])],
         [np.einsum("ncijkl,ckl->ncij", win, np.float64(w[:, 0])) + bias[None, :, None, None]])
    dy = f32(3, 5, oh, oh)
    case(f"depthwise_grad k={k} pad={pad} stride={stride}",
         lambda: list(simd.depthwise_grad(dy, x, w, g["pads"], g["out"], g["strides"], g["dilations"], True, True)),
         [None, np.einsum("ncij,ncijkl->ckl", np.float64(dy), win)[:, None]])

shapes = [(300, 7), (13,), (1000,), (3, 3)]
def adamw(mode):
    ws, gs, m1, m2 = ([f32(*s) for s in shapes] for _ in range(4))
    m2 = [np.abs(v) for v in m2]
    scalars = [0.01, 0.9, 0.999, 0.1, 0.001, 1e-8, 0.01, 0.5, 0.25, 0.02, 0.0001]
    def run():
        copies = [[v.copy() for v in group] for group in (ws, gs, m1, m2)]
        assert simd.adamw(*copies, mode, scalars)
        return copies[0] + copies[2] + copies[3]
    lr, a, b, one_a, one_b, eps, wd, ac, bc, lr_c, lr_wd = np.array(scalars, np.float32)
    want = [[], [], []]
    for w_, g_, m_, v_ in zip(ws, gs, m1, m2):
        m_ = m_ * a + one_a * g_
        v_ = v_ * b + (one_b * g_) * g_
        if mode == 0:
            w_ = (w_ - (w_ * lr) * wd) - (lr * m_) / ((np.sqrt(v_ / bc) + eps) * ac)
        else:
            w_ = w_ - (lr_c * m_) / (np.sqrt(v_) + eps)
            w_ = w_ - lr_wd * w_
        for i, v in enumerate((w_, m_, v_)):
            want[i].append(v)
    case(f"adamw mode {mode}", run, want[0] + want[1] + want[2])
adamw(0)
adamw(1)
ws, gs = [f32(*s) for s in shapes], [f32(*s) for s in shapes]
def sgd():
    copies = [w.copy() for w in ws]
    assert simd.sgd(copies, gs, -0.125)
    return copies
case("sgd", sgd, [w + np.float32(-0.125) * g for w, g in zip(ws, gs)])
""" + RESTORE + "cases"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    if not (build.TEST_SITE / build.LIBRARY / "onnxtrain.mjs").exists():
        pytest.fail(f"{build.TEST_SITE} has no library: run the tests through `python3 build.py test`")
    root = tmp_path_factory.mktemp("threads")
    shutil.copytree(build.TEST_SITE / build.LIBRARY, root / "onnxtrain", copy_function=build.link_or_copy)
    (root / "index.html").write_text(PAGE)
    (root / "cnn").mkdir()
    for kind, path in oc.files("cnn_ce_adamw").items():
        if path is not None:
            shutil.copy2(path, root / "cnn" / kind)
    return root


def served(root, isolate):
    server = build.make_server(root, 0, isolate=isolate)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def opened(browser, url):
    context = browser.new_context()
    page = Page(context, context.new_page(), url)
    page.page.goto(url)
    page.info = page.page.evaluate("() => window.info")
    return page


@pytest.fixture(scope="module")
def isolated(browser, root):
    server, url = served(root, True)
    page = opened(browser, url + "?threads=4")
    yield page
    page.context.close()
    server.shutdown()


def test_kernels_on_2_and_4_threads_are_one_threads(isolated):
    assert isolated.page.evaluate("() => crossOriginIsolated")
    assert isolated.info["threads"] == 4 and isolated.info["threadsNote"] is None, isolated.info
    cases = isolated.page.evaluate("(code) => python(code)", KERNELS)
    assert len(cases) == 7 + 5 * 3 + 3, sorted(cases)
    for name, (same, errors) in cases.items():
        assert same == [True, True], name
        assert any(error is not None for error in errors), name
        for error in errors:
            assert error is None or error <= 1e-3, (name, errors)


def wire(array):
    array = np.ascontiguousarray(array)
    return [array.dtype.name, base64.b64encode(array.tobytes()).decode(), list(array.shape)]


# The page's sessions on the numpy provider (whose kernels the pool takes), and back on the default, the wasm one.
ON_NUMPY = r"""
from onnxtrain.api import module as _module
from onnxtrain.runtime.provider import NUMPY
_open = _module.open_provider
_module.open_provider = lambda device="cpu", threads=0: NUMPY if device == "cpu" else _open(device, threads)
"""
OFF_NUMPY = "_module.open_provider = _open\n"


def test_training_losses_same_on_1_and_2_threads(isolated):
    batches = [[wire(x) for x in batch] for batch in oc.batches("cnn_ce_adamw", 3)]
    python = lambda code: isolated.page.evaluate("(code) => python(code)", code)  # noqa: E731
    assert python(COUNTED + ON_NUMPY + "simd.set_threads(1)\npool.calls") == 0
    one = isolated.page.evaluate("(batches) => train(batches)", batches)
    assert python("simd.set_threads(2)\npool.calls") == 0
    two = isolated.page.evaluate("(batches) => train(batches)", batches)
    assert python("calls = pool.calls\n" + RESTORE + OFF_NUMPY + "calls") > 0
    assert len(one) == 3 and all(np.isfinite(one))
    assert one == two
    # the wasm provider, the default: each step one program of the kernel module, the numpy provider's losses
    wasm = isolated.page.evaluate("(batches) => train(batches)", batches)
    np.testing.assert_allclose(wasm, one, rtol=1e-6)


def test_training_on_the_pools_threads_is_one_threads_bits(isolated):
    """At 2 and 4 threads the wasm provider places the session in the pool's memory and runs each program on the
    threads (web/kernels' run_program_threads), the engine answering the steps after the first itself; at 1 thread
    it runs in the kernel module's own memory.  The losses and the trained parameters are the same bits."""
    batches = [[wire(x) for x in batch] for batch in oc.batches("cnn_ce_adamw", 5)]
    python = lambda code: isolated.page.evaluate("(code) => python(code)", code)  # noqa: E731
    steps = lambda: isolated.page.evaluate("async () => (await lib._engineCall('fastSteps')).steps")  # noqa: E731
    provider = ("from onnxtrain.ops import simd\nfrom onnxtrain.providers import open_provider\n"
                "simd.set_threads({})\ntype(open_provider()).__name__")
    runs = {}
    for threads, kind in ((1, "WasmProvider"), (2, "WasmPoolProvider"), (4, "WasmPoolProvider")):
        assert python(provider.format(threads)) == kind
        before = steps()
        runs[threads] = isolated.page.evaluate("(batches) => train(batches)", batches)
        assert steps() - before >= 3, f"the engine answered the steps at {threads} threads"
    python("simd.set_threads(simd._pool.threads)")
    assert len(runs[1]) == 5 and all(np.isfinite(runs[1]))
    assert runs[2] == runs[1] and runs[4] == runs[1]


def test_without_isolation_one_thread_and_why(browser, root):
    server, url = served(root, False)
    try:
        page = opened(browser, url + "?threads=2")
        assert page.info["threads"] == 1
        assert "cross-origin isolated" in page.info["threadsNote"]
        assert any("1 thread, not 2" in line and "Cross-Origin-Embedder-Policy" in line for line in page.console)
        page.context.close()
    finally:
        server.shutdown()


def test_default_thread_count(browser, root):
    server, url = served(root, True)
    try:
        page = opened(browser, url)
        cores = page.page.evaluate("() => navigator.hardwareConcurrency")
        assert page.info["threads"] == min(4, -(-cores // 2))
        page.context.close()
    finally:
        server.shutdown()


def test_the_apps_status_line_says_the_threads(site_page):
    page = site_page.page
    page.wait_for_function("() => document.querySelector('#status').textContent.startsWith('Ready')")
    status = page.text_content("#status")
    if min(4, -(-page.evaluate("() => navigator.hardwareConcurrency") // 2)) > 1:  # the test site is not isolated
        assert " on 1 thread (the page is not cross-origin isolated: SharedArrayBuffer needs" in status, status
    else:
        assert " on 1 thread; computing on " in status, status


# Run in the engine: a forward model on the wasm provider at 1, 2 and 4 threads, the pool's program calls counted;
# the result: per thread count, the outputs' bytes (base64) and the calls.
SPLIT = r"""
import base64
import numpy as np
from onnxtrain import ir
from onnxtrain.ops import simd
from onnxtrain.runtime import Session
from onnxtrain.wasm.provider import open_provider

class Counted:
    def __init__(self, pool):
        self.pool, self.threads, self.calls = pool, pool.threads, 0
    def run(self, *args):
        return self.pool.run(*args)
    def runProgram(self, *args):
        self.calls += 1
        return self.pool.runProgram(*args)

pool = simd._pool = Counted(simd._pool)
model = ir.load(base64.b64decode(MODEL))
x = np.random.default_rng(0).standard_normal((8, *SHAPE)).astype(np.float32)
out = {}
try:
    for threads in (1, 2, 4):
        simd.set_threads(threads)
        before = pool.calls
        session = Session(model, open_provider())
        y = session.run([x])[0]
        out[threads] = [base64.b64encode(y.tobytes()).decode(), pool.calls - before, list(y.shape)]
finally:
    simd._pool = pool.pool
    simd.set_threads(simd._pool.threads)
out
"""


def test_a_forward_batch_splits_over_the_threads_with_one_threads_results(isolated):
    forward = oc.CASES["cnn_ce_adamw"].forward()
    shape = [d.dim_value for d in forward.graph.input[0].type.tensor_type.shape.dim][1:]
    code = SPLIT.replace("MODEL", repr(base64.b64encode(forward.SerializeToString()).decode()))
    got = isolated.page.evaluate("(code) => python(code)", code.replace("SHAPE", repr(tuple(shape))))
    outputs = {int(k): (np.frombuffer(base64.b64decode(v[0]), np.float32), v[1], v[2]) for k, v in got.items()}
    assert [outputs[t][1] for t in (1, 2, 4)] == [0, 1, 1]      # one pool call a run once there are threads
    assert outputs[1][2] == outputs[2][2] == outputs[4][2] and outputs[1][2][0] == 8
    for threads in (2, 4):
        np.testing.assert_allclose(outputs[threads][0], outputs[1][0], rtol=1e-6, atol=1e-6)
