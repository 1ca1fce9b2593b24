#!/usr/bin/env python3
"""Build, test and serve onnxtrain.  Standard library only.

    python3 build.py test [pytest args]   set up the venv and run the test suite
    python3 build.py bench                run the benchmarks in bench/
    python3 build.py wheel                build dist/onnxtrain-<v>-py3-none-any.whl

Everything the tests need is installed here: a venv in .venv with the pinned
packages of requirements-test.txt.  Downloads are cached under .cache/.
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
CACHE = ROOT / ".cache"
REQUIREMENTS = ROOT / "requirements-test.txt"
PYTHON_FOR_VENV = ("python3.11", "python3")  # onnxruntime-training 1.19.2 has wheels up to CPython 3.11


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def run(cmd: list, **kw) -> None:
    log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


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
    """Create .venv and install requirements-test.txt when it changed."""
    stamp = VENV / ".requirements.sha256"
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if venv_python().exists() and stamp.exists() and stamp.read_text() == want:
        return venv_python()
    if not venv_python().exists():
        run([find_base_python(), "-m", "venv", VENV])
    env = dict(os.environ, PIP_CACHE_DIR=str(CACHE / "pip"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    run([venv_python(), "-m", "pip", "install", "-q", "-r", REQUIREMENTS], env=env)
    stamp.write_text(want)
    return venv_python()


def project_version() -> str:
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    raise SystemExit("build.py: no version in pyproject.toml")


def build_wheel() -> Path:
    """Write a py3-none-any wheel of pysrc/onnxtrain (pure Python, no build backend needed)."""
    version = project_version()
    name = f"onnxtrain-{version}"
    dist = ROOT / "dist"
    dist.mkdir(exist_ok=True)
    wheel = dist / f"{name}-py3-none-any.whl"
    files: list[tuple[str, bytes]] = []
    for path in sorted((ROOT / "pysrc" / "onnxtrain").rglob("*.py")):
        files.append((path.relative_to(ROOT / "pysrc").as_posix(), path.read_bytes()))
    info = f"{name}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: onnxtrain\nVersion: {version}\n"
                "Requires-Python: >=3.11\nRequires-Dist: numpy>=1.26\nRequires-Dist: flatbuffers>=23.5\n")
    files.append((f"{info}/METADATA", metadata.encode()))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: onnxtrain-build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = []
    for arc, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in files:
            zi = zipfile.ZipInfo(arc, date_time=(2024, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    tmp.replace(wheel)
    log(f"wrote {wheel.relative_to(ROOT)}")
    return wheel


def cmd_test(args: list[str]) -> int:
    py = ensure_venv()
    build_wheel()
    env = dict(os.environ, OMP_NUM_THREADS="1", ONNXTRAIN_CACHE=str(CACHE))
    return subprocess.run([str(py), "-m", "pytest", *args], cwd=ROOT, env=env).returncode


def cmd_bench(args: list[str]) -> int:
    py = ensure_venv()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=str(ROOT / "pysrc"), ONNXTRAIN_CACHE=str(CACHE))
    code = 0
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        code |= subprocess.run([str(py), str(script), *args], cwd=ROOT, env=env).returncode
    return code


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "test":
        return cmd_test(rest)
    if cmd == "bench":
        return cmd_bench(rest)
    if cmd == "wheel":
        build_wheel()
        return 0
    if cmd == "venv":
        ensure_venv()
        return 0
    print(f"build.py: unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
