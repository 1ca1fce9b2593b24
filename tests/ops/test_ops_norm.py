"""The normalization kernels, LRN and the depth/space moves against onnxruntime and onnx's own node test data."""
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from onnxtrain import ir
from onnxtrain.runtime import Session

from opref import ort_run, ours_run

R = np.random.default_rng(3)
NODE_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"


def f32(*shape):
    return R.standard_normal(shape).astype(np.float32)


def positive(*shape):
    return np.abs(f32(*shape)) + 0.5


CASES = [
    ("instancenorm", "InstanceNormalization", [f32(2, 3, 4, 5), f32(3), f32(3)], {}, 17, 1),
    ("instancenorm-1d-eps", "InstanceNormalization", [f32(3, 2, 7), f32(2), f32(2)], {"epsilon": 0.1}, 17, 1),
    ("groupnorm-18", "GroupNormalization", [f32(2, 6, 3, 3), f32(3), f32(3)], {"num_groups": 3}, 18, 1),
    ("groupnorm-21", "GroupNormalization", [f32(2, 6, 3, 3), f32(6), f32(6)], {"num_groups": 2, "epsilon": 0.01},
     21, 1),
    ("groupnorm-21-1d", "GroupNormalization", [f32(3, 4, 5), f32(4), f32(4)], {"num_groups": 4}, 21, 1),
    ("lpnorm-2", "LpNormalization", [f32(3, 4, 5)], {"axis": 1}, 17, 1),
    ("lpnorm-1", "LpNormalization", [f32(3, 4)], {"p": 1}, 17, 1),
    ("mvn", "MeanVarianceNormalization", [f32(2, 3, 4, 4)], {}, 17, 1),
    ("mvn-axes", "MeanVarianceNormalization", [f32(2, 3, 4)], {"axes": [1, 2]}, 17, 1),
    ("lrn", "LRN", [f32(2, 7, 3, 3)], {"size": 3, "alpha": 0.1, "beta": 0.6, "bias": 1.5}, 17, 1),
    ("depthtospace-dcr", "DepthToSpace", [f32(2, 8, 3, 2)], {"blocksize": 2}, 17, 1),
    ("depthtospace-crd", "DepthToSpace", [f32(1, 18, 2, 3)], {"blocksize": 3, "mode": "CRD"}, 17, 1),
    ("spacetodepth", "SpaceToDepth", [f32(2, 3, 4, 6)], {"blocksize": 2}, 17, 1),
    ("batchnorm-7-inference", "BatchNormalization", [f32(2, 3, 4), f32(3), f32(3), f32(3), positive(3)],
     {"epsilon": 0.01}, 7, 1),
    ("batchnorm-7-not-spatial", "BatchNormalization",
     [f32(2, 3, 2, 2), f32(3, 2, 2), f32(3, 2, 2), f32(3, 2, 2), positive(3, 2, 2)], {"spatial": 0}, 7, 1),
    ("batchnorm-9-training-5-outputs", "BatchNormalization", [f32(4, 3, 2), f32(3), f32(3), f32(3), positive(3)],
     {"momentum": 0.7}, 9, 5),
]


