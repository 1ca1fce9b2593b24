"""python -m onnxtrain browser-check (onnxtrain.browser_check): the CLI run as a user runs it, on artifacts made by
onnxruntime-training 1.19.2 and by onnxtrain, with the site's library (its folder, its npm package, and that
package npm-installed into a project) in Debian's Chromium; its losses checked against onnxruntime-training's own;
a library that trains wrongly and a fabricated browser run that differs at one step and parameter; the usage
errors; check(); the pytest fixture."""
import asyncio
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import build
import ort_cases as oc
from onnxtrain import artifacts as onnxtrain_artifacts, onnxblock as onnxtrain_onnxblock
from onnxtrain import browser_check
from onnxtrain.browser_check import browser as browser_side
from onnxtrain.browser_check.inputs import find_artifacts, load_data
from onnxtrain.browser_check.reference import Reference
from onnxtrain.browser_check.trajectory import Trajectory

LIBRARY = build.SITE / build.LIBRARY  # the library as a deployment ships it (the test site's has test hooks)
CHROMIUM = str(build.CHROMIUM)
NPM_PACKAGE = build.ROOT / "dist" / f"onnxtrain-{build.project_version()}.tgz"  # build.py's npm pack of LIBRARY
STEPS = 20
ROWS, BATCH = 40, 8  # five batches, cycled four times in 20 steps


def cli(*args, env_extra=None, python_code=None, cwd=build.ROOT):
    env = dict(os.environ, PYTHONPATH=str(build.ROOT / "pysrc"))
    env.pop("ONNXTRAIN_LIBRARY", None)
    env.pop("ONNXTRAIN_CHROMIUM", None)
    env.update(env_extra or {})
    command = ["-c", python_code] if python_code else ["-m", "onnxtrain"]
    return subprocess.run([sys.executable, *command, "browser-check", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=900)


def common(library=LIBRARY):
    return ["--library", library, "--chromium", CHROMIUM]


@pytest.fixture(scope="module", autouse=True)
def test_site_built():
    if not (LIBRARY / "onnxtrain.mjs").exists() or not NPM_PACKAGE.exists():
        pytest.fail(f"{LIBRARY} or {NPM_PACKAGE} is not built: run the tests through `python3 build.py test`")


@pytest.fixture(scope="module")
def npm_project(tmp_path_factory):
    """A user's project folder with the library's npm package installed (npm installs a local tarball offline)."""
    project = tmp_path_factory.mktemp("project")
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
                    str(NPM_PACKAGE)], cwd=project, check=True, capture_output=True)
    assert (project / "node_modules" / "onnxtrain" / "onnxtrain.mjs").is_file()
    return project


def data_for(case_name, rows=ROWS, seed=3):
    """(name -> array) for the case's user inputs, ``rows`` rows."""
    batches = oc.batches(case_name, 1, seed=seed)[0]
    case = oc.CASES[case_name]
    names = ["input", "labels"] if case.loss.startswith("CE") else ["input", "target"]
    rng = np.random.default_rng(seed)
    out = {}
    for name, first in zip(names, batches):
        if first.dtype == np.int64:
            out[name] = rng.integers(0, 5, rows).astype(np.int64)
        else:
            out[name] = rng.standard_normal((rows, *first.shape[1:])).astype(np.float32)
    return out


def ort_losses(folder, data, steps=STEPS, batch=BATCH, learning_rate=None):
    """onnxruntime-training 1.19.2 on the same artifacts and the same batches (in order, cycling): the losses and
    the trainable parameters at the end."""
    api = oc.ort_api()
    state = api.CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = api.Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
    optimizer = api.Optimizer(str(folder / "optimizer_model.onnx"), module)
    if learning_rate is not None:
        optimizer.set_learning_rate(learning_rate)
    names = module.input_names()
    full = len(next(iter(data.values()))) // batch
    losses = []
    for step in range(steps):
        k = step % full
        losses.append(float(np.asarray(module(*[data[n][k * batch:(k + 1) * batch] for n in names]))))
        optimizer.step()
        module.lazy_reset_grad()
    params = module.get_contiguous_parameters(True)
    return losses, np.asarray(params if isinstance(params, np.ndarray) else params.numpy())


@pytest.fixture(scope="module")
def ort_mlp(tmp_path_factory):
    """ORT's MLP artifacts (CE, AdamW) and a .npz for them."""
    folder = oc.artifact_dir("mlp_ce_adamw")
    data = data_for("mlp_ce_adamw")
    path = tmp_path_factory.mktemp("data") / "mlp.npz"
    np.savez(path, **data)
    return folder, data, path


