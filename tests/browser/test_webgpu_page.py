"""WebGPU in the page: inside the engine's worker, Programs run on navigator.gpu (web/lib/webgpu.mjs, through
onnxtrain/webgpu/page.py) and equal the CPU Session, with one call from Python into the page per run.  Chromium
runs headless with --enable-unsafe-webgpu (its SwiftShader adapter, even with --disable-gpu); without the flag
there is no adapter, and the WebGPU provider says so."""
import base64
import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import build
from browser.conftest import CHROMIUM_ARGS, opened_site
from browser.test_in_pyodide import run_inside, webgpu_modules, webgpu_support

WEBGPU_ARGS = CHROMIUM_ARGS + ["--enable-unsafe-webgpu"]


def model_bytes(round_too: bool = False) -> str:
    """Y = Gelu(Relu(A + B) * 0.5), Z = Relu(A + B), base64; with ``round_too`` a Round (no WGSL kernel: it runs
    on the CPU) after the Add."""
    nodes = [helper.make_node("Add", ["A", "B"], ["S"])]
    if round_too:
        nodes.append(helper.make_node("Round", ["S"], ["R"]))
    nodes += [helper.make_node("Relu", ["R" if round_too else "S"], ["Z"]),
              helper.make_node("Mul", ["Z", "half"], ["H"]),
              helper.make_node("Gelu", ["H"], ["Y"])]
    graph = helper.make_graph(
        nodes, "page", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "AB"],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "YZ"],
        [numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=8)
    return base64.b64encode(model.SerializeToString()).decode()


# Runs the model on WebGPU and on the CPU for feeds of SHAPES: per run the largest difference, the calls into
# the page's WebGPU host and the submissions; the fallbacks.
RUN_BOTH = """
import base64, json
import numpy as np
from onnxtrain import ir
from onnxtrain.runtime import Session
from onnxtrain.webgpu import open_provider

def run_both(model_b64, shapes):
    model = ir.load(base64.b64decode(model_b64))
    gpu, cpu = Session(model, open_provider()), Session(model)
    device, rng = gpu.provider.device, np.random.default_rng(0)
    out = {"diff": [], "calls": [], "submissions": [], "adapter": device.adapter_info}
    for shape in shapes:
        a, b = (rng.standard_normal(shape).astype(np.float32) * 3 for _ in range(2))
        calls, submissions = device.bridge_calls, device.submissions
        got = gpu.run([a, b])
        out["calls"].append(device.bridge_calls - calls)
        out["submissions"].append(device.submissions - submissions)
        want = cpu.run([a, b])
        assert [g.shape for g in got] == [w.shape for w in want]
        out["diff"].append(max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)))
    out["fallbacks"] = gpu.fallbacks
    out["held"] = device.bytes_held
    gpu.release()
    return json.dumps(out)
"""

SHAPES = [[4, 70], [4, 70], [4, 70], [3, 1]]


@pytest.fixture(scope="module")
def gpu_browser(browser):
    """A second Chromium, with WebGPU, from the Playwright of conftest's (one Playwright per process)."""
    b = browser.browser_type.launch(executable_path=str(build.CHROMIUM), args=WEBGPU_ARGS)
    yield b
    b.close()


@pytest.fixture(scope="module")
def gpu_page(gpu_browser, site_url):
    yield from opened_site(gpu_browser, site_url)


def python(page, code: str):
    return page.call("runPython", {"code": code})


def test_a_model_on_webgpu_equals_the_cpu_with_one_call_per_run(gpu_page):
    out = json.loads(python(gpu_page, RUN_BOTH + f"run_both({model_bytes()!r}, {SHAPES!r})"))
    assert out["adapter"]["vendor"] and out["adapter"]["backend_type"] == "navigator.gpu", out["adapter"]
    assert out["fallbacks"] == []
    assert max(out["diff"]) < 1e-5, out["diff"]
    # a new program is sent once (one more call); every run then is one call and one submission
    assert out["calls"] == [2, 1, 1, 2], out["calls"]
    assert out["submissions"] == [1, 1, 1, 1], out["submissions"]


