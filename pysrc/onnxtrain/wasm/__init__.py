"""The wasm execution provider: programs compiled per feed shapes from the plan (runtime/program.py), run by the C
program executor of the kernel library (web/kernels/executor.c) in one call per segment between host nodes.  In
CPython it runs on the native build (native.py), with the state's arrays fed in place by pointer."""