@pytest.fixture(scope="module")
def ours_cnn(tmp_path_factory):
    """onnxtrain's CNN artifacts (CE, AdamW) and a .npz whose images are float64 (cast to the model's float32)."""
    folder = tmp_path_factory.mktemp("cnn")
    oc.generate(oc.CASES["cnn_ce_adamw"], folder, onnxtrain_onnxblock, onnxtrain_artifacts)
    data = data_for("cnn_ce_adamw")
    path = folder.parent / "cnn.npz"
    np.savez(path, input=data["input"].astype(np.float64), labels=data["labels"])
    return folder, data, path


@pytest.fixture(scope="module")
def wrong_library(tmp_path_factory):
    """The test site's library with runOptimizerStep running the optimizer twice: it trains, but wrongly."""
    folder = tmp_path_factory.mktemp("wrong") / "onnxtrain"
    shutil.copytree(LIBRARY, folder, copy_function=build.link_or_copy)
    source = (LIBRARY / "onnxtrain.mjs").read_text()
    step = 'await this._defer("run_optimizer_step", this._hasOptimizer);'  # runOptimizerStep's body
    assert source.count(step) == 1, "web/lib/src/session.mjs changed its runOptimizerStep: update this test"
    build.replace_file(folder / "onnxtrain.mjs", source.replace(
        step, 'await this._call("run_optimizer_step"); await this._call("run_optimizer_step");').encode())
    return folder


def test_cli_on_ort_artifacts_matches_and_agrees_with_onnxruntime(ort_mlp, npm_project):
    folder, data, path = ort_mlp
    # no --library: the project's ./node_modules/onnxtrain
    r = cli(folder, "--data", path, "--steps", STEPS, "--batch-size", BATCH, "--json", "--chromium", CHROMIUM,
            cwd=npm_project)
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] and report["mismatch"] is None
    assert report["info"]["library"] == os.path.join("node_modules", "onnxtrain")
    assert report["compared_steps"] == list(range(1, STEPS + 1))
    expected, params = ort_losses(folder, data)
    # both sides trained what onnxruntime-training trains, batch for batch
    np.testing.assert_allclose(report["cpython_losses"], expected, rtol=1e-5)
    np.testing.assert_allclose(report["browser_losses"], expected, rtol=1e-5)
    assert report["atol"] == pytest.approx(1e-3 * 1e-3)  # 1e-3 x the checkpoint's learning rate
    assert report["max_abs_param"] <= report["atol"] and report["max_abs_param"] == max(
        report["param_abs_by_step"].values())
    print("ORT artifacts, largest differences:", {k: report[k] for k in (
        "max_abs_loss", "max_rel_loss", "max_abs_param", "max_rel_param")})


def test_cli_on_onnxtrain_artifacts_with_the_npm_package(ours_cnn):
    folder, data, path = ours_cnn
    r = cli(folder, "--data", path, "--batch-size", BATCH, "--params-every", 7, *common(NPM_PACKAGE))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(f"browser-check: MATCH over {STEPS} steps")
    assert "first mismatch" not in r.stdout
    assert "over 3 compared steps" in r.stdout  # steps 7, 14 and the last
    cpython = [float(line.split()[1]) for line in r.stdout.splitlines() if line.strip()[:1].isdigit()]
    expected, _ = ort_losses(folder, {"input": data["input"], "labels": data["labels"]})
    np.testing.assert_allclose(cpython, expected, rtol=1e-5)


def test_a_library_that_trains_wrongly_is_a_mismatch(ort_mlp, wrong_library):
    folder, _, path = ort_mlp
    r = cli(folder, "--data", path, "--steps", 3, "--batch-size", BATCH, *common(wrong_library))
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.startswith("browser-check: MISMATCH over 3 steps")
    # step 1's loss comes before the optimizer: it matches; the parameters after it do not
    assert "first mismatch: step 1: parameter 'fc1.weight' element " in r.stdout


def fabricated_browser(folder, data, step, name, element, by):
    """A browser side that replays CPython's run and moves parameter ``name``'s ``element`` by ``by`` from
    ``step`` on."""
    def run_in_browser(url, manifest, chromium):
        reference = Reference(find_artifacts(folder))
        batches = load_data(data, reference.model, reference.input_names(), len(manifest["batches"]), BATCH)
        replay = reference.run(batches, set(manifest["compareAt"]))
        start = sum(reference.layout.sizes[:reference.layout.names.index(name)])
        for s in replay.parameters:
            if s >= step:
                replay.parameters[s] = replay.parameters[s].copy()
                replay.parameters[s][start + element] += by
        return Trajectory(replay.losses, replay.parameters), {"browser": "fabricated", "learningRate": 0.001}
    return run_in_browser


