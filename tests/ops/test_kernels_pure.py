"""Kernels on their own, with numpy as the only reference, so that the same tests also run inside Pyodide."""
import numpy as np

from onnxtrain.ops import lookup

IN_PYODIDE = True  # pure numpy: also run inside Pyodide by tests/browser/test_in_pyodide.py


def test_a_few_kernels_against_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = lookup("Conv")(x, w, pads=[1, 1, 1, 1])
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    ref = np.zeros((2, 4, 6, 6), np.float32)
    for i in range(6):
        for j in range(6):
            ref[:, :, i, j] = np.einsum("nchw,mchw->nm", xp[:, :, i:i + 3, j:j + 3], w)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    s = lookup("Softmax", opset=17)(x, axis=1)
    np.testing.assert_allclose(s.sum(axis=1), 1, rtol=1e-6)
    loss = lookup("SoftmaxCrossEntropyLoss", opset=17)(x[:, :, 0, 0], np.array([0, 2], np.int64))[0]
    logits = x[:, :, 0, 0].astype(np.float64)
    ref_lp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss, -(ref_lp[0, 0] + ref_lp[1, 2]) / 2, rtol=1e-5)


def test_adamw_kernel_updates_in_place():
    w = [np.ones(3, np.float32)]
    g = [np.full(3, 0.5, np.float32)]
    m1, m2 = [np.zeros(3, np.float32)], [np.zeros(3, np.float32)]
    before = w[0]
    lookup("AdamWOptimizer", "com.microsoft")(np.array([0.1], np.float32), np.array([1], np.int64), w, g, m1, m2,
                                              epsilon=1e-6, adam_mode=1, weight_decay=0.0)
    assert w[0] is before
    np.testing.assert_allclose(w[0], 1 - 0.1 * 0.5 / (0.5 + 1e-6), rtol=1e-5)


def test_index_kernels_with_int64_indices():
    """Kernels that index with int64 tensors (intp is int32 in the browser's wasm32 numpy)."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([2, -1, 0], np.int64)
    np.testing.assert_array_equal(lookup("Gather")(data, idx, axis=1), data[:, [2, 3, 0]])
    np.testing.assert_array_equal(lookup("GatherElements")(data, np.zeros((1, 4), np.int64), axis=0), data[:1])
    scattered = lookup("ScatterElements", opset=17)(np.zeros(5, np.float32), np.array([1, 1, 4], np.int64),
                                                    np.ones(3, np.float32), axis=0, reduction="add")
    np.testing.assert_array_equal(scattered, [0, 2, 0, 0, 1])
    up = lookup("Resize", opset=17)(data[None, None], None, np.array([1, 1, 2, 2], np.float32))
    np.testing.assert_array_equal(up[0, 0, ::2, ::2], data)
    y, indices = lookup("MaxPool")(data[None, None], kernel_shape=[1, 2], strides=[1, 2], _outputs=(True, True))
    grad = lookup("MaxPoolGrad")(np.ones_like(y), indices, kernel_shape=[1, 2], strides=[1, 2],
                                 _output_shapes=[[1, 1, 3, 4]])
    np.testing.assert_array_equal(grad[0, 0], [[0, 1, 0, 1]] * 3)
    grad = lookup("GatherGrad", "com.microsoft")(np.array([3, 4], np.int64), idx[:2], np.ones((2, 4), np.float32))
    np.testing.assert_array_equal(grad.sum(axis=1), [0, 0, 8])  # -1 is the last row