def test_a_node_on_the_cpu_splits_the_run(gpu_page):
    out = json.loads(python(gpu_page, RUN_BOTH + f"run_both({model_bytes(True)!r}, {SHAPES[:2]!r})"))
    assert len(out["fallbacks"]) == 1 and "Round" in out["fallbacks"][0], out["fallbacks"]
    assert max(out["diff"]) < 1e-5, out["diff"]
    # the first segment, the read of Round's input, the write of its output, the second segment
    assert out["calls"][1] == 4, out["calls"]


def test_the_engine_requests_can_wait_for_the_gpu(gpu_page):
    """A request through the engine's registry (entered with callPromising) runs WebGPU as runPython does."""
    python(gpu_page, RUN_BOTH + "import onnxtrain.web.sessions as s\n"
                                "s.FUNCTIONS['webgpu_probe'] = lambda args: run_both(*args)")
    out = json.loads(gpu_page.call("webgpu_probe", [model_bytes(), SHAPES[:2]]))
    assert out["fallbacks"] == [] and max(out["diff"]) < 1e-5 and out["calls"][1] == 1, out


def test_module_trains_on_webgpu_as_on_the_cpu(gpu_page, site_url):
    """The site's mlp artifacts: Module(device="webgpu") and the CPU give the same losses and parameters."""
    code = f"""
import json, os
import numpy as np
from js import fetch
from onnxtrain import api
os.makedirs("/tmp/mlp", exist_ok=True)
for name in ("checkpoint", "training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
    data = await (await fetch("{site_url}artifacts/mlp/" + name)).arrayBuffer()
    with open("/tmp/mlp/" + name, "wb") as f:
        f.write(data.to_bytes())

def train(device):
    rng = np.random.default_rng(0)
    state = api.CheckpointState.load_checkpoint("/tmp/mlp/checkpoint")
    module = api.Module("/tmp/mlp/training_model.onnx", state, "/tmp/mlp/eval_model.onnx", device=device)
    optimizer = api.Optimizer("/tmp/mlp/optimizer_model.onnx", module)
    losses = []
    for _ in range(3):
        x = rng.standard_normal((8, 20)).astype(np.float32)
        labels = rng.integers(0, 5, 8).astype(np.int64)
        out = module(x, labels)
        losses.append(float(np.asarray(out[0] if isinstance(out, (list, tuple)) else out)))
        optimizer.step()
        module.lazy_reset_grad()
    return losses, module.get_contiguous_parameters(True).copy(), module

cpu_losses, cpu_params, _ = train("cpu")
gpu_losses, gpu_params, gpu = train("webgpu")
json.dumps({{"cpu": cpu_losses, "gpu": gpu_losses, "params": float(np.max(np.abs(gpu_params - cpu_params))),
            "scale": float(np.max(np.abs(cpu_params))), "report": gpu.device_report()}})
"""
    out = json.loads(python(gpu_page, code))
    np.testing.assert_allclose(out["gpu"], out["cpu"], rtol=1e-4)
    assert out["params"] <= 1e-4 * out["scale"], out
    assert out["report"]["device"] == "webgpu" and out["report"]["fallbacks"]["train"] == [], out["report"]


def test_without_the_flag_there_is_no_adapter(site_page):
    """The tests' usual Chromium (no --enable-unsafe-webgpu): the WebGPU provider raises NoAdapterError."""
    code = f"""
import base64
from onnxtrain import ir
from onnxtrain.runtime import Session
from onnxtrain.webgpu import NoAdapterError, open_provider
try:
    Session(ir.load(base64.b64decode({model_bytes()!r})), open_provider())
    message = None
except NoAdapterError as e:
    message = str(e)
message
"""
    message = python(site_page, code)
    assert message and "WebGPU" in message and "adapter" in message, message