def test_the_report_names_the_step_and_parameter_that_differ(ort_mlp, monkeypatch, capsys):
    folder, data, path = ort_mlp
    monkeypatch.setattr(browser_side, "run_in_browser", fabricated_browser(folder, data, 4, "fc2.weight", 7, 1e-3))
    code = browser_check.main([str(folder), "--data", str(path), "--steps", "6", "--batch-size", str(BATCH),
                               *map(str, common())])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "first mismatch: step 4: parameter 'fc2.weight' element 7 differs" in out
    # below the tolerance (1e-6 here) it is a match
    monkeypatch.setattr(browser_side, "run_in_browser", fabricated_browser(folder, data, 4, "fc2.weight", 7, 2e-7))
    assert browser_check.main([str(folder), "--data", str(path), "--steps", "6", "--batch-size", str(BATCH),
                               *map(str, common())]) == 0
    capsys.readouterr()


def test_compare_reports_losses_errors_and_nan():
    from onnxtrain.browser_check.compare import compare
    from onnxtrain.browser_check.trajectory import Layout
    layout = Layout(["w", "b"], [3, 2])
    params = {s: np.arange(5, dtype=np.float32) * s for s in (1, 2, 3)}
    cpython = Trajectory([2.0, 1.5, 1.25], params)
    same = compare(cpython, Trajectory([2.0, 1.5, 1.25], dict(params)), layout, 1e-5, 1e-6)
    assert same.ok and same.max_abs_param == 0 and "MATCH over 3 steps" in same.summary()
    loss = compare(cpython, Trajectory([2.0, 1.5001, 1.25], dict(params)), layout, 1e-5, 1e-6)
    assert (loss.mismatch.step, loss.mismatch.what) == (2, "loss")
    assert "step 2: loss differs: cpython 1.5, browser 1.5001" in loss.summary()
    bad = dict(params)
    bad[3] = bad[3].copy()
    bad[3][4] = np.nan
    nan = compare(cpython, Trajectory([2.0, 1.5, 1.25], bad), layout, 1e-5, 1e-6)
    assert (nan.mismatch.step, nan.mismatch.what, nan.mismatch.index) == (3, "b", 1)
    assert nan.max_abs_param == np.inf
    stopped = compare(cpython, Trajectory([2.0], {1: params[1]}, error="Error: no kernel for Foo (while training)"),
                      layout, 1e-5, 1e-6)
    assert (stopped.mismatch.step, stopped.mismatch.what) == (2, "browser error")
    assert "step 2: the browser failed: Error: no kernel for Foo" in stopped.summary()
    assert stopped.to_json()["mismatch"]["step"] == 2


