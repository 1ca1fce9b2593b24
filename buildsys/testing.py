"""What the tests need besides the venv: the test site (site/ with the test hooks and the test wheels),
Debian's chromium and the CPU Vulkan driver."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from buildsys.common import CACHE, ROOT, SITE, link_or_copy, log, replace_file
from buildsys.downloads import apt_install, pypi_file
from buildsys.library import LIBRARY, bundle_engine, bundle_library
from buildsys.site import write_precache

# What the browser tests serve: site/ plus the test hooks (tests/browser/hooks/ replaces the site's no-op hooks.js
# and the library's onnxtrain/engine_hooks.mjs: the page's window.onnxtrain, the engine's runPython) and the wheels
# that run pytest inside Pyodide.
# Only this copy has them; site/ (what `serve` serves and a deployment ships) has neither.
TEST_SITE = CACHE / "test-site"
TEST_HOOKS = ROOT / "tests" / "browser" / "hooks"
CHROMIUM = Path("/usr/bin/chromium")
ESPEAK = Path("/usr/bin/espeak-ng")  # speaks the audio tests' words (tests/audio/spoken_words.py)
# Mesa's CPU Vulkan driver (lavapipe): the WebGPU adapter the `wgpu` package finds for the WebGPU tests (CI has no
# GPU).  The tests point Vulkan at it with VK_DRIVER_FILES.
LAVAPIPE = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")
# The wheels that run the unit tests inside Pyodide (the test site's testing/wheels/ only).
TEST_WHEELS = [("pytest", "8.3.5"), ("iniconfig", "2.1.0"), ("pluggy", "1.6.0")]


def add_test_hooks(site: Path) -> None:
    """Replace the site's no-op hook modules in the copy ``site`` with tests/browser/hooks/ (the page's
    window.onnxtrain, the engine's runPython), at the same paths, for the tests and the benchmarks."""
    for hook in sorted(p for p in TEST_HOOKS.rglob("*") if p.is_file()):
        path = hook.relative_to(TEST_HOOKS)
        if path.as_posix() == f"{LIBRARY}/engine_hooks.mjs":  # bundled into the engine
            (site / LIBRARY / "engine.mjs").unlink()
            bundle_engine(hook, site / LIBRARY / "engine.mjs")
            continue
        if not (site / path).is_file():
            sys.exit(f"build.py: the test hook {path.as_posix()} replaces no file of the site")
        replace_file(site / path, hook.read_bytes())
    bundle_library(site / LIBRARY, classic=False, test_hooks=True)  # with _engineCall, for the hooks


def build_test_site(site: Path = SITE) -> Path:
    """TEST_SITE: ``site`` (hard links, so no copy of its 18 MB), the test hooks and the test wheels."""
    tmp = TEST_SITE.with_name("test-site.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(site, tmp, copy_function=link_or_copy)
    add_test_hooks(tmp)
    wheels = tmp / "testing" / "wheels"
    wheels.mkdir(parents=True)
    names = {}
    for name, version in TEST_WHEELS:
        path = pypi_file(name, version)
        shutil.copy2(path, wheels / path.name)
        names[name] = path.name
    (wheels / "wheels.json").write_text(json.dumps(names, indent=1))
    write_precache(tmp)
    shutil.rmtree(TEST_SITE, ignore_errors=True)
    tmp.rename(TEST_SITE)
    log(f"test site assembled in {TEST_SITE.relative_to(ROOT)}/ (site/ with the test hooks)")
    return TEST_SITE


def ensure_espeak() -> None:
    """Debian's espeak-ng for the audio tests, which make their clips of spoken words with it."""
    apt_install(ESPEAK, "espeak-ng", "the audio tests")


def ensure_chromium() -> None:
    """Debian's chromium for the browser tests (Playwright drives it; it never downloads a browser)."""
    apt_install(CHROMIUM, "chromium", "the browser tests")
