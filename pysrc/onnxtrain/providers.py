"""Execution providers by name: a Module's ``device`` ("cpu", "wasm", "numpy", "webgpu") and onnxruntime-web's
``executionProviders`` names, to the provider objects that runtime's Session runs on."""
from __future__ import annotations

import os

from .runtime.provider import NUMPY, Provider

DEVICES = ("cpu", "wasm", "numpy", "webgpu")
#: onnxruntime-web's execution provider names, as Module devices.
PROVIDERS = {"webgpu": "webgpu", "wasm": "cpu", "cpu": "cpu"}


def open_provider(device: str = "cpu", threads: int = 0) -> Provider:
    """The provider of a Module ``device``: "cpu" is the wasm provider (the kernel library's program executor)
    where that library is loaded (the page's kernel module, CPython's native build), else the numpy provider;
    "wasm" and "numpy" name one of them; "webgpu" opens the process's GPU (NoAdapterError where none is).  ``threads`` (a session's
    ``intra_op_num_threads``) of two or more puts CPython's wasm provider on that many native threads; in the page
    the kernel pool's threads decide.  Without it, CPython reads ONNXTRAIN_THREADS."""
    if device not in DEVICES:
        raise ValueError(f"onnxtrain runs on device 'cpu', 'wasm', 'numpy' or 'webgpu', not {device!r}")
    if device == "webgpu":
        from .webgpu.provider import open_provider as open_webgpu
        return open_webgpu()
    if device == "numpy":
        return NUMPY
    from .wasm.provider import WasmError, open_provider as open_wasm
    threads = threads or int(os.environ.get("ONNXTRAIN_THREADS", "0") or 0)
    if device == "wasm":
        return open_wasm(threads)
    try:
        return open_wasm(threads)
    except WasmError:
        return NUMPY


def provider_for(providers) -> str:
    """The first of ``providers`` (onnxruntime-web's ``executionProviders`` names) that is here, in their order:
    "webgpu" when a WebGPU adapter exists, "wasm" and "cpu" always (``PROVIDERS`` gives its Module device).  Where
    none is, the error names each and why (no silent fallback: ["webgpu"] alone fails without an adapter)."""
    providers = ["wasm"] if providers is None else [providers] if isinstance(providers, str) else list(providers)
    if not providers:
        raise ValueError("executionProviders is empty: name at least one of 'webgpu', 'wasm', 'cpu'")
    problems = []
    for name in providers:
        device = PROVIDERS.get(name)
        if device is None:
            raise ValueError(f"unknown execution provider {name!r}: onnxtrain has 'webgpu', 'wasm' and 'cpu'")
        if device == "cpu":
            return name
        from .webgpu import WebGPUError
        try:
            open_provider(device)
            return name
        except WebGPUError as e:
            problems.append(f"{name}: {e}")
    raise RuntimeError("none of the execution providers " + ", ".join(map(repr, providers)) + " is available here ("
                       + "; ".join(problems) + ")")
