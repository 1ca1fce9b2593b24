"""Real photos that ship inside the test venv's packages (scikit-learn's two sample JPEGs, scikit-image's bundled
photos), the ImageNet classes a sensible classifier gives them, and the numpy preprocessing of the backbone's
contract: center square crop, resize to the model's size (bilinear, antialiased when shrinking), x = (p / 255 -
mean) / std, NCHW float32."""
from __future__ import annotations

import numpy as np

# ImageNet-1k class indices (and names) that count as a right answer for a photo.
EXPECTED = {
    "chelsea": {281: "tabby cat", 282: "tiger cat", 283: "Persian cat", 284: "Siamese cat", 285: "Egyptian cat"},
    "coffee": {967: "espresso", 968: "cup", 504: "coffee mug"},
    "rocket": {657: "missile", 744: "projectile", 812: "space shuttle"},
    "motorcycle": {665: "moped", 670: "motor scooter"},
    "china": {442: "bell cote", 698: "palace", 483: "castle", 832: "stupa", 663: "monastery", 975: "lakeside"},
    "flower": {985: "daisy", 738: "pot (flowerpot)", 309: "bee"},
}
# Names of other classes these photos get as runner-up or top-1, for the report only.
OTHER_NAMES = {422: "barbershop", 450: "bobsled", 560: "football helmet", 543: "dumbbell", 619: "lampshade",
               947: "mushroom", 996: "hen-of-the-woods", 287: "lynx", 518: "crash helmet", 535: "disk brake",
               540: "drilling platform", 733: "pole", 437: "beacon"}


def class_name(index: int) -> str:
    for classes in EXPECTED.values():
        if index in classes:
            return classes[index]
    return OTHER_NAMES.get(index, f"class {index}")


def photos() -> dict:
    """name -> uint8 RGB [H, W, 3]."""
    import skimage.data
    from sklearn.datasets import load_sample_images
    sample = load_sample_images()
    names = [f.rsplit("/", 1)[-1].rsplit(".", 1)[0] for f in sample.filenames]
    found = dict(zip(names, sample.images))
    found.update(chelsea=skimage.data.chelsea(), coffee=skimage.data.coffee(), astronaut=skimage.data.astronaut(),
                 rocket=skimage.data.rocket(), motorcycle=skimage.data.stereo_motorcycle()[0])
    return {name: np.ascontiguousarray(image[..., :3]) for name, image in found.items()}


def preprocess(images, size: int, mean, std) -> np.ndarray:
    """uint8 [H, W, 3] images -> float32 [N, 3, size, size] by the backbone's contract (PIL does the resize)."""
    from PIL import Image
    out = []
    for image in images:
        h, w = image.shape[:2]
        k = min(h, w)
        top, left = (h - k) // 2, (w - k) // 2
        square = Image.fromarray(np.ascontiguousarray(image[top:top + k, left:left + k]))
        pixels = np.asarray(square.resize((size, size), Image.BILINEAR), dtype=np.float32)
        out.append((pixels / 255 - np.float32(mean)) / np.float32(std))
    return np.stack(out).transpose(0, 3, 1, 2).astype(np.float32)
