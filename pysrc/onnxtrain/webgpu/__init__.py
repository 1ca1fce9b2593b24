"""The WebGPU execution provider: WGSL kernels for the ops of training, run through ``wgpu`` in CPython and
``navigator.gpu`` in the page, with tensors kept in GPU buffers across steps."""
from .errors import GPUMemoryError, NoAdapterError, NotLowered, WebGPUError
from .registry import GPU_KERNELS, gpu_kernel, gpu_lookup, gpu_ops
from .provider import WebGPUProvider, open_provider
from . import kernels  # noqa: F401  (importing registers the kernels)

__all__ = ["GPUMemoryError", "GPU_KERNELS", "NoAdapterError", "NotLowered", "WebGPUError", "WebGPUProvider",
           "gpu_kernel", "gpu_lookup", "gpu_ops", "open_provider"]
