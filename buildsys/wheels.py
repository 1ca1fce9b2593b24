"""Wheels written without a build backend: onnxtrain's pure-Python wheel and the platform wheels' common form."""
from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from buildsys.common import ROOT, log, project_version

def build_wheel() -> Path:
    """Write a py3-none-any wheel of pysrc/onnxtrain (pure Python, no build backend needed): its modules and
    package data (browser_check's runner page), with pyproject.toml's dependencies, extras and entry points."""
    import tomllib
    version = project_version()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    files: list[tuple[str, bytes]] = []
    for path in sorted((ROOT / "pysrc" / "onnxtrain").rglob("*")):
        if path.suffix in (".py", ".html", ".mjs", ".wgsl") and path.is_file() and "__pycache__" not in path.parts:
            files.append((path.relative_to(ROOT / "pysrc").as_posix(), path.read_bytes()))
    metadata = [f"Requires-Python: {project['requires-python']}"]
    metadata += [f"Requires-Dist: {d}" for d in project["dependencies"]]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        metadata.append(f"Provides-Extra: {extra}")
        metadata += [f'Requires-Dist: {d}; extra == "{extra}"' for d in requirements]
    groups = project.get("entry-points", {})
    entry_points = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
                           for group, points in groups.items())
    return write_wheel("onnxtrain", version, "py3-none-any", files, metadata, entry_points)


def write_wheel(name: str, version: str, tag: str, files: list[tuple[str, bytes]], metadata: list[str],
                entry_points: str = "") -> Path:
    """dist/<name>-<version>-<tag>.whl holding ``files`` (archive name, bytes) and its dist-info."""
    dist = ROOT / "dist"
    dist.mkdir(exist_ok=True)
    wheel = dist / f"{name}-{version}-{tag}.whl"
    info = f"{name}-{version}.dist-info"
    files = list(files)
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *metadata]
    files.append((f"{info}/METADATA", ("\n".join(metadata) + "\n").encode()))
    if entry_points:
        files.append((f"{info}/entry_points.txt", entry_points.encode()))
    purelib = "true" if tag.endswith("-any") else "false"
    files.append((f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: onnxtrain-build\nRoot-Is-Purelib: {purelib}\n"
                                   f"Tag: {tag}\n".encode()))
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
            if arc.endswith(".so"):
                zi.external_attr = 0o755 << 16
            zf.writestr(zi, data)
    tmp.replace(wheel)
    log(f"wrote {wheel.relative_to(ROOT)}")
    return wheel