def test_usage_and_setup_errors_exit_2(ort_mlp, tmp_path):
    folder, data, path = ort_mlp
    r = cli(tmp_path / "nowhere", "--data", path, *common())
    assert r.returncode == 2 and "the artifact directory" in r.stderr and "does not exist" in r.stderr
    no_labels = tmp_path / "no_labels.npz"
    np.savez(no_labels, input=data["input"])
    r = cli(folder, "--data", no_labels, *common())
    assert r.returncode == 2 and "missing ['labels']" in r.stderr, r.stderr
    r = cli(folder, "--data", path, "--library", tmp_path / "no_library", "--chromium", CHROMIUM)
    assert r.returncode == 2 and "no_library" in r.stderr and "does not exist" in r.stderr, r.stderr
    (tmp_path / "empty").mkdir()
    r = cli(folder, "--data", path, "--library", tmp_path / "empty", "--chromium", CHROMIUM)
    assert r.returncode == 2 and "has no onnxtrain.mjs" in r.stderr, r.stderr
    r = cli(folder, "--data", path, "--library", LIBRARY, "--chromium", tmp_path / "chromium")
    assert r.returncode == 2 and "does not exist" in r.stderr, r.stderr
    r = cli(folder, "--data", path, "--batch-size", ROWS + 1, *common())
    assert r.returncode == 2 and f"more than the {ROWS} rows" in r.stderr, r.stderr
    two = tmp_path / "two_sets"
    two.mkdir()
    for prefix in ("a_", "b_"):
        for name in ("training_model.onnx", "optimizer_model.onnx", "checkpoint"):
            shutil.copy2(folder / name, two / f"{prefix}{name}")
    r = cli(two, "--data", path, *common())
    assert r.returncode == 2 and "several artifact sets (prefixes ['a_', 'b_'])" in r.stderr, r.stderr
    nominal = tmp_path / "nominal"
    nominal.mkdir()
    for name in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        shutil.copy2(folder / name, nominal / name)
    shutil.copy2(oc.files("mlp_ce_adamw_nominal")["nominal"], nominal / "checkpoint")
    r = cli(nominal, "--data", path, *common())
    assert r.returncode == 2 and "nominal checkpoint" in r.stderr, r.stderr
    r = cli(folder, "--data", path, "--steps", 0, *common())
    assert r.returncode == 2 and "steps must be a whole number > 0" in r.stderr, r.stderr
    r = cli(folder, "--steps", 3)  # argparse: --data is required
    assert r.returncode == 2 and "--data" in r.stderr
    no_playwright = ("import sys; sys.modules['playwright'] = None; from onnxtrain.cli import main; "
                     "sys.exit(main())")
    r = cli(folder, "--data", path, *common(), python_code=no_playwright)
    assert r.returncode == 2, r.stderr
    assert "playwright is not installed: pip install 'onnxtrain[browser]' && python -m playwright install " \
           "chromium" in r.stderr
    # Playwright's own Chromium, where Playwright installed none
    r = cli(folder, "--data", path, "--library", LIBRARY,
            env_extra={"ONNXTRAIN_CHROMIUM": "", "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "no-browsers")})
    assert r.returncode == 2 and "Playwright cannot start its Chromium" in r.stderr, r.stderr
    assert "python -m playwright install chromium" in r.stderr
    r = cli(folder, "--data", path, "--json", "--chromium", CHROMIUM,
            env_extra={"ONNXTRAIN_LIBRARY": str(tmp_path / "gone")})
    assert r.returncode == 2 and json.loads(r.stdout)["ok"] is False and "$ONNXTRAIN_LIBRARY" in r.stderr


def test_check_from_python_inside_an_event_loop(ort_mlp, monkeypatch):
    folder, data, _ = ort_mlp

    async def in_a_notebook():  # Playwright's sync API refuses a running loop: check() moves to a thread
        return browser_check.check(folder, data, steps=6, batch_size=BATCH, chromium=CHROMIUM, learning_rate=0.01,
                                   params_every=2)
    monkeypatch.setenv("ONNXTRAIN_LIBRARY", str(LIBRARY))
    # the notebook's loop runs in a thread of its own: this one may hold the browser fixture's (Playwright's) loop
    with concurrent.futures.ThreadPoolExecutor(1) as notebook:
        report = notebook.submit(asyncio.run, in_a_notebook()).result()
    assert report.info["library"] == str(LIBRARY)
    assert report.ok, report.summary()
    assert "requests off the page's origin" not in report.info
    assert report.compared_steps == [2, 4, 6] and report.atol == pytest.approx(1e-5)
    expected, params = ort_losses(folder, data, steps=6, learning_rate=0.01)
    np.testing.assert_allclose(report.browser_losses, expected, rtol=1e-5)
    assert "learning rate: cpython 0.01, browser 0.01" in report.summary()
    with pytest.raises(browser_check.SetupError, match="batch size must be a whole number >= 1"):
        browser_check.check(folder, data, batch_size=0, library=LIBRARY, chromium=CHROMIUM)


USER_TEST = """
import numpy as np

def test_matches(onnxtrain_browser_check):
    report = onnxtrain_browser_check({folder!r}, {data!r}, steps=3, batch_size=8, library={library!r},
                                     chromium={chromium!r})
    assert report.ok and len(report.browser_losses) == 3

def test_wrong_library(onnxtrain_browser_check):
    onnxtrain_browser_check({folder!r}, {data!r}, steps=3, batch_size=8, library={wrong!r}, chromium={chromium!r})
"""


def test_pytest_fixture_from_the_installed_wheel(ort_mlp, wrong_library, tmp_path):
    """The wheel the site ships, unpacked on PYTHONPATH as an installation: pytest finds the plugin through its
    entry point."""
    wheels = list((LIBRARY / "wheels").glob("onnxtrain-*.whl"))
    assert len(wheels) == 1, wheels
    installed = tmp_path / "site-packages"
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extractall(installed)
    metadata = next(installed.glob("onnxtrain-*.dist-info/METADATA")).read_text().splitlines()
    requires = [line.split(": ", 1)[1] for line in metadata if line.startswith("Requires-Dist: ")]
    assert [r for r in requires if "extra ==" not in r] == ["numpy>=1.26", "flatbuffers>=23.5"]
    assert 'playwright>=1.40; extra == "browser"' in requires and "Provides-Extra: browser" in metadata
    folder, _, path = ort_mlp
    project = tmp_path / "user"
    project.mkdir()
    (project / "test_user.py").write_text(USER_TEST.format(folder=str(folder), data=str(path), library=str(LIBRARY),
                                                           wrong=str(wrong_library), chromium=CHROMIUM))
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = str(installed)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"], cwd=project,
                       env=env, capture_output=True, text=True, timeout=900)
    assert "1 failed, 1 passed" in r.stdout, r.stdout + r.stderr
    assert "test_wrong_library" in r.stdout and "first mismatch: step 1: parameter 'fc1.weight'" in r.stdout
