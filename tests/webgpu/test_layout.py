"""Layout WGSL kernels (shapes, views, strided copies, gathers) against the CPU kernels."""
import numpy as np

from gpu_cases import (ELEM, assert_close, check_node, gpu_session, make_model, make_node, node_model, run_both,
                       tensor, tensor_info)

IN_PYODIDE = True
rng = np.random.default_rng(0)
MS = "com.microsoft"


def floats(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ints(*shape, high=100):
    return rng.integers(-high, high, shape).astype(np.int64)


def i64(*values):
    return np.array(values, dtype=np.int64)


def graph_model(nodes, inputs: dict, outputs: list, initializers: dict = None, opset: int = 17):
    """A model of several nodes: ``inputs`` fed, ``initializers`` constants."""
    initializers = initializers or {}
    return make_model(nodes, "g", [tensor_info(n, ELEM[np.asarray(v).dtype]) for n, v in inputs.items()],
                      [tensor_info(n) for n in outputs],
                      [tensor(n, v) for n, v in initializers.items()], {"": opset})


def check_model(model, feeds: list):
    got, want, gpu = run_both(model, feeds)
    assert_close(got, want)
    return gpu


# -- known before the run, views ------------------------------------------------------------------------------

def test_shape_size_and_views():
    x = floats(2, 1, 3, 1)
    check_node("Shape", {"X": x})
    check_node("Shape", {"X": x}, start=1, end=-1)
    check_node("Shape", {"X": x}, start=-2, opset=15)
    check_node("Size", {"X": x})
    check_node("Flatten", {"X": x}, axis=-2)
    check_node("Flatten", {"X": x}, axis=0)
    check_node("Squeeze", {"X": x}, opset=11, axes=[-1])
    check_node("Squeeze", {"X": x})
    check_node("Squeeze", {"X": x}, initializers={"axes": i64(1, 3)})
    check_node("Unsqueeze", {"X": x}, opset=11, axes=[0, -1])
    check_node("Unsqueeze", {"X": ints(3, 2)}, initializers={"axes": i64(1, -1)})


def test_reshape_variants():
    x = floats(2, 3, 4)
    check_node("Reshape", {"X": x}, initializers={"shape": i64(0, -1)})
    check_node("Reshape", {"X": x}, initializers={"shape": i64(4, 0, 2)})
    check_node("Reshape", {"X": ints(3, 0)}, initializers={"shape": i64(0, 3)}, opset=14, allowzero=1)
    check_node("Reshape", {"X": x}, initializers={"shape": i64(-1)})


def test_reshape_from_shape_node():
    """Reshape(Y, Shape(X)): the shape is known before the run although X is fed; the two nodes run no kernel."""
    nodes = [make_node("Shape", ["X"], ["s"]),
             make_node("Transpose", ["Y"], ["t"], perm=[1, 0]),
             make_node("Reshape", ["t", "s"], ["out"])]
    gpu = check_model(graph_model(nodes, {"X": floats(3, 2, 5), "Y": floats(10, 3)}, ["out"]),
                      [floats(3, 2, 5), floats(10, 3)])
    assert gpu.last_program.dispatch_count == 1


# -- copies ---------------------------------------------------------------------------------------------------

def test_transpose():
    check_node("Transpose", {"X": floats(3, 5, 7)})
    check_node("Transpose", {"X": floats(2, 3, 5, 7)}, perm=[0, 2, 1, 3])
    check_node("Transpose", {"X": ints(2, 3, 1, 2, 3, 2)}, perm=[5, 3, 1, 0, 2, 4])
    check_node("Transpose", {"X": rng.random((4, 3)) > 0.5})


def test_copies_in_order_are_views():
    """A copy that reads its input whole and in order runs nothing: it is a view."""
    x = floats(1, 5, 1, 3)
    for gpu in (check_node("Transpose", {"X": x}, perm=[2, 1, 0, 3]),
                check_node("Slice", {"X": x}, initializers={"s": i64(0), "e": i64(9), "a": i64(-1)}),
                check_node("Expand", {"X": x}, initializers={"shape": i64(5, 1, 1)}),
                check_node("Tile", {"X": x}, initializers={"r": i64(1, 1, 1, 1)}),
                check_node("Concat", {"X": x}, axis=1)):
        assert gpu.last_program.dispatch_count == 0


def test_transpose_tiled():
    """Transposes of the innermost axis go through 32 x 32 tiles in workgroup memory (odd sizes, batches)."""
    check_node("Transpose", {"X": floats(40, 33)})
    check_node("Transpose", {"X": floats(3, 37, 45)}, perm=[0, 2, 1])
    check_node("Transpose", {"X": ints(2, 9, 12, 10)}, perm=[3, 1, 0, 2])


def test_slice():
    x = floats(5, 7, 6)
    starts, ends = i64(1, -2, 0), i64(4, 1, 100)
    check_node("Slice", {"X": x}, initializers={"s": starts, "e": ends, "a": i64(0, -2, 2), "st": i64(2, -2, 1)})
    check_node("Slice", {"X": x}, initializers={"s": i64(-1, 10), "e": i64(-1000, -10), "a": i64(2, 1),
                                                "st": i64(-1, -3)})
    check_node("Slice", {"X": ints(6, 4)}, initializers={"s": i64(2), "e": i64(2 ** 62)})
    check_node("Slice", {"X": x}, opset=9, starts=[1, 0], ends=[3, -1], axes=[1, 2])
    check_node("Slice", {"X": x}, initializers={"s": i64(3), "e": i64(3), "a": i64(1)})


def test_expand_and_tile():
    check_node("Expand", {"X": floats(3, 1, 5)}, initializers={"shape": i64(2, 1, 4, 1)})
    check_node("Expand", {"X": ints(1, 3)}, initializers={"shape": i64(3, 1)})
    check_node("Tile", {"X": floats(3, 1, 5)}, initializers={"r": i64(2, 3, 1)})
    check_node("Tile", {"X": ints(2, 3, 2, 2)}, initializers={"r": i64(2, 2, 2, 3)})


def test_concat_and_split():
    a, b, c = floats(2, 3, 5), floats(2, 1, 5), floats(2, 4, 5)
    check_node("Concat", {"A": a, "B": b, "C": c}, axis=-2)
    check_node("Concat", {"A": ints(3, 2), "B": ints(1, 2)}, axis=0)
    check_node("Concat", {"A": a, "B": floats(2, 0, 5)}, axis=1)
    check_node("ConcatTraining", {"A": a, "B": b}, outputs=["Y", "lens"], domain=MS, axis=1)
    x = floats(4, 11, 3)
    check_node("Split", {"X": x}, outputs=["P", "Q"], opset=11, axis=1, split=[4, 7])
    check_node("Split", {"X": x}, outputs=["P", "Q", "R"], axis=-2, initializers={"split": i64(2, 0, 9)})
    check_node("Split", {"X": x}, outputs=["P", "Q", "R"], axis=1)
    check_node("Split", {"X": ints(7, 2)}, outputs=["P", "Q", "R"], opset=18, num_outputs=3)


def test_pad():
    x = floats(3, 4, 5)
    check_node("Pad", {"X": x}, initializers={"pads": i64(1, 0, 2, 0, 3, 1), "v": np.float32(1.5)})
    check_node("Pad", {"X": x}, initializers={"pads": i64(0, -1, 2, 1, -2, 0)})
    check_node("Pad", {"X": ints(3, 4)}, initializers={"pads": i64(1, 2, 0, 1), "v": i64(7)})
    check_node("Pad", {"X": x}, opset=10, pads=[0, 1, 1, 0, 2, 3], value=-2.0)
    for mode in ("edge", "reflect", "wrap"):
        check_node("Pad", {"X": x}, initializers={"pads": i64(2, 0, 4, 1, 3, 2)}, mode=mode)
    check_node("Pad", {"X": x}, opset=18, initializers={"pads": i64(1, 2), "v": np.float32(0), "axes": i64(-1)},
               _input_order=["X", "pads", "v", "axes"])


# -- gathers and gradients --------------------------------------------------------------------------------------

def test_gather():
    x = floats(5, 6, 3)
    check_node("Gather", {"X": x, "I": np.array([[0, -1], [4, 2], [-5, 1]], dtype=np.int64)}, axis=0)
    check_node("Gather", {"X": x, "I": np.array([5, -6, 2], dtype=np.int64)}, axis=-2)
    check_node("Gather", {"X": ints(4, 3)}, initializers={"I": np.array(2, dtype=np.int64)}, axis=0)
    check_node("Gather", {"X": x, "I": np.array([1, 0], dtype=np.int32)}, axis=2)


def test_gather_grad():
    idx = np.array([[1, 3, -5], [1, 0, 3]], dtype=np.int64)
    # an axis no longer than the indices (each dX element sums) and a longer one (zeroed, first occurrences write)
    for axis_len in (5, 9):
        dy = floats(2, 2, 3, 4)
        check_node("GatherGrad", {"I": np.where(idx < 0, idx + 5, idx) if axis_len != 5 else idx, "dY": dy},
                   domain=MS, axis=1, initializers={"shape": i64(2, axis_len, 4)}, _input_order=["shape", "I", "dY"])
    check_node("GatherGrad", {"I": np.array([0, 2, 0], dtype=np.int64), "dY": ints(3, 2)}, domain=MS,
               initializers={"shape": i64(4, 2)}, _input_order=["shape", "I", "dY"])


def test_gather_grad_is_deterministic():
    idx = rng.integers(0, 3, 40).astype(np.int64)
    dy = floats(40, 7)
    model = node_model("GatherGrad", {"I": idx, "dY": dy}, ["dX"], domain=MS, initializers={"shape": i64(3, 7)},
                       _input_order=["shape", "I", "dY"])
    gpu = gpu_session(model)
    first, second = gpu.run([idx, dy])[0], gpu.run([idx, dy])[0]
    assert first.tobytes() == second.tobytes()


def test_slice_grad():
    dy = floats(2, 3, 2)
    check_node("SliceGrad", {"dY": dy}, domain=MS, _input_order=["dY", "shape", "s", "e", "a", "st"],
               initializers={"shape": i64(5, 7, 4), "s": i64(1, -1, 0), "e": i64(4, 0, 100), "a": i64(0, 1, 2),
                             "st": i64(2, -2, 2)})
    check_node("SliceGrad", {"dY": ints(2, 4)}, domain=MS, _input_order=["dY", "shape", "s", "e"],
               initializers={"shape": i64(5, 4), "s": i64(1), "e": i64(3)})


def test_not_lowered_falls_back():
    """A transpose over more dimensions than the copy shader takes runs on the CPU, and says why."""
    x = floats(*[2] * 13)
    model = node_model("Transpose", {"X": x}, ["Y"])
    got, want, gpu = run_both(model, [x], allow_fallback=True)
    assert_close(got, want)
    assert len(gpu.fallbacks) == 1 and "Transpose" in gpu.fallbacks[0] and "dimensions" in gpu.fallbacks[0]
