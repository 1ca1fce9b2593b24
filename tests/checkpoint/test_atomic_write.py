"""Atomic saves with real processes: no temporary file left by a save killed mid-write (SIGKILL), stale
temporary files of dead processes removed by the next save, those of running ones kept.  The checks
that need no second process are in test_atomic_write_pure.py (also run inside Pyodide)."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from onnxtrain import _files
from onnxtrain._files import atomic_write

FILES_PY = Path(_files.__file__)
SIZE = 8 << 20

# A child that saves 8 MB payloads of b"a" and b"b" in turn to one target until it is killed.  It loads
# _files.py alone (no numpy import), so that it starts at once.
CHILD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("files", sys.argv[1])
files = importlib.util.module_from_spec(spec)
spec.loader.exec_module(files)
if sys.argv[3] == "named":
    files._write_unnamed = lambda folder, tmp, data: False
payloads = [b"a" * {size}, b"b" * {size}]
files.atomic_write(sys.argv[2], payloads[0])
print("ready", flush=True)
i = 1
while True:
    files.atomic_write(sys.argv[2], payloads[i % 2])
    i += 1
""".format(size=SIZE)


def kill_mid_save(target: Path, mode: str, rng) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(FILES_PY), str(target), mode],
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0, 0.15))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()


def check_whole(target: Path) -> None:
    data = target.read_bytes()
    assert len(data) == SIZE and data in (b"a" * SIZE, b"b" * SIZE)


def unnamed_supported(folder) -> bool:
    probe = Path(folder) / "probe"
    atomic_write(probe, b"x")
    probe.unlink()
    return _files._unnamed_works.get(os.stat(folder).st_dev, False)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="O_TMPFILE is Linux's")
def test_a_killed_save_leaves_no_partial_temporary_file(tmp_path):
    """The file has no name while it is written.  Linux cannot rename an unnamed file over the target, so it gets
    a name once complete, for the moment before the rename: a kill in that moment leaves that name, holding the
    whole payload, and the next save removes it (its process is gone)."""
    assert unnamed_supported(tmp_path), "O_TMPFILE saves should work on this Linux file system"
    rng = random.Random(0)
    target = tmp_path / "model.onnx"
    for _ in range(20):
        kill_mid_save(target, "unnamed", rng)
        check_whole(target)
        left = [n for n in os.listdir(tmp_path) if n != "model.onnx"]
        assert len(left) <= 1 and all(n.startswith(".model.onnx.") and n.endswith(".tmp") for n in left), left
        if left:
            check_whole(tmp_path / left[0])
            atomic_write(target, b"a" * SIZE)
            assert sorted(os.listdir(tmp_path)) == ["model.onnx"]


@pytest.mark.slow
def test_temporary_files_of_killed_named_saves_are_removed_by_the_next_save(tmp_path):
    rng = random.Random(1)
    target = tmp_path / "ck"
    for _ in range(10):
        kill_mid_save(target, "named", rng)
        check_whole(target)
        left = [n for n in os.listdir(tmp_path) if n != "ck"]
        assert all(n.startswith(".ck.") and n.endswith(".tmp") for n in left), left
        atomic_write(target, b"c")
        assert sorted(os.listdir(tmp_path)) == ["ck"]
        assert target.read_bytes() == b"c"


def test_stale_files_of_running_processes_and_other_targets_are_kept(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    dead_pid = int(finished.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {f".ck.{dead_pid}.0a1b2c3d4e5f.tmp": False,          # a killed save of ck: removed
                 f".ck.{os.getpid()}.0a1b2c3d4e5f.tmp": False,        # this process, not saving now: removed
                 f".ck.{live.pid}.0a1b2c3d4e5f.tmp": True,            # another process may still be saving
                 f".other.{dead_pid}.0a1b2c3d4e5f.tmp": True,         # another target
                 ".ck.notes.tmp": True}                                # not a temporary file's name
        for name in names:
            (tmp_path / name).write_bytes(b"partial")
        atomic_write(tmp_path / "ck", b"new")
        kept = set(os.listdir(tmp_path))
        assert kept == {"ck"} | {n for n, keep in names.items() if keep}
    finally:
        live.kill()
        live.wait()
