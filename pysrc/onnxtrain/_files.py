"""File writes that never leave a partial file behind.

The data goes to a temporary file in the target's folder, is flushed to disk (fsync), and is renamed
over the target; the folder is then synced where the platform allows.  A process killed mid-write runs
no cleanup, so:

- where the OS has O_TMPFILE (Linux), the temporary file has no name while it is written; a name is
  linked in only once the data is complete, for the moment before the rename;
- elsewhere (macOS, Windows, Pyodide's in-memory file system) it is named
  ``.<target name>.<pid>.<random>.tmp``, and the next save to the same target removes those left by
  processes that no longer run.
"""
from __future__ import annotations

import errno
import os
import secrets
import sys

_SUFFIX = ".tmp"
_writing: set = set()  # temporary paths this process is writing now
_unnamed_works: dict = {}  # st_dev -> whether an O_TMPFILE file can be linked in on that file system


def atomic_write(path, data) -> None:
    """Write ``data`` (bytes-like) to ``path`` so that ``path`` holds either its old content or all of
    ``data``, never a mix; FileNotFoundError naming the folder when the folder does not exist."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, f"cannot save {path}: the folder {folder} does not exist", folder)
    _remove_stale(folder, os.path.basename(path))
    tmp = _temp_name(folder, os.path.basename(path))
    _writing.add(tmp)
    try:
        if not _write_unnamed(folder, tmp, data):
            _write_named(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        _writing.discard(tmp)
    _sync_folder(folder)


def _temp_name(folder: str, name: str) -> str:
    return os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(6)}{_SUFFIX}")


def _write_all(fd: int, data) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _write_unnamed(folder: str, tmp: str, data) -> bool:
    """Write ``data`` to an O_TMPFILE file and link it in as ``tmp``; False where that is not possible
    (no O_TMPFILE, a file system without it, or no /proc)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or sys.platform != "linux" or not os.path.isdir("/proc/self/fd"):
        return False
    device = os.stat(folder).st_dev
    if not _unnamed_works.get(device, True):
        return False
    try:
        fd = os.open(folder, flag | os.O_WRONLY, 0o666)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            _unnamed_works[device] = False
            return False
        raise
    try:
        if device not in _unnamed_works:  # can a name be linked in on this file system?
            _unnamed_works[device] = _can_link(folder, flag, tmp)
            if not _unnamed_works[device]:
                return False
        _write_all(fd, data)
        _link(fd, tmp)
    finally:
        os.close(fd)
    return True


def _can_link(folder: str, flag: int, tmp: str) -> bool:
    probe = os.open(folder, flag | os.O_WRONLY, 0o666)  # a file once linked and unlinked cannot be linked again
    try:
        _link(probe, tmp)
        os.unlink(tmp)
        return True
    except OSError:
        return False
    finally:
        os.close(probe)


def _link(fd: int, tmp: str) -> None:
    """Give the unnamed file ``fd`` the name ``tmp``: through /proc/self/fd, else linkat(AT_EMPTY_PATH)
    (which some kernels allow only to privileged processes)."""
    try:
        os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
        return
    except OSError as e:
        first = e
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, at_empty_path = -100, 0x1000
    if libc.linkat(fd, b"", at_fdcwd, os.fsencode(tmp), at_empty_path) != 0:
        raise first


def _write_named(tmp: str, data) -> None:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _sync_folder(folder: str) -> None:
    """Make the rename durable; skipped where a folder cannot be opened or synced (Windows, Pyodide)."""
    if os.name == "nt":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale(folder: str, name: str) -> None:
    """Remove the temporary files of earlier saves to ``name`` whose process is gone."""
    prefix = f".{name}."
    try:
        entries = [e for e in os.listdir(folder) if e.startswith(prefix) and e.endswith(_SUFFIX)]
    except OSError:
        return
    for entry in entries:
        parts = entry[len(prefix):-len(_SUFFIX)].split(".")
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        tmp = os.path.join(folder, entry)
        if tmp in _writing or _running(int(parts[0])):
            continue
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _running(pid: int) -> bool:
    """Whether another process ``pid`` may still be writing (this process's own saves are in _writing)."""
    if pid == os.getpid():
        return False
    if os.name == "nt" or not hasattr(os, "kill"):
        return os.name == "nt"  # Windows: os.kill would end the process; Pyodide: one process only
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True