# TrainingSession.create with onnxruntime-web's executionProviders, through the library as a page uses it: the
# site's mlp artifacts, three steps on fixed data; the losses, parameters and the provider, or the error.
LIBRARY_STEPS = """async (providers) => {
    const lib = await import("./onnxtrain/onnxtrain.mjs");
    const files = { checkpointState: "artifacts/mlp/checkpoint", trainModel: "artifacts/mlp/training_model.onnx",
                    evalModel: "artifacts/mlp/eval_model.onnx", optimizerModel: "artifacts/mlp/optimizer_model.onnx" };
    let session;
    try {
        session = await lib.TrainingSession.create(files, providers === null ? {} : { executionProviders: providers });
    } catch (e) {
        return { error: String(e.message || e) };
    }
    const losses = [];
    for (let step = 0; step < 3; step++) {
        const x = Float32Array.from({ length: 8 * 20 }, (_, i) => Math.sin(i * 0.37 + step));
        const y = BigInt64Array.from({ length: 8 }, (_, i) => BigInt((i + step) % 5));
        const feeds = { [session.trainingInputNames[0]]: new lib.Tensor("float32", x, [8, 20]),
                        [session.trainingInputNames[1]]: new lib.Tensor("int64", y, [8]) };
        const out = await session.runTrainStep(feeds);
        losses.push(out[session.trainingOutputNames[0]].data[0]);
        await session.runOptimizerStep();
        await session.lazyResetGrad();
    }
    // then train(): the Trainer's guarded steps (on WebGPU a snapshot and a non-finite count in each step's
    // submission), two epochs of 32 rows
    const x = Float32Array.from({ length: 32 * 20 }, (_, i) => Math.cos(i * 0.11));
    const y = BigInt64Array.from({ length: 32 }, (_, i) => BigInt(i % 5));
    const summary = await session.train({ [session.trainingInputNames[0]]: new lib.Tensor("float32", x, [32, 20]),
                                          [session.trainingInputNames[1]]: new lib.Tensor("int64", y, [32]) },
                                        { epochs: 2, batchSize: 8, learningRate: 0.01, shuffle: false });
    const params = Array.from((await session.getContiguousParameters(true)).data);
    const provider = session.executionProvider;
    await session.release();
    return { losses, params, provider, trained: summary.loss };
}"""


def test_training_session_takes_execution_providers(gpu_page):
    page = gpu_page.page
    gpu = page.evaluate(LIBRARY_STEPS, ["webgpu"])
    cpu = page.evaluate(LIBRARY_STEPS, ["wasm"])
    assert gpu["provider"] == "webgpu" and cpu["provider"] == "wasm", (gpu, cpu)
    np.testing.assert_allclose(gpu["losses"], cpu["losses"], rtol=1e-4)
    np.testing.assert_allclose(gpu["trained"], cpu["trained"], rtol=1e-4)
    np.testing.assert_allclose(gpu["params"], cpu["params"], rtol=1e-4, atol=1e-4 * np.abs(cpu["params"]).max())
    assert page.evaluate(LIBRARY_STEPS, [{"name": "webgpu"}, "wasm"])["provider"] == "webgpu"


def test_webgpu_without_an_adapter_falls_back_only_when_asked(site_page):
    page = site_page.page
    alone = page.evaluate(LIBRARY_STEPS, ["webgpu"])
    assert "WebGPU" in alone.get("error", "") and "adapter" in alone["error"], alone
    assert page.evaluate(LIBRARY_STEPS, ["webgpu", "wasm"])["provider"] == "wasm"
    assert page.evaluate(LIBRARY_STEPS, None)["provider"] == "wasm"
    assert "unknown execution provider 'cuda'" in page.evaluate(LIBRARY_STEPS, ["cuda"])["error"]


# PersonalizeTask on the site's backbone with executionProviders: one sample per class of two flat colours, the
# head trained a few epochs, a prediction; lavapipe-like software WebGPU embeds slowly, so images are small.
PERSONALIZE = """async (providers) => {
    const lib = await import("./onnxtrain/onnxtrain.mjs");
    const task = await lib.PersonalizeTask.create("artifacts/efficientnet_lite0/backbone.onnx",
                                                  { executionProviders: providers });
    const image = (r, g, b) => {
        const px = new Uint8Array(32 * 32 * 4);
        for (let i = 0; i < px.length; i += 4) px.set([r + (i % 7), g, b + (i % 5), 255], i);
        return px;
    };
    for (const [name, rgb] of [["red", [200, 30, 30]], ["blue", [30, 30, 200]]]) {
        const index = await task.addClass(name);
        await task.addSamples(image(...rgb), { width: 32, height: 32, count: 1 }, index);
    }
    await task.setup();
    const summary = await task.train({ epochs: 3, batchSize: 2, learningRate: 0.003 });
    const prediction = await task.predict(image(190, 40, 40), { width: 32, height: 32, count: 1 });
    const info = await task.info();
    await task.release();
    return { provider: info.executionProvider, loss: summary.loss, probabilities: prediction.probabilities };
}"""


