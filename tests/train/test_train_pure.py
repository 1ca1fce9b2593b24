"""The trainer's pure parts (best-epoch tracking, finiteness counts), with numpy as the only reference, so that they
also run inside Pyodide."""
import numpy as np
import pytest

from onnxtrain.train import BestEpoch, bad_values
from onnxtrain.train.data import batch_size, fraction

IN_PYODIDE = True  # pure numpy: also run inside Pyodide by tests/browser/test_in_pyodide.py

PARAMS = {"w": np.zeros(3, np.float32)}


def test_the_tracker_follows_the_lowest_finite_loss():
    tracker = BestEpoch(keep_best=True, patience=3)
    params = {"w": np.zeros(3, np.float32)}
    results = []
    for epoch, loss in enumerate([3.0, 2.0, 2.5, float("nan"), 1.5, 2.0, float("inf"), 2.0], 1):
        params["w"][:] = epoch
        results.append(tracker.end_epoch(epoch, loss, params))
    assert [(r["best_epoch"], r["improved"], r["epochs_without_improvement"], r["stop"]) for r in results] == [
        (1, True, 0, False), (2, True, 0, False), (2, False, 1, False), (2, False, 2, False), (5, True, 0, False),
        (5, False, 1, False), (5, False, 2, False), (5, False, 3, True)]
    assert results[-1]["best_loss"] == 1.5
    np.testing.assert_array_equal(tracker.params["w"], 5)  # a copy, not the live array
    assert tracker.end_epoch(8, 0.1, params) == results[-1] | {"improved": False}  # the same epoch counts once
    live = {"w": np.zeros(3, np.float32)}
    assert tracker.put_back(live) and (live["w"] == 5).all()


def test_patience_zero_never_stops_and_none_tracks_nothing():
    tracker = BestEpoch(keep_best=False, patience=0)
    for epoch in range(1, 30):
        result = tracker.end_epoch(epoch, 10.0 + epoch, PARAMS)
    assert result["best_epoch"] == 1 and result["epochs_without_improvement"] == 28 and not result["stop"]
    assert tracker.params is None and not tracker.put_back({"w": np.zeros(3, np.float32)})
    fresh = BestEpoch()
    assert fresh.end_epoch(1, None, PARAMS) == {"best_epoch": None, "best_loss": None, "improved": False,
                                                "stop": False, "epochs_without_improvement": 0}


@pytest.mark.parametrize("keep_best, patience, message", [
    ("yes", 3, "keep_best must be true or false, got 'yes'"),
    (True, -1, r"patience must be an integer >= 0 \(0: no early stop\), got -1"),
    (True, 2.5, "patience must be an integer >= 0 .*got 2.5"),
    (True, float("nan"), "patience must be .*got nan"),
    (True, True, "patience must be .*got True"),
    (True, "3", "patience must be .*got '3'"),
])
def test_bad_settings_are_refused(keep_best, patience, message):
    tracker = BestEpoch(True, 4)
    with pytest.raises(ValueError, match=message):
        tracker.configure(keep_best, patience)
    assert (tracker.keep_best, tracker.patience) == (True, 4)
    with pytest.raises(ValueError, match="the validation loss must be a number or None, got 'low'"):
        tracker.end_epoch(1, "low", PARAMS)


@pytest.mark.parametrize("text, field", [
    ("not json", "expected a JSON object"),
    ('{"keep_best": true, "patience": 3, "best_epoch": "2", "best_loss": 1.0, "epochs_without_improvement": 0}',
     "'best_epoch' must be an integer >= 0 or null, got '2'"),
    ('{"keep_best": true, "patience": 3, "best_epoch": 2, "best_loss": null, "epochs_without_improvement": 0}',
     "'best_loss' must be a finite number when 'best_epoch' is set"),
    ('{"keep_best": true, "patience": 3, "best_epoch": 2, "best_loss": NaN, "epochs_without_improvement": 0}',
     "'best_loss' must be a finite number"),
    ('{"keep_best": true, "patience": -3, "best_epoch": null, "best_loss": null, "epochs_without_improvement": 0}',
     "patience must be an integer >= 0"),
    ('{"keep_best": true, "patience": 3, "best_epoch": null, "best_loss": null, "epochs_without_improvement": -1}',
     "'epochs_without_improvement' must be an integer >= 0, got -1"),
])
def test_a_corrupt_property_is_named(text, field):
    with pytest.raises(ValueError, match=f"the checkpoint's property 'onnxtrain.best' is corrupt: .*{field}"):
        BestEpoch.from_property(text)


def test_the_property_round_trips():
    tracker = BestEpoch(True, 4)
    for epoch, loss in enumerate([2.0, 1.0, 1.5], 1):
        tracker.end_epoch(epoch, loss, PARAMS)
    back = BestEpoch.from_property(tracker.to_property())
    assert (back.keep_best, back.patience, back.best_epoch, back.best_loss, back.since, back.last_epoch) == \
        (True, 4, 2, 1.0, 1, 3)


def test_bad_values_counts_nan_and_inf_even_when_the_sum_overflows():
    big = np.full(10, 3e38, np.float32)
    assert bad_values(big) == 0 and bad_values(np.arange(5)) == 0 and bad_values(np.zeros(0, np.float32)) == 0
    big[[2, 7]] = [np.nan, -np.inf]
    assert bad_values(big) == 2


def test_batch_sizes_and_fractions():
    assert batch_size(64) == 64 and batch_size(64.0) == 64 and batch_size(np.int32(3)) == 3
    for bad in (0, -1, 2.5, float("nan"), True, "8", None):
        with pytest.raises(ValueError, match="the batch size must be a whole number >= 1"):
            batch_size(bad)
    assert fraction(0) == 0.0 and fraction(0.25) == 0.25
    for bad in (1, -0.1, float("nan"), "0.1", None):
        with pytest.raises(ValueError, match="fraction must be a number from 0 up to"):
            fraction(bad)
