"""Atomic saves, the parts that need no second process (also run inside Pyodide, on its in-memory file
system): the data synced before the rename, a missing folder named, failed writes cleaned up, stale
temporary files of this process removed."""

import os
import sys

import pytest

from onnxtrain import _files
from onnxtrain._files import atomic_write

IN_PYODIDE = True


def test_write_and_overwrite(tmp_path):
    atomic_write(tmp_path / "f", b"one")
    atomic_write(str(tmp_path / "f"), bytearray(b"two"))
    atomic_write(tmp_path / "f", memoryview(b"three"))
    assert (tmp_path / "f").read_bytes() == b"three"
    assert os.listdir(tmp_path) == ["f"]


def test_stale_files_of_this_process_are_removed_and_others_kept(tmp_path):
    names = {f".ck.{os.getpid()}.0a1b2c3d4e5f.tmp": False,   # this process, not saving now: a killed save
             f".other.{os.getpid()}.0a1b2c3d4e5f.tmp": True,  # another target
             ".ck.notes.tmp": True,                            # not a temporary file's name
             "ck.backup": True}
    for name in names:
        (tmp_path / name).write_bytes(b"partial")
    atomic_write(tmp_path / "ck", b"new")
    assert set(os.listdir(tmp_path)) == {"ck"} | {n for n, keep in names.items() if keep}


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
    if sys.platform == "linux":
        assert [e[0] for e in events] == ["fsync", "replace", "fsync"]
    if sys.platform == "linux":
        assert [e[1] for e in events] == [False, None, True]  # the file, then its folder
    else:  # Pyodide: the folder sync is skipped where the file system cannot open a folder
        assert [e[0] for e in events][:2] == ["fsync", "replace"]
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