def test_personalize_task_takes_execution_providers(gpu_page):
    page = gpu_page.page
    gpu = page.evaluate(PERSONALIZE, ["webgpu"])
    cpu = page.evaluate(PERSONALIZE, ["wasm"])
    assert gpu["provider"] == "webgpu" and cpu["provider"] == "wasm"
    np.testing.assert_allclose(gpu["loss"], cpu["loss"], rtol=1e-4)
    np.testing.assert_allclose(gpu["probabilities"], cpu["probabilities"], rtol=1e-4, atol=1e-6)


def test_the_app_computes_on_webgpu_where_there_is_an_adapter_and_offers_the_choice(gpu_page, site_page):
    page = gpu_page.page
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('Ready')")
    assert "computing on the GPU (WebGPU)" in page.text_content("#status")
    assert page.input_value("#compute") == "webgpu"
    page.fill("#steps", "20")
    page.click("#train")
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('Trained')",
                           timeout=120_000)
    assert page.text_content("#status") == "Trained on the GPU (WebGPU)."
    page.select_option("#compute", "wasm")
    page.click("#train")
    page.wait_for_function("() => document.getElementById('status').textContent === 'Trained on the CPU (wasm).'",
                           timeout=120_000)

    plain = site_page.page   # no --enable-unsafe-webgpu: no adapter
    plain.wait_for_function("() => document.getElementById('status').textContent.startsWith('Ready')")
    assert "computing on the CPU (wasm)" in plain.text_content("#status")
    assert plain.input_value("#compute") == "wasm"
    assert plain.locator("#compute option[value=webgpu]").is_disabled()


@pytest.mark.parametrize("module", sorted(webgpu_modules()))
def test_the_kernel_tests_pass_on_the_pages_webgpu(gpu_page, site_url, module):
    """tests/webgpu/'s marked modules, unchanged, inside the page's Pyodide: every WGSL kernel on navigator.gpu
    (Chromium's compiler, SwiftShader) against the CPU kernels."""
    run_inside(gpu_page, site_url, {**webgpu_support(), module: webgpu_modules()[module]}, "/tmp/webgpu", [module])


# A TabularTask on a small CSV with executionProviders: its provider, the loss of two epochs and the accuracy.
TABULAR = """async (providers) => {
    const lib = await import("./onnxtrain/onnxtrain.mjs");
    const rows = ["a,b,c,label"];
    for (let i = 0; i < 60; i++) {
        const a = Math.sin(i), b = Math.cos(i * 0.7), c = (i % 7) / 7;
        rows.push(`${a.toFixed(4)},${b.toFixed(4)},${c.toFixed(4)},${a + b > 0 ? "yes" : "no"}`);
    }
    const task = await lib.TabularTask.create(new TextEncoder().encode(rows.join("\\n")), "rows.csv",
                                              { executionProviders: providers });
    await task.setup({ label: "label", task: "classification", hidden: [8] });
    const summary = await task.train({ epochs: 2, batchSize: 8, learningRate: 0.01 });
    const provider = task.executionProvider;
    await task.release();
    return { provider, loss: summary.loss };
}"""


def test_tasks_take_execution_providers(gpu_page, site_page):
    gpu = gpu_page.page.evaluate(TABULAR, ["webgpu"])
    cpu = gpu_page.page.evaluate(TABULAR, ["wasm"])
    assert gpu["provider"] == "webgpu" and cpu["provider"] == "wasm", (gpu, cpu)
    np.testing.assert_allclose(gpu["loss"], cpu["loss"], rtol=1e-4)
    assert site_page.page.evaluate(TABULAR, ["webgpu", "wasm"])["provider"] == "wasm"
