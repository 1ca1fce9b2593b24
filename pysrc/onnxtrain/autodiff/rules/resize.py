"""The gradient rule of Resize and Upsample (ops/resize.py)."""
from __future__ import annotations

from ...ops.resize import axis_plan, interpolation, roi_pairs
from ._emit import matmul_along, text
from ._registry import rule


@rule("Resize", "Upsample")
def _resize(c, x, y, dy):
    """Resize is one interpolation matrix M per resized axis (the forward kernel's own, from ops/resize.py);
    its gradient multiplies by M transposed.  Extrapolated positions (tf_crop_and_resize) pass no gradient."""
    n = c.node
    old = n.op_type == "Upsample" or c.opset < 11  # inputs (X, scales); asymmetric, onnxruntime's nearest
    if old:
        roi, scales, sizes = None, c.constant(x[1]), None
    else:
        roi, scales, sizes = (c.constant(v) if v else None for v in (x + ["", "", ""])[1:4])
    shape = c.shape(x[0])
    if (scales is None or not scales.size) and (sizes is None or not sizes.size) or (
            not old and len(x) > 1 and x[1] and roi is None):
        raise NotImplementedError(f"{c.where()}: the Resize gradient needs constant roi, scales or sizes")
    dims = [d if isinstance(d, int) else 1 for d in shape]
    axes = n.attr("axes")
    plan = axis_plan(dims, scales, sizes, axes, text(n.attr("keep_aspect_ratio_policy", "stretch")))
    mode = text(n.attr("mode", "nearest"))
    coordinates = "asymmetric" if old else text(n.attr("coordinate_transformation_mode", "half_pixel"))
    rois = {} if old else roi_pairs(roi, len(plan), plan, len(shape), coordinates)
    plan = [(axis, *rest) for axis, *rest in plan if rest[0] != rest[1] or rest[2] != 1.0 or axis in rois]
    if any(not isinstance(shape[axis], int) for axis, *_ in plan):
        raise NotImplementedError(f"{c.where()}: the Resize gradient needs static sizes on the resized axes")
    grad = dy[0]
    for axis, in_len, out_len, scale in reversed(plan):
        nearest = ("ceil" if scale < 1 else "floor") if old else text(n.attr("nearest_mode", "round_prefer_floor"))
        options = {} if old else {"cubic_coeff_a": n.attr("cubic_coeff_a", -0.75), "roi": rois.get(axis),
                                  "exclude_outside": bool(n.attr("exclude_outside", 0)),
                                  "antialias": bool(n.attr("antialias", 0))}
        m, _ = interpolation(in_len, out_len, scale, mode, coordinates, nearest, **options)
        grad = matmul_along(c, grad, axis, len(shape), m.astype(c.dtype(x[0])))
    return [grad]
