"""What every build job shares: the checkout's folders, logging, running a command, file helpers."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout
CACHE = ROOT / ".cache"  # downloads and build outputs, kept between builds
SITE = ROOT / "site"  # the static site (`build.py site`)


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def run(cmd: list, **kw) -> None:
    log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def project_version() -> str:
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    raise SystemExit("build.py: no version in pyproject.toml")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def replace_file(path: Path, data: bytes) -> None:
    """Write ``path`` as a new file (the test site's files are hard links to site/'s: never write through one)."""
    path.unlink(missing_ok=True)
    path.write_bytes(data)


def link_or_copy(source, dest) -> None:
    """A hard link where the file system allows one, else a copy."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)
