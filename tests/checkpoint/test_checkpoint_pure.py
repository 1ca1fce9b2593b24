"""The checkpoint format on its own, with numpy as the only reference, so that the same tests also run inside
Pyodide."""
import numpy as np
import pytest

from onnxtrain.checkpoint import CheckpointData, CheckpointError, OptimizerGroup, read_checkpoint, write_checkpoint

IN_PYODIDE = True  # pure numpy: also run inside Pyodide by tests/browser/test_in_pyodide.py


def test_checkpoint_round_trip_with_everything():
    rng = np.random.default_rng(0)
    data = CheckpointData(trainable={"b": rng.standard_normal(3).astype(np.float32),
                                     "a": rng.standard_normal((2, 2)).astype(np.float32)},
                          frozen={"f": np.arange(4, dtype=np.int64)},
                          optimizer_groups=[OptimizerGroup(step=7, initial_learning_rate=0.5, states={
                              "a": {"momentum0": np.ones((2, 2), np.float32)}})],
                          properties={"epoch": 3, "loss": 0.25, "name": "run"})
    back = read_checkpoint(write_checkpoint(data))
    assert list(back.trainable) == ["a", "b"]  # runtime layout sorts by name
    for name, array in data.trainable.items():
        np.testing.assert_array_equal(back.trainable[name], array)
    np.testing.assert_array_equal(back.frozen["f"], data.frozen["f"])
    assert back.optimizer_groups[0].step == 7 and back.optimizer_groups[0].initial_learning_rate == 0.5
    assert back.properties == data.properties
    with pytest.raises(CheckpointError, match="file identifier"):
        read_checkpoint(b"\0" * 16)
