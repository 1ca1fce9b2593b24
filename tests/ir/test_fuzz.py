"""Fuzz test (issue 10, item 4): mutations of real files into every reader of user files, with a fixed
seed and budget (about a minute on two busy cores).  Each input must end cleanly: no error, or an
onnxtrain error class, within the deadline and the memory bound (tests/fuzz_targets.py).  The longer
campaign is bench/fuzz.py."""

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fuzz_targets as F

# a minute and more of mutations, some of the site's artifacts (build.py site)
pytestmark = [pytest.mark.slow, pytest.mark.site]

BUDGET = {"decode": 2000, "checkpoint": 2000, "artifacts": 400, "csv": 600, "npz": 300, "images": 200}


def fuzz_settings(target: str):
    return settings(max_examples=BUDGET[target], derandomize=True, database=None, deadline=None,
                    phases=(Phase.explicit, Phase.generate), print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


ops = st.lists(st.tuples(st.sampled_from(F.KINDS), st.integers(0, 2**31 - 1), st.integers(0, 2**16 - 1),
                         st.one_of(st.sampled_from(F.INTERESTING), st.integers(0, 2**64 - 1))),
               min_size=1, max_size=6)


def check(name, target, data):
    F.run(target, data, len(data), *F.BOUNDS[name])


@pytest.fixture(scope="module")
def seeds():
    return {"onnx": F.onnx_seeds(), "checkpoint": F.checkpoint_seeds(), "artifacts": F.artifact_sets()}


def test_decode_and_plan_mutated_models(seeds):
    @fuzz_settings("decode")
    @given(st.integers(0, len(seeds["onnx"]) - 1), ops)
    def fuzz(i, mutation):
        check("decode", F.decode_target, F.mutate(seeds["onnx"][i], mutation))
    fuzz()


def test_read_mutated_checkpoints(seeds):
    @fuzz_settings("checkpoint")
    @given(st.integers(0, len(seeds["checkpoint"]) - 1), ops)
    def fuzz(i, mutation):
        check("checkpoint", F.checkpoint_target, F.mutate(seeds["checkpoint"][i], mutation))
    fuzz()


def test_module_optimizer_and_a_train_step_from_mutated_artifact_sets(seeds):
    @fuzz_settings("artifacts")
    @given(st.integers(0, len(seeds["artifacts"]) - 1), st.sampled_from(F.ARTIFACT_NAMES), ops)
    def fuzz(i, name, mutation):
        arts = dict(seeds["artifacts"][i])
        arts[name] = F.mutate(arts[name], mutation)
        F.run(F.artifacts_target, arts, sum(map(len, arts.values())), *F.BOUNDS["artifacts"])
    fuzz()


def test_csv_loader_on_mutated_files():
    @fuzz_settings("csv")
    @given(ops)
    def fuzz(mutation):
        check("csv", F.csv_target, F.mutate(F.CSV_SEED, mutation))
    fuzz()


def test_npz_loader_on_mutated_files():
    @fuzz_settings("npz")
    @given(st.booleans(), ops)
    def fuzz(compressed, mutation):
        check("npz", F.npz_target, F.mutate(F.npz_compressed_seed() if compressed else F.npz_seed(), mutation))
    fuzz()


def test_image_loader_on_mutated_inputs():
    @fuzz_settings("images")
    @given(ops)
    def fuzz(mutation):
        check("images", F.image_target, F.mutate(F.image_seed(), mutation))
    fuzz()
