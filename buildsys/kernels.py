"""The C kernels (web/kernels/*.c): wasm side modules and threaded modules for the page, and the native build
for this machine (.cache/native and the onnxtrain_native wheel)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from buildsys.common import CACHE, ROOT, log, project_version
from buildsys.downloads import apt_install
from buildsys.wheels import write_wheel

# The SIMD kernels (web/kernels/*.c) become a wasm side module that Pyodide loads into its own memory: one
# build with relaxed SIMD (fused multiply-add) and one with plain SIMD128 for engines without it.
CLANG, WASM_LD = Path("/usr/bin/clang-16"), Path("/usr/bin/wasm-ld-16")
KERNEL_SOURCES = ROOT / "web" / "kernels"
NATIVE = CACHE / "native"   # the host build: .cache/native/onnxtrain_native (build_native)
KERNEL_BUILDS = {"onnxtrain_kernels.so": ["-msimd128"],
                 "onnxtrain_kernels_relaxed.so": ["-msimd128", "-mrelaxed-simd", "-DRELAXED"]}
# The same kernels as a standalone threaded module (atomics, shared memory of its own, 2 GiB at most) for the
# kernel pool of a cross-origin isolated page (web/lib/threads.mjs); each pairs with the side module of its flags.
THREADED_KERNEL_BUILDS = {"onnxtrain_kernels_threads.wasm": KERNEL_BUILDS["onnxtrain_kernels.so"],
                          "onnxtrain_kernels_threads_relaxed.wasm": KERNEL_BUILDS["onnxtrain_kernels_relaxed.so"]}
# Every thread's stack (the main one's here, the workers' from threads.mjs) holds gemm's packing buffers (600 kB).
THREADED_LINK = ["--no-entry", "--import-memory", "--shared-memory", "--max-memory=2147483648", "--export-dynamic",
                 "--export=__stack_pointer", "--export=__heap_base", "-z", "stack-size=1048576"]


def build_kernels(dest: Path) -> None:
    """Compile web/kernels/*.c with clang into wasm side modules (position-independent, no libc, FMA contraction
    off so the optimizer kernels match numpy bit for bit)."""
    apt_install(CLANG, "clang-16", "building the SIMD kernels")
    apt_install(WASM_LD, "lld-16", "linking the SIMD kernels")
    dest.mkdir(parents=True, exist_ok=True)
    sources = sorted(KERNEL_SOURCES.glob("*.c"))
    work = CACHE / "kernels"
    work.mkdir(parents=True, exist_ok=True)
    side = ["--target=wasm32-unknown-emscripten", "-fPIC"]
    threaded = ["--target=wasm32-unknown-unknown", "-matomics", "-mbulk-memory"]
    builds = [(name, side + flags, ["--experimental-pic", "-shared"]) for name, flags in KERNEL_BUILDS.items()]
    builds += [(name, threaded + flags, THREADED_LINK) for name, flags in THREADED_KERNEL_BUILDS.items()]
    for name, flags, link in builds:
        log(f"{CLANG.name} {' '.join(flags)} web/kernels/*.c -> {name}")
        objects = []
        for source in sources:
            obj = work / f"{Path(name).stem}-{source.stem}.o"
            subprocess.run([CLANG, "-O3", *flags, "-ffreestanding", "-nostdlib", "-ffp-contract=off", "-Wall",
                            "-Werror", "-c", source, "-o", obj], check=True)
            objects.append(obj)
        subprocess.run([WASM_LD, *link, "-o", dest / name, *objects], check=True)


NATIVE_INIT = '''"""onnxtrain's SIMD kernels (web/kernels) built for this platform: onnxtrain.ops.simd loads
LIBRARY with ctypes (ONNXTRAIN_NATIVE=0 turns that off).  None on an x86-64 without AVX2 and FMA, which the build uses."""
import platform
from pathlib import Path


def _runs_here() -> bool:
    if platform.machine() not in ("x86_64", "AMD64"):
        return True
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return True
    return "avx2" in flags and "fma" in flags


LIBRARY = str(Path(__file__).with_name("onnxtrain_kernels.so")) if _runs_here() else None
'''


def build_native() -> Path:
    """The kernels built for this machine's platform into NATIVE/onnxtrain_native (which the tests import: see
    pyproject's pythonpath) and packed as the platform wheel onnxtrain_native (``pip install onnxtrain[native]``).
    Host vectors through web/kernels/host_simd.h; x86-64 at the x86-64-v3 level (AVX2 and FMA, fused in sgemm
    only: FMA contraction stays off for the optimizers' numpy order)."""
    import sysconfig
    apt_install(CLANG, "clang-16", "building the native kernels")
    machine = os.uname().machine
    flags = {"x86_64": ["-march=x86-64-v3", "-DRELAXED"], "aarch64": ["-DRELAXED"]}.get(machine)
    if flags is None:
        sys.exit(f"build.py: the native kernels are built for x86_64 and aarch64, not {machine}")
    package = NATIVE / "onnxtrain_native"
    package.mkdir(parents=True, exist_ok=True)
    library = package / "onnxtrain_kernels.so"
    log(f"{CLANG.name} {' '.join(flags)} web/kernels/*.c -> {library.relative_to(ROOT)}")
    subprocess.run([CLANG, "-O3", *flags, "-shared", "-fPIC", "-fvisibility=hidden", "-ffp-contract=off",
                    "-fno-math-errno", "-Wall", "-Werror", *sorted(KERNEL_SOURCES.glob("*.c")), "-o", library],
                   check=True)
    (package / "__init__.py").write_text(NATIVE_INIT)
    tag = "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())
    files = [(f"onnxtrain_native/{f.name}", f.read_bytes()) for f in (package / "__init__.py", library)]
    write_wheel("onnxtrain_native", project_version(), tag, files, [])
    return library
