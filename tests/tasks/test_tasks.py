"""onnxtrain.tasks from CPython without the browser bridge, the export head the tasks share, and
`python -m onnxtrain train` end to end: its export in onnxruntime against onnxtrain's runtime on the raw rows."""
import csv
import functools
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.datasets import load_breast_cancer, load_digits

from onnxtrain import api, ir
from onnxtrain.runtime import Session
from onnxtrain.tasks import handwriting, images, tabular
from onnxtrain.tasks.training import Run
from onnxtrain.web.sessions import Registry
from onnxtrain.web.train_loop import camel_keys
from web.test_images import synthetic
from tasks.test_tabular import wine_csv

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "pysrc" / "onnxtrain" / "tasks"


def cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "onnxtrain", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600)


def cancer_csv(path: Path) -> list:
    """scikit-learn's breast cancer data as a CSV with a text column and a few empty cells; its rows."""
    data = load_breast_cancer()
    rng = np.random.default_rng(0)
    header = list(data.feature_names) + ["clinic", "diagnosis"]
    rows = []
    for x, target in zip(data.data, data.target):
        cells = [f"{v:g}" for v in x] + [["north", "south", "east"][int(rng.integers(3))]]
        if rng.random() < 0.1:
            cells[int(rng.integers(30))] = ""
        rows.append(cells + [data.target_names[target]])
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header] + rows)
    return rows


def raw_feeds(rows: list) -> dict:
    numeric = np.array([[float(c) if c else np.nan for c in r[:30]] for r in rows], np.float32)
    return {"numeric": numeric, "categorical": np.array([[r[30]] for r in rows], dtype=object)}


def test_the_tasks_run_in_cpython_without_the_browser_bridge():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from onnxtrain.tasks import handwriting, images, tabular
        from onnxtrain import cli
        rows = "".join(f"{i % 7},{'pq'[i % 2]},{'ab'[i % 3 == 0]}\\n" for i in range(60))
        session = tabular.TabularSession(("x,kind,y\\n" + rows).encode())
        session.setup("y", "classification", [8])
        while session.epoch < 2:
            session.step(16, 0.01)
        assert session.evaluate()["loss"] > 0 and session.export_model()
        pixels = np.random.default_rng(0).integers(0, 255, (12, 8, 8, 3), dtype=np.uint8)
        image = images.ImageSession(pixels, [0, 1] * 6, ["a", "b"])
        image.step(4, 0.01)
        assert len(image.predict(pixels[0])) == 2 and image.export_model()
        web = sorted(m for m in sys.modules if m.startswith("onnxtrain.web"))
        print(web or "none")
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "pysrc"), OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "none"
    for path in TASKS.glob("*.py"):  # the layering: tasks never reach up into web
        assert not re.search(r"^\s*(from|import)\s+(\.\.web|onnxtrain\.web)\b", path.read_text(), re.M), path


def test_the_pages_task_is_the_cpython_task_with_camelcase_results():
    """The page's task is the CPython task itself, its buffers made bytes at the registry: the same run, steps and
    export, and its own results' keys in camelCase."""
    data = wine_csv()
    ours, registry = tabular.TabularSession(data), Registry()
    handle = registry.call("create_task", None, ["tabular", [memoryview(data), "the CSV file"]])["handle"]
    setup = ours.setup("cultivar", "classification", [16])
    assert camel_keys(setup) == registry.call("setup", handle, ["cultivar", "classification", [16]])
    page = registry.sessions[handle].task
    assert type(page) is type(ours) and type(page.training) is type(ours.training)
    for _ in range(30):
        a, b = ours.step(32, 0.01), page.step(32, 0.01)
        assert a["loss"] == b["loss"] and a["epoch_done"] == b["epoch_done"]
    assert ours.epoch == page.epoch == 30 // -(-setup["train_rows"] // 32)
    assert ours.evaluate() == registry.call("evaluate", handle, [])
    assert ours.export_model() == registry.call("export_model", handle, [])


def test_one_export_head_for_every_task():
    session = tabular.TabularSession(wine_csv())
    session.setup("cultivar", "classification", [4])
    pixels, labels = synthetic(n_per_class=3)
    image = images.ImageSession(pixels, labels, ["red", "blue", "green"])
    digits = load_digits()
    drawing = handwriting.DigitsSession(handwriting.pretrain(digits.data[:100], digits.target[:100], epochs=1))
    drawing.add_class("X")
    exports = {"tabular": session.exported(), "images": image.exported(), "handwriting": drawing.exported()}
    for name, model in exports.items():
        g = model.graph
        softmax, argmax = g.nodes[-2:]
        assert (softmax.op_type, softmax.name, softmax.inputs, softmax.attr("axis")) == \
            ("Softmax", "post.softmax", ["output"], -1), name
        assert (argmax.op_type, argmax.name, argmax.inputs, argmax.attr("axis"), argmax.attr("keepdims")) == \
            ("ArgMax", "post.argmax", ["output"], 1, 0), name
        assert [v.name for v in g.outputs] == ["output", "probabilities", "label"], name
        assert g.outputs[1].type.shape == ["batch", g.outputs[0].type.shape[-1]], name
        assert "onnxtrain.classes" in model.metadata_props and model.producer_name == "onnxtrain", name
        ort.InferenceSession(ir.to_bytes(model), providers=["CPUExecutionProvider"])  # each is a valid model
    # the head is written once: no other task or bridge module builds these nodes
    sources = list(TASKS.glob("*.py")) + list((ROOT / "pysrc" / "onnxtrain" / "web").glob("*.py"))
    builders = sorted(p.name for p in sources if re.search(r'Node\("(Softmax|ArgMax)"', p.read_text()))
    assert builders == ["head.py"]


