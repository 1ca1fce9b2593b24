"""The Flower processes a federation runs (flower-superlink, flower-supernode, flwr run), each started in its own
process group so that stopping it stops what it spawned too (flower-superexec, flwr-serverapp, flwr-clientapp)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import onnxtrain


def tool(name: str) -> str:
    """The path of Flower's command ``name`` next to this Python, else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.path.exists(here) else shutil.which(name)
    if not found:
        raise FileNotFoundError(f"Flower's command {name} is not installed next to {sys.executable} or on PATH: "
                                f"install flwr==1.42.0")
    return found


def child_env(flwr_home: str) -> dict:
    """The environment of the Flower processes: onnxtrain importable (also when it is not installed) and one
    thread per numpy/onnxruntime process."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(onnxtrain.__file__)))
    path = os.environ.get("PYTHONPATH")
    tools = os.path.dirname(sys.executable)  # Flower's processes start its other commands by name
    return dict(os.environ, FLWR_HOME=flwr_home, PYTHONPATH=package_root + (os.pathsep + path if path else ""),
                PATH=tools + os.pathsep + os.environ.get("PATH", ""),
                OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONUNBUFFERED="1")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_open(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), 0.2).close()
        return True
    except OSError:
        return False


def log_tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


class Children:
    """The processes started here, stopped together (SIGTERM to each group, then SIGKILL after ``grace``)."""

    def __init__(self, log_dir: str):
        self.log_dir, self.procs = log_dir, []

    def start(self, name: str, argv: list, env: dict) -> subprocess.Popen:
        log = os.path.join(self.log_dir, f"{name}.log")
        with open(log, "w") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        proc.log, proc.name = log, name
        self.procs.append(proc)
        return proc

    def wait_port(self, proc: subprocess.Popen, host: str, port: int, timeout: float = 60, stopped=None) -> float:
        """Seconds until ``port`` accepts; RuntimeError with the log's end if ``proc`` exits or time runs out
        (or as soon as ``stopped()``)."""
        start = time.monotonic()
        while not port_open(host, port) and not (stopped is not None and stopped()):
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.name} exited with code {proc.returncode}:\n{log_tail(proc.log)}")
            if time.monotonic() - start > timeout:
                raise RuntimeError(f"{proc.name} did not open port {port} within {timeout:g} s:\n"
                                   f"{log_tail(proc.log)}")
            time.sleep(0.1)
        return time.monotonic() - start

    def stop_all(self, grace: float = 5.0) -> None:
        """Stop the processes, their groups and every descendant (flower-superlink starts its flower-superexec,
        which starts flwr-serverapp, in a session of its own)."""
        tree = descendants([p.pid for p in self.procs])
        for proc in reversed(self.procs):
            _signal_group(proc, signal.SIGTERM)
        _signal_pids(tree, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        while any(_alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.1)
        for proc in self.procs:  # the group too: helpers of a process that exited may still run
            _signal_group(proc, signal.SIGKILL)
            try:
                proc.wait(1)
            except subprocess.TimeoutExpired:
                pass
        _signal_pids([pid for pid in tree if _alive(pid)], signal.SIGKILL)
        self.procs = []


def descendants(pids: list) -> list:
    """The live descendants of ``pids`` (from /proc; none where there is no /proc)."""
    children = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _signal_pids(pids: list, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _signal_group(proc: subprocess.Popen, sig) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def on_signals(handler) -> None:
    """``handler(signum)`` on SIGINT and SIGTERM (in the main thread)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: handler(signum))
