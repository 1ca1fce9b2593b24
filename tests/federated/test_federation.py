"""A real Flower federation (flwr 1.42 deployment engine: superlink, the pages' fleet bridge, flwr run) started by
`python -m onnxtrain federate`, with a CPython onnxtrain client and an onnxruntime-training client
(`python -m onnxtrain join`) and two pages that speak the pages' HTTP API from Python threads: one sends a
non-finite update in round 1 and a wrong-size body in round 2, the other goes silent in the middle of round 2."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from onnxtrain.federated.local_round import train_onnxtrain
from onnxtrain.federated.model import ARTIFACT_FILES, FederatedModel, read_csv
from onnxtrain.federated.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
SITE_DATA = ROOT / "site" / "artifacts" / "federated_digits"
ROUNDS, ROUND_TIMEOUT, PAGE_TIMEOUT = 3, 120, 10
# real Flower processes for minutes; tests/federated/test_federation_units.py checks the parts quickly
pytestmark = [pytest.mark.slow, pytest.mark.site]

SETTINGS = ["--local-epochs", "5", "--learning-rate", "0.5", "--batch-size", "32"]


@pytest.fixture(scope="module")
def digits(tmp_path_factory) -> Path:
    """The federated digits artifacts and splits: the site's, else built by their recipe."""
    if all((SITE_DATA / "mlp" / f).exists() for f in ARTIFACT_FILES) and (SITE_DATA / "data" / "test.csv").exists():
        return SITE_DATA
    from artifacts import federated_digits
    dest = tmp_path_factory.mktemp("federated_digits")
    federated_digits.build(dest)
    return dest


def env() -> dict:
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(ROOT / "pysrc") + (os.pathsep + path if path else ""),
                OMP_NUM_THREADS="1")


class Federate:
    """`python -m onnxtrain federate` in a subprocess; its output in a file, its URL once it serves."""

    def __init__(self, tmp: Path, args: list):
        self.log_dir, self.out = tmp / "fed-logs", tmp / "federate.out"
        self.superlink = f"127.0.0.1:{free_port()}"
        with open(self.out, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "onnxtrain", "federate", "--port", "0", "--superlink-port",
                 self.superlink.split(":")[1], "--log-dir", str(self.log_dir), "--record-requests", *args],
                stdout=out, stderr=subprocess.STDOUT, env=env(), cwd=ROOT)
        self.started = time.monotonic()
        self.url = self._wait_for(r"serving (http://127\.0\.0\.1:\d+)/", 90)

    def text(self) -> str:
        return self.out.read_text()

    def _wait_for(self, pattern: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text())
            if found:
                return found.group(1)
            assert self.proc.poll() is None, f"federate exited early:\n{self.text()}"
            time.sleep(0.2)
        raise AssertionError(f"federate did not print {pattern!r} in {timeout} s:\n{self.text()}")

    def get(self, path: str):
        with urllib.request.urlopen(f"{self.url}/{path}", timeout=30) as r:
            return r.read(), r.headers

    def status(self) -> dict:
        return json.loads(self.get("fed/status")[0])


def post(url: str, body: bytes = b"", headers: dict = None):
    request = urllib.request.Request(url, data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Page(threading.Thread):
    """A page as the HTTP API sees it: join, long-poll fed/next, train the task's global vector locally (here with
    onnxtrain in CPython) on its own CSV and post the vector back with its metrics.  ``faults``: round -> "nan"
    (a NaN in the update), "size" (one value short) or "silent" (takes the task, then never speaks again)."""

    def __init__(self, url: str, artifacts: str, data: str, faults: dict):
        super().__init__(daemon=True)
        self.url, self.artifacts, self.data, self.faults = url, artifacts, data, faults
        self.answers, self.rounds, self.error, self.silent_at = [], [], None, None

    def run(self):
        try:
            status, body = post(f"{self.url}/fed/join")
            assert status == 200, (status, body)
            client = json.loads(body)["client"]
            while True:
                try:
                    with urllib.request.urlopen(f"{self.url}/fed/next?client={client}", timeout=60) as r:
                        code, headers, vector = r.status, r.headers, r.read()
                except urllib.error.HTTPError as e:
                    code = e.code
                if code == 410:
                    return
                if code == 204:
                    continue
                round_, fault = int(headers["X-Round"]), self.faults.get(int(headers["X-Round"]))
                self.rounds.append(round_)
                if fault == "silent":
                    self.silent_at = time.monotonic()
                    return
                config = json.loads(headers["X-Config"])
                trained, metrics = train_onnxtrain(self.artifacts, self.data, np.frombuffer(vector, np.float32),
                                                   config, seed=round_)
                if fault == "nan":
                    trained[7] = np.nan
                if fault == "size":
                    trained = trained[:-1]
                answer = post(f"{self.url}/fed/result?client={client}&task={headers['X-Task']}", trained.tobytes(),
                              {"X-Metrics": json.dumps(metrics), "Content-Type": "application/octet-stream"})
                self.answers.append((round_, fault, answer))
        except BaseException as e:  # the test reports it
            self.error = e


class Join:
    """`python -m onnxtrain join` in a subprocess."""

    def __init__(self, tmp: Path, fed: Federate, data: Path, backend: str):
        self.out = tmp / f"join-{backend}.out"
        with open(self.out, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "onnxtrain", "join", "--superlink", fed.superlink, "--server", fed.url,
                 "--data", str(data), "--backend", backend], stdout=out, stderr=subprocess.STDOUT, env=env(), cwd=ROOT)