@pytest.fixture(scope="module")
def cancer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cancer")
    rows = cancer_csv(folder / "data.csv")
    r = cli("train", folder / "data.csv", "--label", "diagnosis", "--out", folder / "model.onnx", "--epochs", 20)
    return folder, rows, r


def test_cli_trains_a_csv_and_its_export_takes_the_raw_rows(cancer):
    folder, rows, r = cancer
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{folder / 'data.csv'}: 456 rows to train on, 113 to validate; 30 numeric and 1 "
                               f"text columns -> 33 features; classification into [\"benign\", \"malignant\"] of "
                               f"\"diagnosis\"")
    epochs = [line for line in lines if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in epochs] == [f"epoch {i}/20" for i in range(1, 21)]
    final = re.search(r"^validation after 20 epochs: loss ([\d.e-]+), accuracy ([\d.]+)", r.stdout, re.M)
    assert final and float(final.group(2)) > 0.93, r.stdout  # the held-out rows
    model = (folder / "model.onnx").read_bytes()
    assert lines[-1].startswith(f"wrote {folder / 'model.onnx'} ({len(model):,} bytes). Input 'numeric': float32 "
                                f"[batch, 30]")

    feeds = raw_feeds(rows)
    assert np.isnan(feeds["numeric"]).sum() > 20  # missing cells go in as NaN
    theirs = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert [(i.name, i.shape) for i in theirs.get_inputs()] == [("numeric", ["batch", 30]),
                                                                 ("categorical", ["batch", 1])]
    logits, probs, label = theirs.run(None, {"numeric": feeds["numeric"],
                                             "categorical": feeds["categorical"].astype(str)})
    ours = Session(ir.load(model)).run(feeds)
    np.testing.assert_allclose(ours[0], logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[1], probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours[2], label)
    truth = np.array([["benign", "malignant"].index(r[-1]) for r in rows])
    assert np.mean(label == truth) > 0.95  # all rows, the training rows among them


def test_cli_export_equals_the_tasks_api_with_the_same_settings(cancer):
    folder, _, r = cancer
    assert r.returncode == 0, r.stderr
    run = functools.partial(Run, epochs=20, batch_size=32, learning_rate=0.01)
    session = tabular.TabularSession((folder / "data.csv").read_bytes(), run=run)
    session.setup("diagnosis", "classification", "32")
    session.training.trainer.run()
    assert session.epoch == 20
    assert session.export_model() == (folder / "model.onnx").read_bytes()


@pytest.mark.slow
def test_cli_checkpoints_each_epoch_and_resumes_exactly(tmp_path):
    cancer_csv(tmp_path / "data.csv")
    (tmp_path / "run").mkdir()
    args = ["train", tmp_path / "data.csv", "--label", "diagnosis", "--hidden", "8", "--checkpoint-dir",
            tmp_path / "run"]
    first = cli(*args, "--epochs", 2, "--out", tmp_path / "two.onnx")
    assert first.returncode == 0, first.stderr
    state = api.CheckpointState.load_checkpoint(tmp_path / "run" / "checkpoint")
    assert state.properties["epoch"] == 2 and "onnxtrain.tabular" in state.properties
    more = cli(*args, "--epochs", 4, "--out", tmp_path / "resumed.onnx")
    assert more.returncode == 0, more.stderr
    assert f"resuming from {tmp_path / 'run' / 'checkpoint'} after epoch 2" in more.stdout
    assert [line.split(":")[0] for line in more.stdout.splitlines() if line.startswith("epoch ")] == \
        ["epoch 3/4", "epoch 4/4"]
    straight = cli(*args[:-2], "--epochs", 4, "--out", tmp_path / "straight.onnx")
    assert straight.returncode == 0, straight.stderr
    assert (tmp_path / "resumed.onnx").read_bytes() == (tmp_path / "straight.onnx").read_bytes()
    other = cli(*args, "--epochs", 4, "--seed", 1, "--out", tmp_path / "other.onnx")
    assert other.returncode == 2 and "is of a run with other data or settings (seed)" in other.stderr
    assert not (tmp_path / "other.onnx").exists()