@pytest.mark.parametrize("op, inputs, attrs, opset, n_outputs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_onnxruntime(op, inputs, attrs, opset, n_outputs):
    ref = ort_run(op, inputs, attrs, opset=opset, n_outputs=n_outputs)
    got = ours_run(op, inputs, attrs, opset=opset, n_outputs=n_outputs)
    for r, g in zip(ref, got):
        assert g.dtype == r.dtype and g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_batchnorm_6():
    """Opset 6 (is_test, spatial): inference against onnx.reference (onnxruntime has no opset-6 kernel), training
    against onnxruntime's opset-9 training outputs, which the spec computes the same way."""
    from onnx.reference import ReferenceEvaluator
    args = [f32(4, 3, 2, 2), f32(3), f32(3), f32(3), positive(3)]
    node = onnx.helper.make_node("BatchNormalization", list("xsbmv"), ["y"], epsilon=1e-3, is_test=1)
    graph = onnx.helper.make_graph([node], "g", [onnx.helper.make_tensor_value_info(n, 1, a.shape)
                                                 for n, a in zip("xsbmv", args)],
                                   [onnx.helper.make_empty_tensor_value_info("y")])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 6)])
    ref = ReferenceEvaluator(model).run(None, dict(zip("xsbmv", args)))[0]
    got = ours_run("BatchNormalization", args, {"epsilon": 1e-3, "is_test": 1}, opset=6)[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    ref = ort_run("BatchNormalization", args, {"epsilon": 1e-3, "momentum": 0.8}, opset=9, n_outputs=5)
    got = ours_run("BatchNormalization", args, {"epsilon": 1e-3, "momentum": 0.8}, opset=6, n_outputs=5)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


def test_lrn_even_size_follows_the_spec_window():
    # onnxruntime accepts only odd sizes; the spec sums channels c - floor((size-1)/2) .. c + ceil((size-1)/2)
    x, size, alpha, beta, bias = f32(1, 5, 2, 4).astype(np.float64), 4, 0.3, 0.7, 1.2
    expected = np.empty_like(x)
    for c in range(5):
        window = (x[:, max(0, c - 1):min(5, c + 3)] ** 2).sum(axis=1)
        expected[:, c] = x[:, c] / (bias + alpha / size * window) ** beta
    got = ours_run("LRN", [x], {"size": size, "alpha": alpha, "beta": beta, "bias": bias})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


NODE_TESTS = ["node/test_instancenorm_example", "node/test_instancenorm_epsilon",
              "node/test_group_normalization_example", "node/test_group_normalization_epsilon", "node/test_mvn",
              "node/test_lrn", "node/test_lrn_default", "node/test_depthtospace_example",
              "node/test_depthtospace_crd_mode_example", "node/test_spacetodepth", "node/test_spacetodepth_example",
              "node/test_batchnorm_example", "node/test_batchnorm_epsilon", "pytorch-converted/test_BatchNorm2d_eval",
              "pytorch-converted/test_BatchNorm1d_3d_input_eval", "pytorch-converted/test_BatchNorm3d_momentum_eval",
              "pytorch-converted/test_PixelShuffle"]


@pytest.mark.parametrize("case", NODE_TESTS)
def test_onnx_node_test_data(case):
    folder = NODE_DATA / case
    model = ir.load((folder / "model.onnx").read_bytes())
    session = Session(model)
    for data in sorted(folder.glob("test_data_set_*")):
        inputs = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(data.glob("input_*.pb"))]
        outputs = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(data.glob("output_*.pb"))]
        names = [v.name for v in model.graph.inputs if v.name not in {t.name for t in model.graph.initializers}]
        got = session.run(dict(zip(names, inputs)))
        for g, expected in zip(got, outputs):
            np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, inputs, attrs, opset, message", [
    ("GroupNormalization", [f32(1, 5, 2), f32(5), f32(5)], {"num_groups": 2}, 21, "5 channels do not split into 2"),
    ("GroupNormalization", [f32(1, 4, 2), f32(4), f32(4)], {"num_groups": 2, "stash_type": 0}, 21, "stash_type=0"),
    ("LpNormalization", [f32(2, 3)], {"p": 3}, 17, "p=3"),
    ("DepthToSpace", [f32(1, 8, 2, 2)], {"blocksize": 2, "mode": "XYZ"}, 17, "mode 'XYZ'"),
    ("SpaceToDepth", [f32(1, 2, 3, 4)], {"blocksize": 2}, 17, "3x4 is not a multiple of blocksize 2"),
    ("SpaceToDepth", [f32(1, 2, 4, 4)], {}, 17, "SpaceToDepth: attribute blocksize must be given"),
    ("LRN", [f32(1, 2, 4, 4)], {}, 17, "LRN: attribute size must be given"),
    ("GroupNormalization", [f32(1, 4, 2), f32(4), f32(4)], {}, 21, "num_groups must be given"),
])
def test_errors_name_the_op_and_attribute(op, inputs, attrs, opset, message):
    with pytest.raises((ValueError, NotImplementedError), match=message):
        ours_run(op, inputs, attrs, opset=opset)