def processes_using(path: Path) -> list:
    """Command lines of live processes that name ``path`` (the federation's node configs and app live there)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(path) in cmd:
                found.append(f"{pid}: {cmd}")
    return found


def test_federate_refuses_bad_settings_with_clear_errors(digits, capsys):
    from onnxtrain import cli
    from onnxtrain.federated.federate import image_info
    mlp = str(digits / "mlp")
    for args, said in [(["--artifacts", "/nonexistent"], "the artifact folder /nonexistent does not exist"),
                       (["--artifacts", mlp, "--dp-noise", "1"], "needs both --dp-noise and --dp-clip"),
                       (["--artifacts", mlp, "--rounds", "0"], "--rounds must be at least 1"),
                       (["--artifacts", mlp, "--outputs", "probabilities"], "--outputs probabilities: the eval model"),
                       (["--artifacts", mlp, "--classes", "a,b"], "--classes needs a model whose input 'features' is "
                                                                  "images")]:
        assert cli.main(["federate", *args]) == 2
        assert said in capsys.readouterr().err
    assert image_info(FederatedModel(str(digits / "cnn")), " 0, 1,2 ") == {"size": 8, "channels": 1,
                                                                            "classes": ["0", "1", "2"]}


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_native_backends_train_a_round_alike(digits, mu):
    """onnxruntime-training 1.19.2 and onnxtrain: the same local round (batches, SGD, FedProx's proximal step)."""
    from onnxtrain.federated.local_round import train_onnxruntime
    mlp, csv = str(digits / "mlp"), str(digits / "data" / "client_4.csv")
    start = FederatedModel(mlp).initial + np.float32(0.01)
    settings = {"epochs": 2, "batchSize": 16, "learningRate": 0.3, "proximalMu": mu}
    ours, our_metrics = train_onnxtrain(mlp, csv, start, settings, seed=5)
    theirs, their_metrics = train_onnxruntime(mlp, csv, start, settings, seed=5)
    assert np.abs(ours - start).max() > 0.05
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert our_metrics.keys() == their_metrics.keys() == {"num-examples", "loss", "accuracy", "global-accuracy"}
    assert our_metrics == pytest.approx(their_metrics, rel=1e-5)


def test_mixed_federation_survives_bad_updates_and_a_silent_page(digits, tmp_path):
    mlp, data = str(digits / "mlp"), digits / "data"
    fed = Federate(tmp_path, ["--artifacts", mlp, "--eval", str(data / "test.csv"), "--rounds", str(ROUNDS),
                              "--min-clients", "4", "--round-timeout", str(ROUND_TIMEOUT), "--page-timeout",
                              str(PAGE_TIMEOUT), "--linger", "8", *SETTINGS])
    startup = time.monotonic() - fed.started
    info = json.loads(fed.get("fed/info")[0])
    model = FederatedModel(mlp)
    assert info["parameters"] == model.size and info["strategy"] == "FedAvg" and info["rounds"] == ROUNDS
    for key, name in (("trainModel", "training_model.onnx"), ("checkpointState", "checkpoint")):
        assert fed.get(info["artifacts"][key])[0] == (digits / "mlp" / name).read_bytes()

    joins = [Join(tmp_path, fed, data / "client_0.csv", "onnxtrain"),
             Join(tmp_path, fed, data / "client_1.csv", "onnxruntime")]
    faulty = Page(fed.url, mlp, str(data / "client_2.csv"), {1: "nan", 2: "size"})
    silent = Page(fed.url, mlp, str(data / "client_3.csv"), {2: "silent"})
    for page in (faulty, silent):
        page.start()
    deadline, started = time.monotonic() + 480, set()
    while (status := fed.status())["phase"] not in ("done", "failed"):
        assert time.monotonic() < deadline and fed.proc.poll() is None, fed.text()
        started.update(tree(fed.proc.pid))  # every process federate started, to see them all gone at the end
        time.sleep(1)
    ran = time.monotonic() - fed.started
    assert status["phase"] == "done", (status, fed.text())
    history = status["history"]
    assert [h["round"] for h in history] == [1, 2, 3] and status["rounds"] == ROUNDS

    # round 1: the NaN update is refused by the server at once (400 with the reason), and so rejected, naming node,
    # round and page
    nan_reason = b"non-finite values: 1 of %d parameters are NaN or infinite" % model.size
    assert (1, "nan", (400, nan_reason)) in faulty.answers
    assert history[0]["results"] == 3 and len(history[0]["rejected"]) == 1, history[0]
    assert re.fullmatch(r"node \d+ round 1: page \w+ \(node \d+\): " + nan_reason.decode(),
                        history[0]["rejected"][0]), history[0]
    # round 2: the wrong-size body is refused by the server (400 with the reason) and so rejected; the silent
    # page's task fails after PAGE_TIMEOUT, not the round's timeout
    assert (2, "size", (400, b"wrong size: the body has %d bytes, a parameter vector has %d (%d float32 values)"
            % (4 * model.size - 4, 4 * model.size, model.size))) in faulty.answers
    assert [(r, f, a[0]) for r, f, a in faulty.answers] == [(1, "nan", 400), (2, "size", 400), (3, None, 200)]
    assert len(history[1]["rejected"]) == 1 and "wrong size" in history[1]["rejected"][0], history[1]
    assert history[1]["results"] == 2 and history[1]["failures"] == 1, history[1]
    assert silent.rounds == [1, 2] and silent.error is None and faulty.error is None
    assert re.search(r"round 2: failure: node \d+ round 2: .*page \w+ \(node \d+\) went silent for more than 10 s",
                     fed.text()), fed.text()
    assert history[1]["seconds"] < 0.75 * ROUND_TIMEOUT, history  # the silence rule ended it, not the timeout
    # round 3: the silent page's node went offline with it, so it is not sampled
    assert history[2]["results"] == 3 and history[2]["failures"] == 0, history[2]
    for reason in history[0]["rejected"] + history[1]["rejected"]:
        assert reason in fed.text()

    # the global model learned: accuracy on the held-out digits
    initial, final = status["initial"], history[-1]["global"]
    assert final["accuracy"] > initial["accuracy"] + 0.3, (initial, final)

    # fed/global.onnx: the last round's model; onnxruntime gives onnxtrain's outputs
    import onnxruntime
    from onnxtrain import ir
    from onnxtrain.runtime import Session
    body, headers = fed.get("fed/global.onnx")
    assert headers["X-Round"] == "3" and 'filename="global_round_3.onnx"' in headers["Content-Disposition"]
    test = read_csv(str(data / "test.csv"), model.types)
    x = test[model.train_inputs[0]]
    ours = Session(ir.load(body)).run({model.train_inputs[0]: x})[0]
    theirs = onnxruntime.InferenceSession(body, providers=["CPUExecutionProvider"]).run(
        None, {model.train_inputs[0]: x})[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    assert np.mean(np.argmax(theirs, 1) == test["labels"]) == pytest.approx(final["accuracy"], abs=1e-12)

    # the pages sent parameter vectors and metrics only
    requests = json.loads(fed.get("fed/requests")[0])
    posted = [r for r in requests if r["method"] == "POST"]
    assert {r["bodyLength"] for r in posted} <= {0, 4 * model.size, 4 * model.size - 4}
    for r in posted:
        if r["path"].startswith("/fed/result"):
            assert set(json.loads(r["headers"]["X-Metrics"])) <= {"num-examples", "loss", "accuracy",
                                                                  "global-accuracy"}

    assert fed.proc.wait(60) == 0, fed.text()
    for join in joins:
        assert join.proc.wait(60) == 0, join.out.read_text()
    assert processes_using(fed.log_dir) == [] and still_running(sorted(started)) == []
    seconds = [round(h["seconds"], 1) for h in history]
    print(f"startup {startup:.1f} s, run {ran:.1f} s, round seconds {seconds}")


def _weights(model: bytes) -> dict:
    from onnxtrain import ir
    return {t.name: t.data.astype(np.float64) for t in ir.load(model).graph.initializers
            if t.data.dtype == np.float32}


def test_fedadam_with_server_side_dp_between_native_clients(digits, tmp_path):
    """FedAdam moves each weight by about its server rate per round (not by the clients' average change, as FedAvg
    would), and Flower's DP wrapper clips each update and adds noise, as its log says."""
    eta, noise, clip = 0.01, 0.0001, 5.0
    fed = Federate(tmp_path, ["--artifacts", str(digits / "mlp"), "--rounds", "2", "--min-clients", "2",
                              "--strategy", "fedadam", "--server-learning-rate", str(eta), "--dp-noise", str(noise),
                              "--dp-clip", str(clip), "--linger", "8", *SETTINGS])
    info = json.loads(fed.get("fed/info")[0])
    assert info["strategy"] == "FedAdam" and info["dp"] == {"noiseMultiplier": noise, "clippingNorm": clip}
    initial, headers = fed.get("fed/global.onnx")
    assert headers["X-Round"] == "0"
    joins = [Join(tmp_path, fed, digits / "data" / "client_5.csv", "onnxtrain"),
             Join(tmp_path, fed, digits / "data" / "client_6.csv", "onnxruntime")]
    deadline = time.monotonic() + 300
    while (status := fed.status())["phase"] not in ("done", "failed"):
        assert time.monotonic() < deadline and fed.proc.poll() is None, fed.text()
        time.sleep(1)
    assert status["phase"] == "done", (status, fed.text())
    assert [(h["round"], h["results"], h["failures"], h["rejected"]) for h in status["history"]] == [
        (1, 2, 0, []), (2, 2, 0, [])]
    final, headers = fed.get("fed/global.onnx")
    assert headers["X-Round"] == "2"
    before, after = _weights(initial), _weights(final)
    assert before.keys() == after.keys() and before
    moved = max(np.abs(after[k] - before[k]).max() for k in before)
    # round 1 moves every weight with a non-zero update by eta; round 2 by at most ~1.35 eta (Adam's moments);
    # the noise's standard deviation is noise * clip / 2 = 0.00025
    assert 0.9 * eta < moved < 2.5 * eta + 0.003, moved
    assert fed.proc.wait(60) == 0, fed.text()
    # flwr run streams the ServerApp's log and is stopped once the run is done: the last round's lines may be cut
    log = (fed.log_dir / "flwr-run.log").read_text()
    noised = log.count(f"aggregate_fit: central DP noise with {noise * clip / 2:.4f} stdev added")
    clipped = log.count(f"aggregate_fit: parameters are clipped by value: {clip:.4f}")  # one per reply
    assert noised >= 1 and 2 * noised <= clipped <= 2 * noised + 2, log[-3000:]
    for join in joins:
        assert join.proc.wait(60) == 0, join.out.read_text()


def test_sigterm_stops_every_process(digits, tmp_path):
    fed = Federate(tmp_path, ["--artifacts", str(digits / "mlp"), "--rounds", "1", "--min-clients", "3"])
    status, body = post(f"{fed.url}/fed/join")
    assert status == 200
    deadline = time.monotonic() + 60
    assert not any("flower-supernode" in p for p in processes_using(fed.log_dir))  # pages cost no process
    while not any("flwr-serverapp" in p for p in tree(fed.proc.pid)):  # started by the superlink's superexec
        assert time.monotonic() < deadline, fed.text()
        time.sleep(0.5)
    started = tree(fed.proc.pid)
    assert len(started) >= 4, started  # superlink, its superexec and flwr-serverapp, flwr run, ...
    fed.proc.send_signal(signal.SIGTERM)
    assert fed.proc.wait(30) == 130, fed.text()
    assert still_running(started) == []
    assert processes_using(fed.log_dir) == []


def still_running(processes: list, wait: float = 5.0) -> list:
    """Those of the "pid: command" ``processes`` that still run (not gone, not a zombie) after up to ``wait`` s."""
    from onnxtrain.federated.processes import _alive
    deadline = time.monotonic() + wait
    while (running := [p for p in processes if _alive(int(p.split(":")[0]))]) and time.monotonic() < deadline:
        time.sleep(0.2)
    return running


def tree(pid: int) -> list:
    """"pid: command" of the live descendants of ``pid``."""
    from onnxtrain.federated.processes import descendants
    out = []
    for child in descendants([pid]):
        try:
            out.append(f"{child}: " + Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return out
