"""Kernels: GridSample, AffineGrid, RoiAlign, MaxRoiPool, NonMaxSuppression, CenterCropPad, Col2Im, DeformConv."""
from __future__ import annotations

import numpy as np

from .registry import kernel


# ---- GridSample ------------------------------------------------------------------------------------

def _reflect(x, lo: float, hi: float):
    """Reflect ``x`` at the borders ``lo`` and ``hi`` until it lies between them."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    dx = np.where(below, lo - x, x - hi)
    n = np.floor(dx / span)
    r = dx - n * span
    even = n % 2 == 0
    return np.where(below, np.where(even, lo + r, hi - r), np.where(above, np.where(even, hi - r, lo + r), x))


def _cubic_weights(t):
    """Keys' cubic convolution weights (a = -0.75) for offsets -1, 0, 1, 2 at fraction ``t``."""
    a = -0.75
    x0, x1, x2, x3 = t + 1, t, 1 - t, 2 - t
    return [((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a,
            ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1,
            ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
            ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a]


def _grid_sample(X, grid, mode: str, padding_mode: str, align_corners: int):
    if mode not in ("linear", "nearest", "cubic"):
        raise ValueError(f"GridSample: mode '{mode}' is not supported")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"GridSample: padding_mode '{padding_mode}' is not supported")
    dims = X.shape[2:]
    r = len(dims)
    if grid.ndim != r + 2 or grid.shape[-1] != r or grid.shape[0] != X.shape[0]:
        raise ValueError(f"GridSample: grid of shape {list(grid.shape)} does not fit input {list(X.shape)}")
    # Per spatial axis i: the sampling coordinate in pixels (the grid's last axis lists them innermost first).
    coords, borders = [], []
    for i, size in enumerate(dims):
        g = grid[..., r - 1 - i]
        x = (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if mode == "nearest":
            x = np.rint(x)
        if padding_mode == "border" and mode != "cubic":
            # Cubic clamps only its taps (below), as PyTorch and onnxruntime do; onnx's reference clamps
            # the coordinate as well and differs from both.
            x = np.where((x < lo) | (x > hi), np.clip(x, 0, size - 1), x)
        elif padding_mode == "reflection":
            x = _reflect(x, lo, hi)
        coords.append(x)
        borders.append((lo, hi))

    def taps(i):
        """[(integer index, weight)] along axis i."""
        x = coords[i]
        if mode == "nearest":
            return [(x.astype(np.int64), None)]
        base = np.floor(x)
        t = x - base
        base = base.astype(np.int64)
        if mode == "linear":
            return [(base, 1 - t), (base + 1, t)]
        return [(base + k - 1, w) for k, w in enumerate(_cubic_weights(t))]

    xt = np.moveaxis(X, 1, -1)                          # [N, *dims, C]
    batch = np.arange(X.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))
    out = np.zeros(grid.shape[:-1] + (X.shape[1],), np.result_type(X.dtype, grid.dtype))
    axis_taps = [taps(i) for i in range(r)]
    for combo in np.ndindex(*[len(t) for t in axis_taps]):
        index, weight, valid = [batch], None, None
        for i, k in enumerate(combo):
            idx, w = axis_taps[i][k]
            size = dims[i]
            if padding_mode == "zeros":
                inside = (idx >= 0) & (idx < size)
                valid = inside if valid is None else valid & inside
                idx = np.clip(idx, 0, size - 1)
            elif padding_mode == "border":
                idx = np.clip(idx, 0, size - 1)
            else:
                idx = np.trunc(_reflect(idx.astype(np.float64), *borders[i])).astype(np.int64)
                idx = np.clip(idx, 0, size - 1)
            index.append(idx)
            if w is not None:
                weight = w if weight is None else weight * w
        value = xt[tuple(index)]
        if weight is not None:
            value = value * weight[..., None]
        if valid is not None:
            value = np.where(valid[..., None], value, 0)
        out += value
    return np.moveaxis(out, -1, 1).astype(X.dtype, copy=False)


@kernel("GridSample", since=16)
def GridSample_16(X, grid, *, align_corners=0, mode="bilinear", padding_mode="zeros"):
    if X.ndim != 4:
        raise ValueError(f"GridSample (opset 16) takes a 4-D input, got rank {X.ndim}")
    modes = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
    if mode not in modes:
        raise ValueError(f"GridSample: mode '{mode}' is not supported")
    return _grid_sample(X, grid, modes[mode], padding_mode, align_corners)


@kernel("GridSample", since=20)
def GridSample_20(X, grid, *, align_corners=0, mode="linear", padding_mode="zeros"):
    return _grid_sample(X, grid, mode, padding_mode, align_corners)


@kernel("AffineGrid", since=20)
def AffineGrid(theta, size, *, align_corners=0):
    size = [int(s) for s in np.asarray(size).ravel()]
    spatial = size[2:]
    r = len(spatial)
    if r not in (2, 3) or theta.shape[1:] != (r, r + 1):
        raise ValueError(f"AffineGrid: theta of shape {list(theta.shape)} does not fit size {size}")
    axes = []
    for n in spatial:
        if align_corners:
            axes.append(np.linspace(-1, 1, n) if n > 1 else np.zeros(1))
        else:
            axes.append((np.arange(n) * 2 + 1) / n - 1)
    mesh = np.meshgrid(*axes, indexing="ij")            # per axis, [*spatial]
    homog = np.stack(mesh[::-1] + [np.ones(spatial)], axis=-1).astype(theta.dtype)   # x first, then 1
    return np.einsum("...k,njk->n...j", homog, theta).astype(theta.dtype, copy=False)


# ---- RoiAlign ------------------------------------------------------------------------------------

def _roi_samples(start: float, bin_size: float, pooled: int, grid: int, size: int):
    """Per (bin, sample) along one axis: low and high pixel, their weights, and whether it is inside."""
    pos = start + np.arange(pooled)[:, None] * bin_size + (np.arange(grid)[None, :] + 0.5) * bin_size / grid
    inside = (pos >= -1.0) & (pos <= size)
    p = np.maximum(pos, 0)
    low = p.astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    p = np.where(at_end, low, p)
    frac = p - low
    return low, high, 1 - frac, frac, inside


def _roi_align(X, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale,
               half_pixel):
    if mode not in ("avg", "max"):
        raise ValueError(f"RoiAlign: mode '{mode}' is not supported")
    n_rois = rois.shape[0]
    _, channels, height, width = X.shape
    out = np.zeros((n_rois, channels, output_height, output_width), X.dtype)
    offset = 0.5 if half_pixel else 0.0
    for n in range(n_rois):
        x0, y0, x1, y1 = (float(v) * spatial_scale - offset for v in rois[n])
        roi_w, roi_h = x1 - x0, y1 - y0
        if not half_pixel:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / output_height, roi_w / output_width
        grid_h = int(sampling_ratio) if sampling_ratio > 0 else int(np.ceil(roi_h / output_height))
        grid_w = int(sampling_ratio) if sampling_ratio > 0 else int(np.ceil(roi_w / output_width))
        yl, yh, wyl, wyh, iny = _roi_samples(y0, bin_h, output_height, grid_h, height)   # [ph, iy]
        xl, xh, wxl, wxh, inx = _roi_samples(x0, bin_w, output_width, grid_w, width)     # [pw, ix]
        inside = (iny[:, :, None, None] & inx[None, None]).astype(np.float64)
        img = X[int(batch_indices[n])].astype(np.float64)                                  # [C, H, W]
        terms = []
        for rows, wy in ((yl, wyl), (yh, wyh)):
            for cols, wx in ((xl, wxl), (xh, wxh)):
                w = wy[:, :, None, None] * wx[None, None] * inside                        # [ph, iy, pw, ix]
                terms.append(w * img[:, rows[:, :, None, None], cols[None, None]])         # [C, ph, iy, pw, ix]
        if mode == "avg":
            out[n] = (sum(terms).sum(axis=(2, 4)) / max(grid_h * grid_w, 1)).astype(X.dtype)
        else:
            out[n] = np.max(np.maximum.reduce(terms), axis=(2, 4)).astype(X.dtype)
    return out


@kernel("RoiAlign", since=10)
def RoiAlign_10(X, rois, batch_indices, *, mode="avg", output_height=1, output_width=1, sampling_ratio=0,
                spatial_scale=1.0):
    return _roi_align(X, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale,
                      False)


@kernel("RoiAlign", since=16)
def RoiAlign_16(X, rois, batch_indices, *, coordinate_transformation_mode="half_pixel", mode="avg",
                output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0):
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise ValueError(f"RoiAlign: coordinate_transformation_mode '{coordinate_transformation_mode}' is not "
                         f"supported")
    return _roi_align(X, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale,
                      coordinate_transformation_mode == "half_pixel")


# ---- NonMaxSuppression ---------------------------------------------------------------------------

def _corners(boxes, center_point_box: int):
    """[N, 4] boxes as (y_min, x_min, y_max, x_max)."""
    if center_point_box:
        xc, yc, w, h = boxes.T
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=1)
    y0, x0, y1, x1 = boxes.T
    return np.stack([np.minimum(y0, y1), np.minimum(x0, x1), np.maximum(y0, y1), np.maximum(x0, x1)], axis=1)


