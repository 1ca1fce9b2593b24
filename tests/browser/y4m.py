"""Videos for Chromium's fake camera (--use-file-for-fake-video-capture): YUV4MPEG2 files, 4:2:0 (C420jpeg), written
from RGB frames with the BT.601 matrix in limited range, the one Chromium uses to turn the camera's I420 back into
RGB."""
from pathlib import Path

import numpy as np


def rgb_to_i420(rgb: np.ndarray) -> bytes:
    """One H x W x 3 uint8 frame (H and W even) as I420 planes: Y at full size, U and V averaged over 2x2 blocks."""
    h, w, _ = rgb.shape
    if h % 2 or w % 2:
        raise ValueError(f"a 4:2:0 frame needs an even width and height, not {w}x{h}")
    r, g, b = (rgb[..., i].astype(np.float64) / 255 for i in range(3))
    y = 16 + 65.481 * r + 128.553 * g + 24.966 * b
    u = 128 - 37.797 * r - 74.203 * g + 112.0 * b
    v = 128 + 112.0 * r - 93.786 * g - 18.214 * b

    def pooled(plane):
        return plane.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    planes = [y, pooled(u), pooled(v)]
    return b"".join(np.clip(np.rint(p), 0, 255).astype(np.uint8).tobytes() for p in planes)


def write_y4m(path: Path, frames, fps: int = 10) -> Path:
    """``frames`` (H x W x 3 uint8, all one size) as a .y4m video at ``fps`` frames per second.  The file is written
    beside ``path`` and renamed onto it, so a camera that has the old file open keeps reading the old one."""
    frames = [np.asarray(f, np.uint8) for f in frames]
    if not frames:
        raise ValueError("a video needs at least one frame")
    h, w, _ = frames[0].shape
    if any(f.shape != (h, w, 3) for f in frames):
        raise ValueError(f"every frame must be {h}x{w}x3, like the first")
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as out:
        out.write(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for frame in frames:
            out.write(b"FRAME\n")
            out.write(rgb_to_i420(frame))
    tmp.replace(path)
    return path


def read_y4m(path: Path) -> list:
    """The frames of a .y4m written by write_y4m, as I420 bytes each (for checks of the writer)."""
    data = Path(path).read_bytes()
    header, _, rest = data.partition(b"\n")
    tags = {t[:1]: t[1:] for t in header.split()[1:]}
    w, h = int(tags[b"W"]), int(tags[b"H"])
    size = w * h * 3 // 2
    frames = []
    while rest:
        marker, _, rest = rest.partition(b"\n")
        if marker != b"FRAME":
            raise ValueError(f"{path}: expected FRAME, found {marker[:20]!r}")
        frames.append(rest[:size])
        rest = rest[size:]
    return frames
