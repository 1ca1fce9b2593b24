#!/usr/bin/env python3
"""Build, test and serve onnxtrain.  Standard library only.

    python3 build.py serve [--port N] [--no-isolation]
                                          build the site and serve it on 127.0.0.1
    python3 build.py serve --federate [federate options]
                                          ... with a Flower federation of the digits that pages join
    python3 build.py test [pytest args]   set up everything and run the whole test suite (what CI runs); the site
                                          is built only when browser tests are among those selected
    python3 build.py test --quick [-- pytest args]
                                          the quick set, pytest -m "not browser and not slow": no site build;
                                          one area: python3 build.py test --quick -- tests/<area>
    python3 build.py site                 assemble site/ (the static site, fully self-contained, no test hooks)
    python3 build.py bench                run the benchmarks in bench/
    python3 build.py fuzz [--seconds N]   a long mutation-fuzzing campaign (bench/fuzz.py) over every file reader
    python3 build.py wheel                build dist/onnxtrain-<v>-py3-none-any.whl
    python3 build.py native               build the kernels for this platform: dist/onnxtrain_native-<v>-*.whl
    python3 build.py device-kit           .cache/device-kit: what bench/on_gpu.sh needs on a lent GPU machine

Everything is installed here: a venv in .venv with the pinned packages of
requirements-test.txt, Debian's chromium for the browser tests, espeak-ng for the audio
tests and mesa-vulkan-drivers for the WebGPU tests (a CPU Vulkan adapter), Pyodide from
npm and the Pyodide wheels (checked by sha256 against Pyodide's lock file).
Downloads are cached under .cache/, so a rebuild works offline.  The jobs live in buildsys/, one module each.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # buildsys/, beside this file, when loaded by its path
    sys.path.insert(0, str(Path(__file__).resolve().parent))

# The names tests/ and bench/ read as build.<name>, with those the commands use.
from buildsys.common import CACHE, ROOT, SITE, link_or_copy, log, project_version, replace_file, run  # noqa: E402,F401
from buildsys.downloads import NODE_TOOLS, apt_install, node_tools, npm_package  # noqa: E402,F401
from buildsys.kernels import NATIVE, build_native  # noqa: E402,F401
from buildsys.library import API_REFERENCE, LIBRARY  # noqa: E402,F401
from buildsys.npm import BACKBONE_PACKAGE  # noqa: E402,F401
from buildsys.pyodide_runtime import (PYC_FILES, PYODIDE_CORE, PYODIDE_PACKAGES, PYODIDE_VERSION,  # noqa: E402,F401
                                      PYODIDE_WHEEL_SOURCE, START_IMPORTS, vendor_pyodide)
from buildsys.serve import SiteHandler, make_server, serve_federation, serve_in_background  # noqa: E402,F401
from buildsys.site import build_site, write_precache  # noqa: E402,F401
from buildsys.testing import (CHROMIUM, LAVAPIPE, TEST_HOOKS, TEST_SITE, TEST_WHEELS,  # noqa: E402,F401
                              add_test_hooks, build_test_site, ensure_chromium,
                              ensure_espeak)
from buildsys.venv import REQUIREMENTS, ensure_venv  # noqa: E402,F401
from buildsys.wheels import build_wheel  # noqa: E402,F401


def cmd_serve(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="build.py serve", description="Build the site and serve it on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--no-isolation", action="store_true",
                        help="leave out the cross-origin-isolation headers (COOP/COEP), as a plain static host would")
    parser.add_argument("--federate", action="store_true",
                        help="also run a Flower federation that pages join (the digits demo); the options that follow "
                             "are python -m onnxtrain federate's (see its --help)")
    options, rest = parser.parse_known_args(args)
    if options.federate:
        if options.no_isolation:
            parser.error("--no-isolation is for the static site; the federation server always isolates")
        return serve_federation(options.port, rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    build_site()
    server = make_server(SITE, options.port, isolate=not options.no_isolation)
    print(f"onnxtrain site: http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


#: the quick set's marker expression: no browser, nothing slow, so no site to build
QUICK = "not browser and not slow"


def cmd_test(args: list[str]) -> int:
    """pytest in the venv with the native kernels and the CPU Vulkan driver; the site and the test site are built
    when browser tests are collected (buildsys.pytest_site), never with --quick."""
    quick = args[:1] == ["--quick"]
    if quick:
        args = args[2:] if args[1:2] == ["--"] else args[1:]
    py = ensure_venv()
    if not quick:
        ensure_chromium()
    apt_install(LAVAPIPE, "mesa-vulkan-drivers", "the WebGPU tests (a CPU Vulkan adapter for wgpu)")
    ensure_espeak()
    build_native()
    env = dict(os.environ, OMP_NUM_THREADS="1", ONNXTRAIN_CACHE=str(CACHE), VK_DRIVER_FILES=str(LAVAPIPE))
    if quick:
        log(f'quick set: pytest -m "{QUICK}" (no site); one area: python3 build.py test --quick -- tests/<area>; '
            "everything, as CI: python3 build.py test")
        return subprocess.run([str(py), "-m", "pytest", "-m", QUICK, *args], cwd=ROOT, env=env).returncode
    return subprocess.run([str(py), "-m", "pytest", "-p", "buildsys.pytest_site", *args], cwd=ROOT,
                          env=env).returncode


def bench_env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                PYTHONPATH=os.pathsep.join([str(ROOT / "pysrc"), str(NATIVE)]), ONNXTRAIN_CACHE=str(CACHE))


def cmd_bench(args: list[str]) -> int:
    py = ensure_venv()
    env = bench_env()
    code = 0
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        code |= subprocess.run([str(py), str(script), *args], cwd=ROOT, env=env).returncode
    return code


# What bench/on_gpu.sh installs on a lent GPU machine (CPython 3.12 with torch, no network, no Vulkan loader): the
# WebGPU wheels for that Python and Debian's Vulkan loader.
DEVICE_KIT = CACHE / "device-kit"
DEVICE_WHEELS = ["wgpu==0.32.0", "cffi==2.1.1", "pycparser==3.12", "rendercanvas==2.7.2", "flatbuffers==25.12.19"]


def cmd_device_kit(args: list[str]) -> int:
    py = ensure_venv()
    DEVICE_KIT.mkdir(parents=True, exist_ok=True)
    run([py, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
         "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", *DEVICE_WHEELS,
         "-d", DEVICE_KIT], env=dict(os.environ, PIP_CACHE_DIR=str(CACHE / "pip")))
    if not list(DEVICE_KIT.glob("libvulkan1_*.deb")):
        run(["apt-get", "download", "libvulkan1"], cwd=DEVICE_KIT, stderr=subprocess.DEVNULL)
    print(f"{DEVICE_KIT.relative_to(ROOT)}: carry it to the GPU machine and run bash bench/on_gpu.sh there")
    return 0


def cmd_fuzz(args: list[str]) -> int:
    """bench/fuzz.py on the site's artifacts (its seeds), with the given arguments."""
    py = ensure_venv()
    build_site()
    return subprocess.run([str(py), str(ROOT / "bench" / "fuzz.py"), *args], cwd=ROOT, env=bench_env()).returncode


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "test":
        return cmd_test(rest)
    if cmd == "serve":
        return cmd_serve(rest)
    if cmd == "site":
        build_site()
        return 0
    if cmd == "bench":
        return cmd_bench(rest)
    if cmd == "fuzz":
        return cmd_fuzz(rest)
    if cmd == "device-kit":
        return cmd_device_kit(rest)
    if cmd == "wheel":
        build_wheel()
        return 0
    if cmd == "native":
        build_native()
        return 0
    if cmd == "venv":
        ensure_venv()
        return 0
    print(f"build.py: unknown command {cmd!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))