"""A seeded random op on WebGPU (run on the CPU within the step) draws the same sequence as on the CPU: compiling
the program (which runs the node once to learn its output shapes) does not advance the node's generator."""
import numpy as np

from gpu_cases import gpu_session, node_model
from onnxtrain.runtime import Session


def test_a_seeded_dropout_draws_the_cpus_masks_run_by_run():
    x = np.ones((16, 16), np.float32)
    model = node_model("Dropout", {"x": x}, ["y", "mask"], seed=11,
                       initializers={"ratio": np.array(0.5, np.float32), "training": np.array(True)})
    gpu, cpu = gpu_session(model), Session(model)
    for run in range(3):
        (got, got_mask), (want, want_mask) = gpu.run([x]), cpu.run([x])
        np.testing.assert_array_equal(np.asarray(got_mask), want_mask, err_msg=f"run {run}")
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"run {run}")
