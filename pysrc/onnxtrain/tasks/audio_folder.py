"""What ``python -m onnxtrain train FOLDER --audio`` reads: a folder of class folders of WAV files (the folder
``_background_noise_``, as Google's Speech Commands names it, or ``background``, is the background-noise class),
and the audio backbone: embedding_model.onnx, or the openwakeword wheel that holds it."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import zipfile

from ..train.data import DataError
from .audio import BACKGROUND, AudioSession

BACKGROUND_FOLDERS = ("_background_noise_", "background", BACKGROUND.casefold())
WHEEL_MEMBER = "openwakeword/resources/models/embedding_model.onnx"
PACKAGE = "openwakeword"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror or e}") from None


def read_folder(path: str) -> dict:
    """{class name: [(file path, bytes)]} of ``path``'s subfolders' .wav files, in name order; the background
    folder's class is BACKGROUND.  DataError for a folder with no classes, or a class folder with no WAV file."""
    if not os.path.isdir(path):
        raise DataError(f"{path} is not a folder; with --audio give a folder with a subfolder of WAV files for "
                        f"each class")
    classes = {}
    for name in sorted(os.listdir(path)):
        folder = os.path.join(path, name)
        if not os.path.isdir(folder) or name.startswith("."):
            continue
        files = sorted(f for f in os.listdir(folder) if f.lower().endswith(".wav")
                       and os.path.isfile(os.path.join(folder, f)))
        if not files:
            raise DataError(f"the class folder {folder} has no .wav files; add clips, or remove the folder")
        label = BACKGROUND if name.casefold() in BACKGROUND_FOLDERS else name
        if label in classes:
            raise DataError(f"{path} has two background-noise folders; keep one of {list(BACKGROUND_FOLDERS)}")
        classes[label] = [(os.path.join(folder, f), _read(os.path.join(folder, f))) for f in files]
    if len(classes) < 2:
        raise DataError(f"{path} has {len(classes)} class folder{'' if len(classes) == 1 else 's'} of WAV files; "
                        f"it needs at least two (one subfolder for each class)")
    return classes


def backbone_bytes(path=None) -> bytes:
    """embedding_model.onnx's bytes from ``path`` (the .onnx file, or the openwakeword wheel), or from the
    installed openwakeword package when ``path`` is None."""
    if path is None:
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise DataError("no audio backbone: pass --backbone with embedding_model.onnx (the site's "
                            "artifacts/speech_embedding/) or the openwakeword 0.5.1 wheel")
        path = os.path.join(list(spec.submodule_search_locations)[0], "resources", "models", "embedding_model.onnx")
        return _read(path)
    data = _read(path)
    if data[:2] == b"PK":
        try:
            with zipfile.ZipFile(path) as z:
                return z.read(WHEEL_MEMBER)
        except (zipfile.BadZipFile, KeyError) as e:
            raise DataError(f"--backbone {path} is a zip file without {WHEEL_MEMBER} ({e})") from None
    return data


def folder_session(path: str, backbone: bytes, run=None) -> tuple:
    """(an AudioSession with the folder's classes and clips, its notices, the data's SHA-256)."""
    classes = read_folder(path)
    session = AudioSession(backbone, run=run, background=BACKGROUND in classes)
    digest, notices = hashlib.sha256(), []
    for name, files in classes.items():
        index = 0 if name == BACKGROUND else session.add_class(name)
        added = session.add_wav([data for _, data in files], index, names=[f for f, _ in files])
        notices += added["notices"]
        for f, data in files:
            digest.update(f"{name}/{os.path.basename(f)}".encode() + b"\0" + hashlib.sha256(data).digest())
    return session, notices, digest.hexdigest()
