"""What the engine's start imports (build.START_IMPORTS, web/lib/start.mjs's IMPORTS, the modules its memory
snapshot holds): not artifact generation (onnxtrain.artifacts, onnxblock), gradient rules, the tasks or
importlib.metadata, and no random generator made at import.  Each check runs the imports in a fresh interpreter."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import build  # noqa: E402

# What the imports left loaded, and every random generator (numpy's Generator, RandomState or bit generator)
# that a loaded onnxtrain module holds.
PROBE = """
import json, sys
exec(sys.argv[1])
loaded = sorted(sys.modules)
import numpy as np
kinds = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)
generators = [f"{name}.{attr}" for name, module in sorted(sys.modules.items()) if name.startswith("onnxtrain")
              for attr, value in vars(module).items() if isinstance(value, kinds)]
print(json.dumps({"modules": loaded, "generators": generators}))
"""
NOT_AT_START = ("onnxtrain.artifacts", "onnxtrain.onnxblock", "onnxtrain.autodiff", "onnxtrain.tasks",
                "importlib.metadata")


def started(code: str = build.START_IMPORTS) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "pysrc"), "PATH": ""}, cwd=ROOT)
    return json.loads(out.stdout)


def test_the_start_imports_are_the_engines():
    imports = re.search(r'^const IMPORTS = "([^"]*)";', (ROOT / "web/lib/start.mjs").read_text(), re.M)
    assert imports and imports[1] == build.START_IMPORTS


def test_the_start_imports_nothing_it_does_not_need():
    loaded = started()
    assert "onnxtrain.web.sessions" in loaded["modules"]
    assert [m for m in loaded["modules"] if m.startswith(NOT_AT_START)] == []
    assert loaded["generators"] == []


def test_the_probe_sees_what_it_looks_for():
    loaded = started(build.START_IMPORTS + "; import onnxtrain.artifacts, importlib.metadata; "
                     "from onnxtrain.ops import random; random.unseeded()")
    assert {"onnxtrain.artifacts", "onnxtrain.onnxblock", "importlib.metadata"} <= set(loaded["modules"])
    assert loaded["generators"] == ["onnxtrain.ops.random._shared"]


def test_unseeded_draws_share_one_generator_made_on_first_use():
    from onnxtrain.ops import nn, random
    first = random.unseeded()
    assert isinstance(first, np.random.Generator) and random.unseeded() is first
    data = np.ones((64, 64), np.float32)
    state = first.bit_generator.state
    out, mask = nn.Dropout(data, np.float32(0.5), np.bool_(True))
    assert first.bit_generator.state != state and 0 < mask.sum() < mask.size
    np.testing.assert_array_equal(out, np.where(mask, np.float32(2), np.float32(0)))


@pytest.mark.parametrize("seed", [0, 7])
def test_seeded_draws_are_numpys_default_generator_with_the_seed(seed):
    from onnxtrain.ops import nn, random
    shape = [3, 5]
    drawn = random.RandomUniform(shape=shape, seed=float(seed))
    np.testing.assert_array_equal(drawn, np.random.default_rng(seed).uniform(0.0, 1.0, shape).astype(np.float32))
    data = np.ones((8, 8), np.float32)
    _, mask = nn.Dropout(data, np.float32(0.25), np.bool_(True), seed=seed)
    np.testing.assert_array_equal(mask, np.random.default_rng(seed).random(data.shape) >= 0.25)


def test_start_tasks_import_their_kinds_modules_and_make_no_generator():
    """start({tasks}): the kinds' modules (task_sessions.import_tasks) go into the snapshot, so they too must make
    no random generator at import."""
    from onnxtrain.web.task_kinds import KINDS
    kinds = [kind.kind for kind in reversed(KINDS)] + [KINDS[0].kind]  # any order, a kind twice
    loaded = started(build.START_IMPORTS + "; from onnxtrain.web import task_sessions; task_sessions.import_tasks("
                     f"{kinds!r})")
    assert {"onnxtrain.tasks.handwriting", "onnxtrain.tasks.images", "onnxtrain.tasks.tabular",
            "onnxtrain.web.personalize", "onnxtrain.tasks.text"} <= set(loaded["modules"])
    assert {f"onnxtrain.{kind.module}" for kind in KINDS} <= set(loaded["modules"])
    assert loaded["generators"] == []


def test_start_tasks_are_imported_by_kind_and_checked():
    from onnxtrain.web import task_sessions
    assert task_sessions.import_tasks(["handwriting", "handwriting"]) == ["onnxtrain.tasks.handwriting"]
    assert task_sessions.import_tasks([]) == []
    from onnxtrain.web.task_kinds import KINDS
    kinds = re.escape(repr(sorted(kind.kind for kind in KINDS)))
    assert {"handwriting", "images", "personalize", "tabular", "text"} <= {kind.kind for kind in KINDS}
    with pytest.raises(ValueError, match=rf"start's tasks: unknown kind of task 'handwritting'; the kinds are {kinds}"):
        task_sessions.import_tasks(["tabular", "handwritting"])
    for wrong in ("tabular", [1]):
        with pytest.raises(TypeError, match="start's tasks must be a list of task kinds"):
            task_sessions.import_tasks(wrong)
