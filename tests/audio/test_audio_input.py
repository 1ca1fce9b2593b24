"""Audio clips in: WAV reading (8/16/24/32-bit, stereo), resampling to 16 kHz, and each bad input's error or
notice, naming the file or the class; the task stays usable after each."""
import io
import wave

import numpy as np
import pytest

import speech_backbone as B
from onnxtrain.tasks import DataError
from onnxtrain.tasks.audio import BACKGROUND, AudioSession
from onnxtrain.tasks.audio_frontend import WINDOW_SAMPLES
from onnxtrain.tasks.audio_input import clip_pcm, read_wav, resample, wav_pcm
from spoken_words import wav_bytes


def tone(freq: float, rate: int, seconds: float = 1.0, level: float = 0.5) -> np.ndarray:
    return level * np.sin(2 * np.pi * freq * np.arange(int(rate * seconds)) / rate)


def raw_wav(frames: bytes, width: int, channels: int = 1, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(frames)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def session():
    s = AudioSession(B.embedding())
    s.add_class("tone")
    return s


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_wav_sample_widths_read_to_the_same_float_pcm(width):
    x = tone(440, 16000, 0.1)
    ints = np.round(x * (2 ** (8 * width - 1) - 1)).astype(np.int64)
    if width == 1:
        frames = (ints + 128).astype(np.uint8).tobytes()
    elif width == 3:
        frames = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints)
    else:
        frames = ints.astype({2: "<i2", 4: "<i4"}[width]).tobytes()
    samples, rate = read_wav(raw_wav(frames, width), "t.wav")
    assert rate == 16000 and samples.shape == (len(x), 1)
    assert np.abs(samples[:, 0] - x).max() <= 1.5 / 2 ** (8 * width - 1)


def test_resampling_keeps_a_tone_and_removes_what_the_new_rate_cannot_hold():
    for rate in (8000, 22050, 44100, 48000):
        got = resample(tone(1000, rate), rate)
        want = tone(1000, 16000)
        assert len(got) == 16000
        # away from the edges, where the kernel runs past the clip
        assert np.abs(got[200:-200] - want[200:-200]).max() < 2e-3, rate
    above = resample(tone(11000, 48000), 48000)   # over 16 kHz's Nyquist frequency
    assert np.abs(above[200:-200]).max() < 0.01


def test_a_one_second_8khz_file_is_resampled_with_a_notice(session):
    pcm, notices = wav_pcm(wav_bytes(tone(500, 8000), 8000), "hello.wav")
    assert len(pcm) == 16000 and notices == ["hello.wav was resampled from 8000 Hz to 16000 Hz"]
    added = session.add_wav(wav_bytes(tone(500, 8000), 8000), 1, names=["hello.wav"])
    assert added["windows"] == [3] and "hello.wav was resampled" in added["notices"][0]


def test_stereo_is_mixed_down_with_a_notice(session):
    left, right = tone(300, 16000), tone(600, 16000)
    data = raw_wav(np.round(np.stack([left, right], 1) * 32767).astype("<i2").tobytes(), 2, channels=2)
    pcm, notices = wav_pcm(data, "stereo.wav")
    assert np.abs(pcm - (left + right) / 2).max() < 1e-4
    assert notices == ["stereo.wav has 2 channels; they were mixed down to one"]
    assert session.add_clips(np.stack([left, right], 1), 1)["notices"] == [
        'clip 1 of class "tone" has 2 channels; they were mixed down to one']


def test_clipping_is_a_notice_naming_the_file():
    loud = np.clip(tone(200, 16000, level=3.0), -1, 1)
    _, notices = wav_pcm(wav_bytes(loud, 16000), "loud.wav")
    assert len(notices) == 1 and notices[0].startswith("loud.wav is clipped (") and "record it quieter" in notices[0]
    assert wav_pcm(wav_bytes(tone(200, 16000), 16000), "fine.wav")[1] == []


def test_silence_is_an_error_naming_the_clip_but_background_may_be_quiet(session):
    with pytest.raises(DataError, match=r'silent.wav is silent \(digital silence\)'):
        session.add_wav(wav_bytes(np.zeros(16000), 16000), 1, names=["silent.wav"])
    with pytest.raises(DataError, match=r'clip 1 of class "tone" is silent \(its loudest sample is -70 dBFS\)'):
        session.add_clips(tone(100, 16000, level=10 ** (-70 / 20)), 1)
    assert session.add_clips(np.zeros(16000), 0)["windows"] == [3]     # a muted room is a background


def test_a_corrupt_wav_names_the_file(session):
    good = wav_bytes(tone(440, 16000), 16000)
    with pytest.raises(DataError, match=r"cut.wav is cut short: its header promises 16000 frames, it holds 100"):
        session.add_wav(good[:44 + 200], 1, names=["cut.wav"])
    broken = good[:12] + b"junk" + good[16:]       # the fmt chunk's id destroyed
    with pytest.raises(DataError, match=r"broken.wav is a WAV file that cannot be read \("):
        session.add_wav(broken, 1, names=["broken.wav"])


def test_a_file_that_is_not_audio_names_the_file(session):
    with pytest.raises(DataError, match=r"photo.png is not a WAV file \(it starts with b'\\x89PNG"):
        session.add_wav(b"\x89PNG\r\n\x1a\n" + bytes(100), 1, names=["photo.png"])
    with pytest.raises(DataError, match=r"notes.txt is not a WAV file"):
        session.add_wav(b"yes no stop", 1, names=["notes.txt"])


def test_a_clip_shorter_than_one_window_is_an_error():
    with pytest.raises(DataError, match=r"short.wav is 0.500 s long; a clip must be at least 0.782 s \(12512"):
        wav_pcm(wav_bytes(tone(440, 16000, 0.5), 16000), "short.wav")
    assert len(clip_pcm(tone(440, 16000, WINDOW_SAMPLES / 16000), 16000, "x")[0]) == WINDOW_SAMPLES


def test_bad_arrays_and_rates_are_errors():
    with pytest.raises(DataError, match=r"x must be float PCM \[samples\] or \[samples, channels\]; it is <U1"):
        clip_pcm(np.array(["a"]), 16000, "x")
    with pytest.raises(DataError, match=r"x holds NaN"):
        clip_pcm(np.full(16000, np.nan), 16000, "x")
    with pytest.raises(DataError, match=r"x has a sample rate of 100 Hz"):
        clip_pcm(np.zeros(16000), 100, "x")


def test_a_class_with_no_clips_cannot_train_and_the_task_stays_usable():
    s = AudioSession(B.embedding())
    s.add_class("yes")
    s.add_clips([tone(300, 16000, 1.0, 0.1 * k) for k in (1, 2)], 0)
    with pytest.raises(DataError, match=r'the class "yes" has no clips; add some, or remove the class'):
        s.setup()
    with pytest.raises(DataError, match=r'no WAV files were given for class "yes"'):
        s.add_wav([], 1)
    s.add_clips([tone(900, 16000, 1.0, 0.1 * k) for k in (1, 2)], 1)
    assert s.setup()["train_per_class"] == [2, 2] and s.classes() == [BACKGROUND, "yes"]
