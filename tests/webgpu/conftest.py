"""The WebGPU tests run on whatever adapter ``wgpu`` finds: on CI, Mesa's CPU Vulkan driver (lavapipe), which
build.py installs.  A missing adapter fails these tests; it is never a skip."""
import os

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