def _scalar(value, default):
    if value is None or np.asarray(value).size == 0:
        return default
    return np.asarray(value).reshape(-1)[0]


@kernel("NonMaxSuppression", since=10)
def NonMaxSuppression(boxes, scores, max_output_boxes_per_class=None, iou_threshold=None, score_threshold=None,
                      *, center_point_box=0):
    limit = max(int(_scalar(max_output_boxes_per_class, 0)), 0)
    iou_limit = float(_scalar(iou_threshold, 0.0))
    floor = _scalar(score_threshold, None)
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[0] != boxes.shape[0] \
            or scores.shape[2] != boxes.shape[1]:
        raise ValueError(f"NonMaxSuppression: boxes {list(boxes.shape)} and scores {list(scores.shape)} do not "
                         f"fit [batch, boxes, 4] and [batch, classes, boxes]")
    selected = []
    for b in range(boxes.shape[0]):
        corners = _corners(boxes[b].astype(np.float64), center_point_box)
        area = (corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1])
        for c in range(scores.shape[1]):
            s = scores[b, c]
            candidates = np.arange(s.size) if floor is None else np.nonzero(s > floor)[0]
            order = candidates[np.argsort(-s[candidates].astype(np.float64), kind="stable")]
            kept, suppressed = [], np.zeros(s.size, bool)
            for i in order:
                if len(kept) >= limit:
                    break
                if suppressed[i]:
                    continue
                kept.append(i)
                h = np.minimum(corners[:, 2], corners[i, 2]) - np.maximum(corners[:, 0], corners[i, 0])
                w = np.minimum(corners[:, 3], corners[i, 3]) - np.maximum(corners[:, 1], corners[i, 1])
                inter = np.where((h > 0) & (w > 0), h * w, 0.0)
                union = area + area[i] - inter
                ok = (inter > 0) & (area > 0) & (area[i] > 0) & (union > 0)
                suppressed |= ok & (inter / np.where(ok, union, 1) > iou_limit)
            selected.extend((b, c, i) for i in kept)
    return np.array(selected, np.int64).reshape(-1, 3)


