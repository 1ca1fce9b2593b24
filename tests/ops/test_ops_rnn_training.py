"""com.microsoft LSTMTraining, LSTMGrad, GRUTraining and GRUGrad against onnxruntime-training's kernels."""
import numpy as np
import pytest

from onnxtrain.ir.ort_names import MS_DOMAIN
from opref import assert_same, ort_run, ours_run

R = np.random.default_rng(3)
S, B, I, H = 4, 3, 5, 2


def f32(*shape, scale=0.6):
    return (R.standard_normal(shape) * scale).astype(np.float32)


def lstm_inputs(bias=True, h0=True, c0=True):
    return [f32(S, B, I), f32(1, 4 * H, I), f32(1, 4 * H, H), f32(1, 8 * H) if bias else None, None,
            f32(1, B, H) if h0 else None, f32(1, B, H) if c0 else None]


@pytest.mark.parametrize("bias, h0, c0", [(True, True, True), (False, False, False), (True, False, True)])
def test_lstm_training_and_grad_match_onnxruntime(bias, h0, c0):
    inputs = lstm_inputs(bias, h0, c0)
    attrs = {"hidden_size": H}
    fwd = assert_same("LSTMTraining", inputs, attrs, domain=MS_DOMAIN, n_outputs=5)
    HAll, _, _, CAll, IOFC = fwd
    for grads in ([f32(S, 1, B, H), f32(1, B, H), f32(1, B, H)], [f32(S, 1, B, H), None, None],
                  [None, f32(1, B, H), None], [None, None, f32(1, B, H)]):
        grad_inputs = [inputs[0], inputs[1], inputs[2], None, inputs[5], inputs[6], HAll, CAll, IOFC] + grads
        assert_same("LSTMGrad", grad_inputs, attrs, domain=MS_DOMAIN, n_outputs=6, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("bias, h0", [(True, True), (False, False)])
def test_gru_training_and_grad_match_onnxruntime(linear_before_reset, bias, h0):
    inputs = [f32(S, B, I), f32(1, 3 * H, I), f32(1, 3 * H, H), f32(1, 6 * H) if bias else None, None,
              f32(1, B, H) if h0 else None]
    attrs = {"hidden_size": H, "linear_before_reset": linear_before_reset}
    HAll, _, ZRH = assert_same("GRUTraining", inputs, attrs, domain=MS_DOMAIN, n_outputs=3)
    for grads in ([f32(S, 1, B, H), f32(1, B, H)], [f32(S, 1, B, H), None], [None, f32(1, B, H)]):
        assert_same("GRUGrad", inputs + [HAll, ZRH] + grads, attrs, domain=MS_DOMAIN, n_outputs=5, rtol=1e-4,
                    atol=1e-5)


@pytest.mark.parametrize("op, attrs, message", [
    ("LSTMTraining", {"direction": "reverse"}, "direction 'reverse'"),
    ("LSTMTraining", {"clip": 1.0}, "clip"),
    ("LSTMTraining", {"input_forget": 1}, "input_forget"),
    ("LSTMTraining", {"activations": ["Sigmoid", "Tanh", "Relu"]}, "activations"),
])
def test_unsupported_attributes_are_named(op, attrs, message):
    with pytest.raises(NotImplementedError, match=message):
        ours_run(op, lstm_inputs(), {"hidden_size": H, **attrs}, domain=MS_DOMAIN, n_outputs=5)


def test_sequence_lens_is_refused():
    inputs = lstm_inputs()
    inputs[4] = np.full(B, S, np.int32)
    with pytest.raises(NotImplementedError, match="sequence_lens"):
        ours_run("LSTMTraining", inputs, {"hidden_size": H}, domain=MS_DOMAIN, n_outputs=5)
    with pytest.raises(Exception):  # onnxruntime refuses it too
        ort_run("LSTMTraining", inputs, {"hidden_size": H}, domain=MS_DOMAIN, n_outputs=5)
