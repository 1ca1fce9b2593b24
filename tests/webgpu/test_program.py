"""The compiler and runner around the kernels: CPU fallbacks at their place in the step, values known before
the run, buffer reuse by liveness, GPU memory errors, the program cache, and ordering of pending work."""
import numpy as np
import pytest

from gpu_cases import assert_close, gpu_session, make_model, make_node, run_both, tensor, tensor_info
from onnxtrain.ir.dtypes import DataType
from onnxtrain.webgpu import GPUMemoryError

IN_PYODIDE = True
rng = np.random.default_rng(0)


def model(nodes, inputs, outputs, inits=(), opset=17):
    return make_model(nodes, "g", [tensor_info(n, t, s) for n, t, s in inputs], [tensor_info(n) for n in outputs],
                      [tensor(n, v) for n, v in inits], {"": opset, "com.microsoft": 1})


def test_a_node_without_kernel_runs_on_the_cpu_between_gpu_nodes():
    m = model([make_node("Relu", ["x"], ["r"]), make_node("CumSum", ["r", "axis"], ["c"]),
               make_node("Mul", ["c", "x"], ["y"])],
              [("x", DataType.FLOAT, [3, 5])], ["y"], [("axis", np.array(1, np.int64))])
    x = rng.standard_normal((3, 5)).astype(np.float32)
    got, want, gpu = run_both(m, [x], allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "CumSum" in gpu.fallbacks[0] and "no WGSL kernel" in gpu.fallbacks[0]


def test_an_in_place_node_on_the_cpu_leaves_the_constants_alone():
    """InPlaceAccumulatorV2 into an initializer cannot update on the GPU; on the CPU it gets a copy each run."""
    buf = np.ones(4, np.float32)
    m = model([make_node("InPlaceAccumulatorV2", ["buf", "v"], ["flag", "out"], domain="com.microsoft")],
              [("v", DataType.FLOAT, [4])], ["out"], [("buf", buf)])
    session = gpu_session(m)
    v = np.full(4, 2, np.float32)
    first = session.run([v])[0]
    second = session.run([v])[0]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, np.full(4, 3, np.float32))


def test_values_known_before_the_run_cost_no_dispatch():
    m = model([make_node("Shape", ["x"], ["s"]), make_node("Reshape", ["x", "s2"], ["r"]),
               make_node("Relu", ["r"], ["y"])],
              [("x", DataType.FLOAT, [2, 6])], ["y", "s"], [("s2", np.array([3, 4], np.int64))])
    x = rng.standard_normal((2, 6)).astype(np.float32)
    got, want, gpu = run_both(m, [x])
    assert_close(got, want)
    assert gpu.last_program.dispatch_count == 1


def test_buffers_are_reused_once_dead():
    nodes = [make_node("Relu" if i % 2 == 0 else "Neg", [f"t{i}"], [f"t{i + 1}"]) for i in range(8)]
    m = model(nodes, [("t0", DataType.FLOAT, [64])], ["t8"])
    x = rng.standard_normal(64).astype(np.float32)
    got, want, gpu = run_both(m, [x])
    assert_close(got, want)
    temps = [b for b in gpu.last_program.buffers if b.kind == "temp"]
    assert len(temps) == 2   # a chain needs two buffers in turn, not eight


def test_a_new_batch_size_compiles_a_new_program_and_the_old_one_stays():
    m = model([make_node("Relu", ["x"], ["y"])], [("x", DataType.FLOAT, ["n", 3])], ["y"])
    session = gpu_session(m)
    for n in (4, 5, 4):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_array_equal(session.run([x])[0], np.maximum(x, 0))
    assert len(session._programs) == 2


def test_a_tensor_over_the_buffer_limit_is_a_clear_error():
    m = model([make_node("Relu", ["x"], ["y"])], [("x", DataType.FLOAT, None)], ["y"])
    session = gpu_session(m)
    limit = session.provider.device.limits["max-storage-buffer-binding-size"]
    session.provider.device.limits["max-storage-buffer-binding-size"] = 1024
    try:
        with pytest.raises(GPUMemoryError, match="limit of 1024 bytes"):
            session.run([np.zeros(1000, np.float32)])
        assert session.run([np.ones(8, np.float32)])[0].sum() == 8
    finally:
        session.provider.device.limits["max-storage-buffer-binding-size"] = limit


def test_feeds_written_while_work_is_pending_do_not_overtake_it():
    """Two runs recorded before a submission each see their own feed."""
    m = model([make_node("Neg", ["x"], ["y"])], [("x", DataType.FLOAT, [4])], ["y"])
    session = gpu_session(m)
    a, b = np.arange(4, dtype=np.float32), np.full(4, 7, np.float32)
    session.run([a], [])                      # pending, not submitted
    got = session.run([b])[0]                 # its feed write must come after the first run's commands
    np.testing.assert_array_equal(got, -b)