# ---- CenterCropPad -------------------------------------------------------------------------------

@kernel("CenterCropPad", since=18)
def CenterCropPad(input_data, shape, *, axes=None):
    rank = input_data.ndim
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in axes]
    target = [int(s) for s in np.asarray(shape).ravel()]
    if len(target) != len(axes):
        raise ValueError(f"CenterCropPad: shape {target} has {len(target)} values for {len(axes)} axes")
    out_shape = list(input_data.shape)
    src = [slice(None)] * rank
    dst = [slice(None)] * rank
    for a, want in zip(axes, target):
        have = input_data.shape[a]
        out_shape[a] = want
        if want < have:
            start = (have - want) // 2
            src[a] = slice(start, start + want)
        elif want > have:
            start = (want - have) // 2
            dst[a] = slice(start, start + have)
    out = np.zeros(out_shape, input_data.dtype)
    out[tuple(dst)] = input_data[tuple(src)]
    return out


# ---- Col2Im and DeformConv -----------------------------------------------------------------------

def _spatial_attrs(op: str, n: int, dilations, pads, strides):
    dilations = [1] * n if dilations is None else list(dilations)
    pads = [0] * (2 * n) if pads is None else list(pads)
    strides = [1] * n if strides is None else list(strides)
    if len(dilations) != n or len(pads) != 2 * n or len(strides) != n:
        raise ValueError(f"{op}: dilations {dilations}, pads {pads} and strides {strides} do not fit {n} spatial "
                         f"axes")
    return dilations, pads, strides


