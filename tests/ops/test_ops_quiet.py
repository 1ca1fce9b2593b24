"""ops.quiet: the float error kinds it names are ignored inside, the others keep their setting, and the error state
is restored after, also after an exception and when nested (numpy 1.x sets the error mask directly, numpy 2 uses
np.errstate)."""
import warnings

import numpy as np
import pytest

from onnxtrain.ops.quiet import ALL, quiet


def test_ignores_the_named_kinds_only_and_restores_the_state():
    inf_minus_inf = np.array([np.inf, -np.inf], np.float32)
    with warnings.catch_warnings(), np.errstate(all="warn"):
        warnings.simplefilter("error")
        with quiet(("divide", "invalid")):
            assert np.geterr() == {"divide": "ignore", "over": "warn", "under": "warn", "invalid": "ignore"}
            assert np.isnan(np.add.reduce(inf_minus_inf))
            assert np.log(np.float32(0)) == -np.inf
            with pytest.raises(RuntimeWarning, match="overflow"):
                np.multiply(np.float32(3e38), np.float32(10))
            with quiet(("over",)):
                assert set(np.geterr().values()) == {"ignore", "warn"} and np.geterr()["under"] == "warn"
                assert np.multiply(np.float32(3e38), np.float32(10)) == np.inf
            assert np.geterr()["over"] == "warn" and np.geterr()["invalid"] == "ignore"
        assert np.geterr() == dict.fromkeys(ALL, "warn")
        with pytest.raises(RuntimeWarning, match="invalid"):
            np.add.reduce(inf_minus_inf)


def test_restores_the_state_after_an_exception():
    before = np.geterr()
    with pytest.raises(ZeroDivisionError):
        with quiet(ALL):
            assert set(np.geterr().values()) == {"ignore"}
            1 / 0
    assert np.geterr() == before
