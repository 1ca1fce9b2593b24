"""Kernels: the com.microsoft ops onnxruntime's graph optimizer fuses (level "all", as its ORT format
converter runs it): FusedGemm and FusedConv, a Gemm or Conv and then an activation, and GeluGrad."""
from __future__ import annotations

import numpy as np

from ..ir.model import AttrType
from ..ir.ort_names import MS_DOMAIN
from .conv import Conv
from .registry import kernel, lookup
from .elementwise import erf

#: activation -> the names of its float parameters, in the order FusedConv's activation_params lists them
ACTIVATIONS = {"Relu": (), "Tanh": (), "Sigmoid": (), "LeakyRelu": ("alpha",), "HardSigmoid": ("alpha", "beta"),
               "Clip": ("min", "max"), "Elu": ("alpha",), "Selu": ("alpha", "gamma"), "Softplus": (),
               "Softsign": (), "ThresholdedRelu": ("alpha",)}


def _activate(op: str, name: str, y: np.ndarray, params: dict) -> np.ndarray:
    if name not in ACTIVATIONS:
        raise ValueError(f"{op}: activation '{name}' is not one of {sorted(ACTIVATIONS)}")
    if name == "Clip":  # its bounds are inputs since opset 11
        lo, hi = params.get("min", -np.inf), params.get("max", np.inf)
        return np.clip(y, y.dtype.type(lo), y.dtype.type(hi))
    return lookup(name)(y, **params)


@kernel("FusedGemm", domain=MS_DOMAIN)
def FusedGemm(A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, activation="",
              activation_alpha=None, activation_beta=None, activation_gamma=None):
    """activation(Gemm(A, B, C)); the activation's alpha, beta and gamma are the activation_* attributes."""
    name = activation.decode() if isinstance(activation, bytes) else activation
    given = {"alpha": activation_alpha, "beta": activation_beta, "gamma": activation_gamma}
    params = {k: v for k, v in given.items() if v is not None and k in ACTIVATIONS.get(name, ())}
    return _activate("FusedGemm", name, lookup("Gemm")(A, B, C, alpha=alpha, beta=beta, transA=transA,
                                                        transB=transB), params)


FusedGemm.attribute_types = dict.fromkeys(("activation_alpha", "activation_beta", "activation_gamma"), AttrType.FLOAT)


@kernel("FusedConv", domain=MS_DOMAIN)
def FusedConv(X, W, B=None, Z=None, *, activation="", activation_params=None, auto_pad="NOTSET", dilations=None,
              group=1, kernel_shape=None, pads=None, strides=None):
    """activation(Conv(X, W, B) + Z); activation_params lists the activation's parameters in order."""
    name = activation.decode() if isinstance(activation, bytes) else activation
    values = list(activation_params if activation_params is not None else [])
    names = ACTIVATIONS.get(name, ())
    if name in ACTIVATIONS and len(values) > len(names):
        raise ValueError(f"FusedConv: activation '{name}' takes {len(names)} parameters, got {len(values)}")
    y = Conv(X, W, B, auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape, pads=pads,
             strides=strides)
    if Z is not None:
        y = y + Z
    return _activate("FusedConv", name, y, dict(zip(names, values)))


FusedConv.attribute_types = {"activation_params": AttrType.FLOATS}


@kernel("GeluGrad", domain=MS_DOMAIN)
def GeluGrad(dY, X):
    """dY * d/dx [x Phi(x)] = dY * (Phi(x) + x phi(x)), Phi and phi the standard normal's cdf and density."""
    x = X.astype(np.float64)
    grad = 0.5 * (1.0 + erf(x / np.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
    return (dY * grad).astype(dY.dtype)