@kernel("Col2Im", since=18)
def Col2Im(input, image_shape, block_shape, *, dilations=None, pads=None, strides=None):
    image = [int(v) for v in np.asarray(image_shape).ravel()]
    block = [int(v) for v in np.asarray(block_shape).ravel()]
    n = len(image)
    if len(block) != n:
        raise ValueError(f"Col2Im: image_shape {image} and block_shape {block} differ in length")
    dilations, pads, strides = _spatial_attrs("Col2Im", n, dilations, pads, strides)
    counts = [(image[i] + pads[i] + pads[n + i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1
              for i in range(n)]
    batch, rows, length = input.shape
    k = int(np.prod(block))
    if rows % k or length != int(np.prod(counts)):
        raise ValueError(f"Col2Im: input of shape {list(input.shape)} does not fit blocks {block} over image "
                         f"{image} ({int(np.prod(counts))} positions)")
    channels = rows // k
    cols = input.reshape([batch, channels] + block + counts)
    padded = np.zeros([batch, channels] + [image[i] + pads[i] + pads[n + i] for i in range(n)], input.dtype)
    for offsets in np.ndindex(*block):
        where = tuple(slice(o * d, o * d + s * (c - 1) + 1, s)
                      for o, d, s, c in zip(offsets, dilations, strides, counts))
        padded[(slice(None), slice(None)) + where] += cols[(slice(None), slice(None)) + offsets]
    crop = tuple(slice(pads[i], pads[i] + image[i]) for i in range(n))
    return padded[(slice(None), slice(None)) + crop]


@kernel("DeformConv", since=19)
def DeformConv(X, W, offset, B=None, mask=None, *, dilations=None, group=1, kernel_shape=None, offset_group=1,
               pads=None, strides=None):
    if X.ndim != 4:
        raise ValueError(f"DeformConv: only 2-D convolutions (4-D inputs) are supported, got rank {X.ndim}")
    n, c, ih, iw = X.shape
    oc = W.shape[0]
    kh, kw = W.shape[2:] if kernel_shape is None else kernel_shape
    (dh, dw), (pt, pl, pb, pr), (sh, sw) = _spatial_attrs("DeformConv", 2, dilations, pads, strides)
    oh, ow = offset.shape[2:]
    if oh != (ih + pt + pb - dh * (kh - 1) - 1) // sh + 1 or ow != (iw + pl + pr - dw * (kw - 1) - 1) // sw + 1:
        raise ValueError(f"DeformConv: offset of shape {list(offset.shape)} does not fit the output of this "
                         f"convolution")
    if c != W.shape[1] * group or oc % group or c % offset_group or offset.shape[1] != offset_group * 2 * kh * kw:
        raise ValueError(f"DeformConv: X {list(X.shape)}, W {list(W.shape)} and offset {list(offset.shape)} do not "
                         f"fit group {group} and offset_group {offset_group}")
    g = offset_group
    off = offset.reshape(n, g, kh, kw, 2, oh, ow).astype(np.float64)
    y = (np.arange(kh) * dh)[:, None, None, None] + (np.arange(oh) * sh - pt)[None, None, :, None] + off[:, :, :, :, 0]
    x = (np.arange(kw) * dw)[None, :, None, None] + (np.arange(ow) * sw - pl)[None, None, None, :] + off[:, :, :, :, 1]
    xt = X.reshape(n, g, c // g, ih, iw).transpose(0, 1, 3, 4, 2)                 # [n, g, ih, iw, c/g]
    bi = np.arange(n).reshape(n, 1, 1, 1, 1, 1)
    gi = np.arange(g).reshape(1, g, 1, 1, 1, 1)
    y0, x0 = np.floor(y), np.floor(x)
    sampled = 0
    for yi, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xi, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            inside = (yi >= 0) & (yi < ih) & (xi >= 0) & (xi < iw)
            values = xt[bi, gi, np.clip(yi, 0, ih - 1).astype(np.intp), np.clip(xi, 0, iw - 1).astype(np.intp)]
            sampled = sampled + values * (wy * wx * inside)[..., None]          # [n, g, kh, kw, oh, ow, c/g]
    if mask is not None:
        sampled = sampled * mask.reshape(n, g, kh, kw, oh, ow)[..., None]
    cols = sampled.transpose(0, 1, 6, 2, 3, 4, 5).reshape(n, group, (c // group) * kh * kw, oh * ow)
    weights = W.reshape(group, oc // group, -1).astype(np.float64)
    out = np.einsum("gok,ngkp->ngop", weights, cols).reshape(n, oc, oh, ow)
    if B is not None:
        out = out + B.reshape(1, -1, 1, 1)
    return out.astype(X.dtype)


@kernel("MaxRoiPool", since=1)
def MaxRoiPool(X, rois, *, pooled_shape, spatial_scale=1.0):
    """rois: [num_rois, 5] of (batch index, x1, y1, x2, y2); each ROI (scaled, rounded half away from zero) is
    split into pooled_shape bins and each bin's maximum taken (0 for an empty bin)."""
    ph_count, pw_count = pooled_shape
    _, channels, height, width = X.shape
    out = np.zeros((rois.shape[0], channels, ph_count, pw_count), X.dtype)
    for n, roi in enumerate(np.asarray(rois, np.float64)):
        b = int(roi[0])
        x1, y1, x2, y2 = (int(np.sign(v) * np.floor(abs(v) + 0.5)) for v in roi[1:] * spatial_scale)
        bin_h = max(y2 - y1 + 1, 1) / ph_count
        bin_w = max(x2 - x1 + 1, 1) / pw_count
        for ph in range(ph_count):
            h0 = min(max(int(np.floor(ph * bin_h)) + y1, 0), height)
            h1 = min(max(int(np.ceil((ph + 1) * bin_h)) + y1, 0), height)
            for pw in range(pw_count):
                w0 = min(max(int(np.floor(pw * bin_w)) + x1, 0), width)
                w1 = min(max(int(np.ceil((pw + 1) * bin_w)) + x1, 0), width)
                if h1 > h0 and w1 > w0:
                    out[n, :, ph, pw] = X[b, :, h0:h1, w0:w1].max(axis=(1, 2))
    return out
