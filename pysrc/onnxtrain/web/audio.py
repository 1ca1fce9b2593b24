"""The audio task at the JavaScript boundary.  The page sends each clip as a dict: ``{"wav": bytes}`` for a WAV file
(onnxtrain.tasks.audio reads and resamples it, with its own messages), or ``{"pcm": bytes, "rate": Hz}`` for float32
samples, little-endian and mono (the microphone's 16 kHz, or a file the browser decoded)."""
from __future__ import annotations

import numpy as np

from ..tasks import audio
from ..tasks.audio_input import clip_pcm, wav_pcm
from ..tasks.checks import show
from ..train.data import DataError

FLOAT32 = 4


def clip_of(clip, what: str, allow_silence: bool) -> tuple:
    """(16 kHz float32 PCM, notices) of one of the page's clips; DataError naming ``what``."""
    if not isinstance(clip, dict) or not ({"wav"} <= set(clip) or {"pcm", "rate"} <= set(clip)):
        keys = sorted(clip) if isinstance(clip, dict) else type(clip).__name__
        raise DataError(f"{what} must be {{wav}} or {{pcm, rate}}, not {keys}")
    if "wav" in clip:
        return wav_pcm(bytes(clip["wav"]), what, allow_silence)
    data = bytes(clip["pcm"])
    if len(data) % FLOAT32:
        raise DataError(f"{what} has {len(data)} bytes, not a whole number of float32 samples")
    return clip_pcm(np.frombuffer(data, "<f4"), clip["rate"], what, allow_silence)


def names_of(names, clips: list, default: str) -> list:
    """The clips' names in messages: ``names`` (one each), or ``default`` numbered."""
    if not names:
        return [default.format(k + 1) for k in range(len(clips))]
    names = [str(n) for n in names]
    if len(names) != len(clips):
        raise DataError(f"{len(names)} names were given for {len(clips)} clips")
    return names


class AudioSession(audio.AudioSession):
    """tasks.audio.AudioSession taking the page's clips."""

    def add_clips(self, clips, index, names=None) -> dict:
        """The page's clips of class ``index``, embedded now: {"ids", "windows", "notices"}; ``names`` (e.g. the
        files') name them in messages.  Nothing is added when one is bad."""
        i = self._index(index)
        clips = list(clips)
        if not clips:
            raise DataError(f"no clips were given for class {show(self.names[i])}")
        names = names_of(names, clips, "clip {} of class " + show(self.names[i]))
        checked = [clip_of(c, n, self._is_background(i)) for c, n in zip(clips, names)]
        return self._add_pcm([pcm for pcm, _ in checked], [n for _, ns in checked for n in ns], i)

    def predict(self, clips, names=None) -> list:
        """For each of the page's clips: {probabilities, label, class_name, notices}."""
        clips = list(clips)
        if not clips:
            raise DataError("no clips were given to predict")
        names = names_of(names, clips, "clip {} to predict")
        checked = [clip_of(c, n, True) for c, n in zip(clips, names)]
        out = super().predict([pcm for pcm, _ in checked])
        for result, (_, notices) in zip(out, checked):
            result["notices"] = notices + result["notices"]
        return out
