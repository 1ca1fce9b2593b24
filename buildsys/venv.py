"""The test venv (.venv): CPython 3.11 with requirements-test.txt, and this checkout's pysrc on its path."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from buildsys.common import CACHE, ROOT, run

VENV = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements-test.txt"
PYTHON_FOR_VENV = ("python3.11", "python3")  # onnxruntime-training 1.19.2 has wheels up to CPython 3.11


def venv_python() -> Path:
    return VENV / "bin" / "python"


def find_base_python() -> str:
    for name in PYTHON_FOR_VENV:
        exe = shutil.which(name)
        if not exe:
            continue
        out = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] == (3, 11))"],
                             capture_output=True, text=True)
        if out.stdout.strip() == "True":
            return exe
    sys.exit("build.py: the test venv needs CPython 3.11 (onnxruntime-training-cpu 1.19.2 has no newer wheels); "
             "none of " + ", ".join(PYTHON_FOR_VENV) + " is 3.11")


def ensure_venv() -> Path:
    """Create .venv and install requirements-test.txt when it changed; put this checkout's pysrc on its path."""
    stamp = VENV / ".requirements.sha256"
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if not (venv_python().exists() and stamp.exists() and stamp.read_text() == want):
        if not venv_python().exists():
            run([find_base_python(), "-m", "venv", VENV])
        env = dict(os.environ, PIP_CACHE_DIR=str(CACHE / "pip"), PIP_DISABLE_PIP_VERSION_CHECK="1")
        run([venv_python(), "-m", "pip", "install", "-q", "-r", REQUIREMENTS], env=env)
        stamp.write_text(want)
    if not VENV.is_symlink():  # a venv shared from another checkout keeps that checkout's sources
        link_sources(next((VENV / "lib").glob("python3*/site-packages")))
    return venv_python()


def link_sources(site_packages: Path) -> Path:
    """A .pth file in the venv's site-packages that puts this checkout's pysrc on its path, so that
    `.venv/bin/python -m onnxtrain ...` runs from a checkout; written only when it says something else."""
    pth = Path(site_packages) / "onnxtrain-checkout.pth"
    text = f"{ROOT / 'pysrc'}\n"
    if not pth.exists() or pth.read_text() != text:
        pth.write_text(text)
    return pth
