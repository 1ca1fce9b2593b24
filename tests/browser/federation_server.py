"""For test_federation: `python -m onnxtrain federate` and `python -m onnxtrain join` as the user runs them (free
ports, output read line by line), and a hostile client that speaks the pages' HTTP API with bad updates."""
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

from onnxtrain.federated.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"serving (http://127\.0\.0\.1:\d+)/")
SUPERLINK = re.compile(r"SuperLink up on (127\.0\.0\.1:\d+)")


def child_env() -> dict:
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(ROOT / "pysrc") + (os.pathsep + path if path else ""),
                OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")


class Process:
    """A command of onnxtrain's CLI running in its own session; its output lines kept (and echoed with ``name``)."""

    def __init__(self, name: str, args: list):
        self.name, self.lines = name, []
        self.proc = subprocess.Popen([sys.executable, "-m", "onnxtrain", *args], cwd=ROOT, env=child_env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            print(f"[{self.name}] {line}", end="", flush=True)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: re.Pattern, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = pattern.search(line)
                if found:
                    return found
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with code {self.proc.returncode}:\n{self.output[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"{self.name} did not print {pattern.pattern!r} within {timeout} s:\n{self.output[-3000:]}")

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM (the command stops what it started), then SIGKILL of its session if it does not exit."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._reader.join(5)
        return self.proc.returncode


class Federation(Process):
    """`python -m onnxtrain federate` with ``options`` on a free port and a free SuperLink port."""

    def __init__(self, options: list):
        super().__init__("federate", ["federate", *options, "--port", "0", "--superlink-port", str(free_port())])
        self.url = self.wait_for(SERVING, 120)[1] + "/"
        self.superlink = self.wait_for(SUPERLINK, 5)[1]

    def get(self, path: str, timeout: float = 30):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as response:
            return response.read(), dict(response.headers.items())

    def json(self, path: str):
        return json.loads(self.get(path)[0])

    def join(self, name: str, data: Path, backend: str) -> Process:
        return Process(name, ["join", "--superlink", self.superlink, "--server", self.url, "--data", str(data),
                              "--backend", backend])


def request(url: str, method: str = "GET", body: bytes | None = None, headers: dict | None = None, timeout=30):
    """(status, headers, body) of one HTTP request; HTTP errors are answers too."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read()


class HostileClient(threading.Thread):
    """A client of the pages' API that answers its first task with NaN in a parameter vector of the right size
    and its second with one float too many, then leaves.  ``answers``: (round, what, HTTP status, reply)."""

    def __init__(self, url: str, parameters: int):
        super().__init__(daemon=True)
        self.url, self.parameters, self.answers, self.error = url, parameters, [], None

    def run(self) -> None:
        try:
            status, _, body = request(self.url + "fed/join", "POST", b"")
            assert status == 200, (status, body)
            client = json.loads(body)["client"]
            bad = [("NaN", self._nan), ("one float too many", self._too_long)]
            while bad:
                status, headers, body = request(f"{self.url}fed/next?client={client}", timeout=60)
                if status == 204:
                    continue
                if status != 200:
                    raise RuntimeError(f"fed/next answered {status}: {body[:200]!r}")
                what, make = bad.pop(0)
                vector = make(np.frombuffer(body, np.float32))
                metrics = json.dumps({"num-examples": 100, "loss": 1.0})
                answer = request(f"{self.url}fed/result?client={client}&task={headers['X-Task']}", "POST",
                                 vector.tobytes(), {"X-Metrics": metrics, "Content-Type": "application/octet-stream"})
                self.answers.append((int(headers["X-Round"]), what, answer[0], answer[2].decode(errors="replace")))
            request(f"{self.url}fed/leave?client={client}", "POST", b"")
        except Exception as e:  # reported by the test
            self.error = e

    @staticmethod
    def _nan(vector):
        out = vector.copy()
        out[::7] = np.nan
        return out

    @staticmethod
    def _too_long(vector):
        return np.append(vector, np.float32(0.5))
