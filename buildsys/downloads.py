"""Cached downloads through the package registries' own clients: npm packages, PyPI wheels, the pinned
JavaScript tools (tools/package.json) and Debian packages."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from buildsys.common import CACHE, ROOT, run
from buildsys.venv import venv_python

def npm_package(name: str, version: str) -> Path:
    """The unpacked npm package name@version (cached)."""
    folder = CACHE / "npm" / f"{name}-{version}"
    if (folder / "package" / "package.json").exists():
        return folder / "package"
    tgz = CACHE / "npm" / f"{name}-{version}.tgz"
    if not tgz.exists():
        tgz.parent.mkdir(parents=True, exist_ok=True)
        run(["npm", "pack", "--loglevel=error", f"{name}@{version}", "--pack-destination", tgz.parent],
            stdout=subprocess.DEVNULL)
    tmp = folder.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(tgz) as tar:
        tar.extractall(tmp, filter="data")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder / "package"


NODE_TOOLS = ROOT / "tools"  # package.json and package-lock.json: the pinned JavaScript tools


def node_tools() -> Path:
    """The node_modules of tools/package.json (esbuild, the bundlers, TypeScript, TypeDoc), installed by `npm ci`
    into .cache/node-tools when the lock file changed."""
    dest = CACHE / "node-tools"
    lock = (NODE_TOOLS / "package-lock.json").read_bytes()
    stamp = dest / ".lock.sha256"
    want = hashlib.sha256(lock).hexdigest()
    if stamp.exists() and stamp.read_text() == want and (dest / "node_modules").is_dir():
        return dest / "node_modules"
    dest.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(NODE_TOOLS / name, dest / name)
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=dest,
        env=dict(os.environ, npm_config_cache=str(CACHE / "npm-cache")), stdout=subprocess.DEVNULL)
    stamp.write_text(want)
    return dest / "node_modules"


def pypi_file(name: str, version: str) -> Path:
    """A wheel from PyPI, downloaded once into .cache/pypi."""
    folder = CACHE / "pypi"
    stem = name.replace("-", "_")
    found = [p for p in folder.glob(f"{stem}-{version}-*.whl")] if folder.exists() else []
    if not found:
        run([venv_python(), "-m", "pip", "download", "-q", "--no-deps", "-d", folder, f"{name}=={version}"],
            env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
        found = list(folder.glob(f"{stem}-{version}-*.whl"))
    if len(found) != 1:
        sys.exit(f"build.py: expected one wheel for {name}=={version} in {folder}, found {found}")
    return found[0]


APT_UPDATED = []


def apt_install(exe: Path, package: str, why: str) -> None:
    """Debian's ``package`` (which provides ``exe``), installed once."""
    if exe.exists():
        return
    if shutil.which("apt-get") is None:
        sys.exit(f"build.py: {why} needs {exe} (Debian package {package!r}), and apt-get is missing")
    if not APT_UPDATED:
        run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL)
        APT_UPDATED.append(True)
    run(["apt-get", "install", "-y", "-q", package], stdout=subprocess.DEVNULL,
        env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