@pytest.mark.slow
def test_cli_trains_images_from_an_npz(tmp_path):
    pixels, labels = synthetic()
    np.savez(tmp_path / "images.npz", images=pixels, labels=labels, classes=np.array(["red", "blue", "green"]))
    r = cli("train", tmp_path / "images.npz", "--out", tmp_path / "model.onnx", "--epochs", 6, "--batch-size", 16)
    assert r.returncode == 0, r.stderr
    assert "60 images of 16x16 px in 3 classes (48 to train on, 12 to validate)" in r.stdout
    model = (tmp_path / "model.onnx").read_bytes()
    rgb = pixels[..., :3].transpose(0, 3, 1, 2).astype(np.float32) / 255
    probs, label = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        ["probabilities", "label"], {"image": rgb})
    ours = Session(ir.load(model)).run({"image": rgb})
    np.testing.assert_allclose(ours[1], probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours[2], label)
    assert np.mean(label == labels) > 0.9


def cancer_file(tmp_path) -> Path:
    cancer_csv(tmp_path / "data.csv")
    return tmp_path / "data.csv"


def a_file(name: str, data: bytes):
    def make(folder: Path) -> Path:
        (folder / name).write_bytes(data)
        return folder / name
    return make


@pytest.mark.slow
@pytest.mark.parametrize("make, extra, message", [
    (lambda d: d / "nope.csv", ["--label", "x"], r"^error: cannot read \S+nope.csv: No such file or directory$"),
    (cancer_file, ["--label", "Diagnosis"],
     r'^error: there is no column named "Diagnosis"; the columns are \["mean radius", "mean texture", '),
    (cancer_file, [], r'^error: choose the column to predict with --label; the columns of \S+ are \["mean radius"'),
    (a_file("empty.csv", b""), ["--label", "y"], r"empty.csv is empty$"),
    (a_file("head.csv", b"a,y\n"), ["--label", "y"], "head.csv has a header row but no data rows$"),
    (lambda d: d, ["--label", "y"], r"is a folder; give a CSV file, or images as a .npz file \(see --help\)$"),
    (cancer_file, ["--label", "diagnosis", "--validation", "1"], 'the validation share is "1.0"; it must be above 0'),
    (cancer_file, ["--label", "diagnosis", "--epochs", "0"], "epochs must be a whole number >= 1, got 0$"),
    (cancer_file, ["--label", "diagnosis", "--hidden", "8,x"], 'hidden layer 2 has size "x"'),
    (a_file("x.npz", b"junk"), [], r"x.npz cannot be read as a .npz file"),
    (a_file("x.npz", b""), ["--label", "y"], r"^error: --label is for a CSV file; \S+x.npz holds images"),
])
def test_cli_bad_input_is_one_line_and_exit_code_2(tmp_path, make, extra, message):
    data = make(tmp_path)
    r = cli("train", data, *extra, "--out", tmp_path / "model.onnx")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert re.search(message, r.stderr.strip()), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "model.onnx").exists()


def test_cli_refuses_a_missing_output_folder_before_training(tmp_path):
    r = cli("train", cancer_file(tmp_path), "--label", "diagnosis", "--out", tmp_path / "no" / "model.onnx")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == f"error: cannot write {tmp_path / 'no' / 'model.onnx'}: the folder {tmp_path / 'no'} " \
                               f"does not exist"


def test_the_tasks_take_plain_arrays_and_check_them():
    with pytest.raises(tabular.DataError, match=r"^the images are float64 \[2, 8, 8, 3\]; they must be uint8"):
        images.ImageSession(np.zeros((2, 8, 8, 3)), [0, 1], ["a", "b"])
    pixels, labels = synthetic(n_per_class=3, size=8)
    session = images.ImageSession(pixels[..., :3], labels, ["r", "g", "b"])  # RGB without alpha as well
    with pytest.raises(tabular.DataError, match=r"^the image is uint8 \[16, 16, 4\]; it must be uint8 \[8, 8, 3 or "):
        session.predict(np.zeros((16, 16, 4), np.uint8))
    assert session.predict(pixels[0]) == session.predict(pixels[0, :, :, :3])
    with pytest.raises(tabular.DataError, match='^there is no column named "z"; the columns are \\["x", "y"\\]$'):
        tabular.TabularSession(b"x,y\n1,2\n").setup("z", "classification", [4])
    text = io.BytesIO()
    np.savez(text, x=np.zeros((3, 64), np.float32), y=np.arange(3))
    digits = load_digits()
    drawing = handwriting.DigitsSession(handwriting.pretrain(digits.data[:64], digits.target[:64], epochs=1),
                                        text.getvalue())
    drawing.add_example(digits.data[0], 0)
    assert drawing.fine_tune(epochs=2)["examples"] == 1
