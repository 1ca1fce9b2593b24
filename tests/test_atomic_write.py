"""Atomic saves: data synced before the rename, no temporary file left by a save killed mid-write (real
processes, SIGKILL), stale temporary files removed by the next save, a missing folder named."""

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


@pytest.mark.skipif(sys.platform != "linux", reason="O_TMPFILE is Linux's")
def test_a_killed_save_leaves_no_temporary_file(tmp_path):
    assert unnamed_supported(tmp_path), "O_TMPFILE saves should work on this Linux file system"
    rng = random.Random(0)
    target = tmp_path / "model.onnx"
    for _ in range(20):
        kill_mid_save(target, "unnamed", rng)
        assert sorted(os.listdir(tmp_path)) == ["model.onnx"]
        check_whole(target)


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


def test_saving_into_a_missing_folder_names_the_folder(tmp_path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError, match=f"cannot save {missing / 'm.onnx'}: the folder {missing} does "
                                                 f"not exist"):
        atomic_write(missing / "m.onnx", b"x")
    assert os.listdir(tmp_path) == []


def test_data_is_synced_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.path.isdir(f"/proc/self/fd/{fd}") if sys.platform == "linux" else None))
        real_fsync(fd)

    def replace(a, b):
        events.append(("replace", None))
        real_replace(a, b)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write(tmp_path / "f", b"data")
    assert [e[0] for e in events] == ["fsync", "replace", "fsync"]
    if sys.platform == "linux":
        assert [e[1] for e in events] == [False, None, True]  # the file, then its folder
    assert (tmp_path / "f").read_bytes() == b"data"


def test_a_failed_write_removes_its_temporary_file_and_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "f"
    atomic_write(target, b"old")

    def full(fd):
        raise OSError(28, "No space left on device")
    for unnamed in (True, False):
        if not unnamed:
            monkeypatch.setattr(_files, "_write_unnamed", lambda folder, tmp, data: False)
        monkeypatch.setattr(os, "fsync", full)
        with pytest.raises(OSError, match="No space left"):
            atomic_write(target, b"new")
        monkeypatch.undo()
        assert target.read_bytes() == b"old"
        assert os.listdir(tmp_path) == ["f"]
