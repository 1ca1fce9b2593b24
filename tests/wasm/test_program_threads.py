"""One program on several threads at once (web/kernels/program_threads.c's run_program_threads, through
onnxtrain.wasm.native_threads.NativeThreads) against the same program on one (run_program): the wasm provider's
train and optimizer programs for the MLP, the CNN, the conv block, the transformer and MiniLM's LoRA step, run step
after step from identical copies of every buffer, leave every buffer with the same bits at 2 and 3 parts, with the
default split thresholds and with every record that can split split (threshold 0).  A failing record gives
the same result on every parts count and runs nothing after it; one sync block serves every program and parts
count; many tiny runs in a row do not deadlock."""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
import pytest

import ort_cases
from onnxtrain import api
from onnxtrain.wasm.native import library
from onnxtrain.wasm.native_threads import NativeThreads

ROOT = Path(__file__).resolve().parents[2]
LIB, OPS = library()
SPLIT_WORK = LIB.program_threads_split_work(0)   # the build's default
LIB.program_threads_split_work(SPLIT_WORK)
STEPS = 3
FAILING_RUNS = 50
PARTS = (2, 3)
TEXTS = {"sport": ["The team won the match in overtime.", "She scored two goals in the final.",
                   "The coach praised the defenders after the game.", "He ran the marathon in under three hours."],
         "food": ["Add the garlic and simmer for ten minutes.", "This soup needs more salt.",
                  "We baked bread with rye flour.", "The restaurant serves fresh pasta every day."]}


@pytest.fixture(scope="module")
def sync():
    """One sync block for every run of this module: every program, every parts count."""
    return np.zeros(LIB.program_sync_words(), np.int32)


@pytest.fixture(scope="module")
def pools():
    made = {parts: NativeThreads(parts) for parts in PARTS}
    yield made
    for pool in made.values():
        pool.close()


@pytest.fixture
def split_work():
    """Sets the split threshold for one test, restoring the default after it."""
    yield LIB.program_threads_split_work
    LIB.program_threads_split_work(SPLIT_WORK)


class Steps:
    """A trained Module's and Optimizer's programs after one step Python ran, as the engine runs them (FastStep):
    each step writes the batch's rows permuted into the bound user inputs, the reset flag and the step count,
    then runs the train program and the optimizer program."""

    def __init__(self, module, optimizer):
        self.module, self.optimizer = module, optimizer
        self.train = module._train.last_runner
        self.update = optimizer._session.last_runner
        self.update.bind_feeds(optimizer._feeds())
        self.programs = [self.train.fixed(), self.update.fixed()]
        assert None not in self.programs, "a program with host nodes"
        self.raws = [r for runner in (self.train, self.update) for r in runner.raw if r is not None and r.size]
        self.inputs = []
        for pos, (kind, _) in enumerate(module._train_layout):
            if kind == "user":
                index = self.train._feed_storage(pos).index
                shape, dtype = self.train.feed_shape(pos)
                self.inputs.append(self.train.raw[index][:int(np.prod(shape)) * dtype.itemsize].view(dtype)
                                   .reshape(shape))
        self.batch = [x.copy() for x in self.inputs]

    def snapshot(self) -> list:
        return [r.copy() for r in self.raws]

    def restore(self, saved: list) -> None:
        for r, s in zip(self.raws, saved):
            if r.flags.writeable:
                np.copyto(r, s)
            else:                    # a constant bound in place (compared, like every buffer, after the runs)
                assert np.array_equal(r, s)

    def split_records(self, parts: int) -> int:
        return sum(LIB.program_split_records(ctypes.c_void_p(p["words"]), p["n"], ctypes.c_void_p(p["table"]),
                                             parts) for p in self.programs)

    def run(self, runner, steps: int = STEPS) -> list:
        """``steps`` steps with ``runner(program) -> result``; the results."""
        rng = np.random.default_rng(5)
        results = []
        for step in range(steps):
            order = rng.permutation(len(self.batch[0]))
            for x, rows in zip(self.inputs, self.batch):
                np.copyto(x, rows[order] if len(rows) == len(order) else rows)
            self.module._overwrite[0] = step % 3 != 1          # the second step accumulates
            results.append(runner(self.programs[0]))
            self.optimizer._step[0] = self.optimizer._group.step + 1 + step
            results.append(runner(self.programs[1]))
        return results


def one_thread(program) -> int:
    return LIB.run_program(ctypes.c_void_p(program["words"]), program["n"], ctypes.c_void_p(program["table"]))


def threaded(pool, sync):
    def run(program):
        result = pool.run(program["words"], program["n"], program["table"], sync.ctypes.data)
        assert sync[1] == 0, f"{sync[1]} parts left in the barrier after a run"
        return result
    return run


def assert_same_bits(steps: Steps, runs: dict, what: str) -> None:
    want = runs.pop(1)
    for parts, got in runs.items():
        for i, (g, w) in enumerate(zip(got, want)):
            if not np.array_equal(g, w):
                first = int(np.flatnonzero(g != w)[0])
                raise AssertionError(f"{what}, {parts} parts: buffer {i} of {len(want)} ({w.size} bytes) differs "
                                     f"from byte {first}")


def check(steps: Steps, pools: dict, sync, split_work) -> None:
    start = steps.snapshot()
    for work in (SPLIT_WORK, 0):
        split_work(work)
        assert all(steps.split_records(parts) > 0 for parts in PARTS)
        runs, results = {}, {}
        for parts in (1, *PARTS):
            steps.restore(start)
            results[parts] = steps.run(one_thread if parts == 1 else threaded(pools[parts], sync))
            runs[parts] = steps.snapshot()
        assert all(r == results[1] for r in results.values()), results
        assert results[1] == [0] * (2 * STEPS)
        assert_same_bits(steps, runs, f"split work {work}")


def trained(files: dict):
    state = api.CheckpointState.load_checkpoint(str(files["checkpoint"]))
    module = api.Module(str(files["training"]), state, str(files["eval"]), device="wasm")
    return module, api.Optimizer(str(files["optimizer"]), module)


@pytest.mark.parametrize("name", ["mlp_full_ce_adamw", "cnn_full_ce_adamw"])
def test_ort_cases(name, pools, sync, split_work):
    module, optimizer = trained(ort_cases.files(name))
    module(*ort_cases.batches(name, 1)[0])
    optimizer.step()
    module.lazy_reset_grad()
    check(Steps(module, optimizer), pools, sync, split_work)


@pytest.mark.parametrize("key", ["convblock", "transformer"])
def test_bench_models(key, pools, sync, split_work):
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_models
    module, optimizer = trained(bench_models.files(key))
    module(*bench_models.batch(key))
    optimizer.step()
    module.lazy_reset_grad()
    check(Steps(module, optimizer), pools, sync, split_work)


@pytest.mark.slow
def test_minilm_lora_step(pools, sync, split_work):
    sys.path.insert(0, str(ROOT / "tests" / "text"))
    import minilm
    from onnxtrain.tasks.text import Encoder, TextSession
    encoder, tokenizer = minilm.files()
    session = TextSession(Encoder(encoder, "wasm"), tokenizer, device="wasm")
    for k, (name, rows) in enumerate(TEXTS.items()):
        session.add_class(name)
        session.add_texts(rows, k)
    session.setup(mode="lora", rank=4, seed=1)
    session.step(4, 1e-3)
    check(Steps(session.training.module, session.training.optimizer), pools, sync, split_work)


def test_a_failing_record_stops_every_part(pools, sync, split_work):
    """A label out of range: softmax cross-entropy fails, on part 0, with the same result on every parts count,
    and no record after it runs on any part (every buffer as run_program leaves it)."""
    module, optimizer = trained(ort_cases.files("mlp_full_ce_adamw"))
    module(*ort_cases.batches("mlp_full_ce_adamw", 1)[0])
    optimizer.step()
    steps = Steps(module, optimizer)
    labels = next(x for x in steps.inputs if x.dtype == np.int64)
    labels[len(labels) // 2] = 10
    words = np.frombuffer(ctypes.string_at(steps.programs[0]["words"], 4 * steps.programs[0]["n"]), np.int32)
    start = steps.snapshot()
    for work in (SPLIT_WORK, 0):
        split_work(work)
        runs, results = {}, {}
        for parts in (1, *PARTS):
            run = one_thread if parts == 1 else threaded(pools[parts], sync)
            for _ in range(FAILING_RUNS):      # the parts leave the barrier before the failure in any order
                steps.restore(start)
                results.setdefault(parts, set()).add(run(steps.programs[0]))
            runs[parts] = steps.snapshot()
        assert len(set.union(*results.values())) == 1, results
        results = {parts: r.pop() for parts, r in results.items()}
        assert results[1] > 0
        failed = results[1] - 1
        record, at = 0, 0
        while record < failed:
            at += 2 + words[at + 1]
            record += 1
        assert words[at] == OPS["softmax_ce"]
        assert_same_bits(steps, runs, f"the failed run, split work {work}")
    steps.restore(start)
    labels[len(labels) // 2] = 0
    assert [threaded(pools[parts], sync)(steps.programs[0]) for parts in PARTS] == [0, 0]   # the block reused


def _program(records: list) -> np.ndarray:
    return np.array([w for r in records for w in (OPS[r[0]], len(r) - 1, *r[1:])], np.int32)


def test_many_tiny_runs(pools, sync, split_work):
    """2000 runs in a row of a program of tiny records, every one split (threshold 0) and every one solo, at 2 and
    3 parts with one sync block: each run's results as run_program's."""
    x = np.random.default_rng(2).standard_normal(40).astype(np.float32)
    y, z, w = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    words = _program([("relu", 0, 1, x.size), ("relu_grad", 0, 1, 2, x.size), ("copy", 2, 3, 4 * x.size),
                      ("relu", 3, 3, x.size)])
    table = (ctypes.c_void_p * 4)(*[a.ctypes.data for a in (x, y, z, w)])
    LIB.run_program(ctypes.c_void_p(words.ctypes.data), len(words), table)
    want = [a.copy() for a in (y, z, w)]
    for work in (0, SPLIT_WORK):
        split_work(work)
        for parts in PARTS:
            for _ in range(2000):
                y[:], z[:], w[:] = 7, 7, 7
                assert pools[parts].run(words.ctypes.data, len(words), ctypes.addressof(table), sync.ctypes.data) == 0
                assert all(np.array_equal(a, b) for a, b in zip((y, z, w), want))


def test_a_program_with_no_records_and_a_truncated_one(pools, sync):
    x = np.ones(4, np.float32)
    table = (ctypes.c_void_p * 1)(x.ctypes.data)
    empty = np.zeros(1, np.int32)
    truncated = np.array([OPS["relu"], 3, 0, 0, 4, OPS["relu"], 3, 0, 0], np.int32)
    for parts in PARTS:
        assert pools[parts].run(empty.ctypes.data, 0, ctypes.addressof(table), sync.ctypes.data) == 0
        assert pools[parts].run(truncated.ctypes.data, len(truncated), ctypes.addressof(table),
                                sync.ctypes.data) == 2
    assert LIB.run_program(ctypes.c_void_p(truncated.ctypes.data), len(truncated), table) == 2


def test_one_thread_is_run_program(sync):
    x = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    y = np.empty_like(x)
    words = _program([("relu", 0, 1, x.size)])
    table = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    with NativeThreads(1) as pool:
        assert pool.run(words.ctypes.data, len(words), ctypes.addressof(table), sync.ctypes.data) == 0
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    with pytest.raises(RuntimeError):
        pool.run(words.ctypes.data, len(words), ctypes.addressof(table), sync.ctypes.data)


def _bits(v: float) -> int:
    return int(np.float32(v).view(np.int32))


def test_the_split_rules_the_models_do_not_reach(pools, sync, split_work):
    """A program of the records the model programs above leave whole or do not have (copies, fills, the
    transcendental maps, clips, row sums, col2im, logic, where, strided copies, SGD, the finite count), each on
    buffers of its own, split at threshold 0 and at the default: every buffer as run_program leaves it."""
    rng = np.random.default_rng(4)
    n = 3000
    arrays, records = [], []

    def buf(a) -> int:
        arrays.append(np.ascontiguousarray(a))
        return len(arrays) - 1

    def floats(size, scale=2.0):
        return buf((rng.standard_normal(size) * scale).astype(np.float32))
    x, dy = floats(n), floats(n)
    records += [("copy", x, buf(np.zeros(n, np.float32)), 4 * n), ("fill", buf(np.zeros(n, np.uint8)), n, 7)]
    for op in ("sigmoid", "gelu"):
        records.append((op, x, buf(np.zeros(n, np.float32)), n))
    for op in ("sigmoid_grad", "gelu_grad"):
        records.append((op, dy, x, buf(np.zeros(n, np.float32)), n))
    records += [("clip", x, buf(np.zeros(n, np.float32)), n, _bits(-0.5), _bits(0.75)),
                ("powi", x, buf(np.zeros(n, np.float32)), n, 3),
                ("clip_bounds", x, buf(np.float32([-1])), buf(np.float32([np.nan])), buf(np.zeros(n, np.float32)), n),
                ("row_sums", floats(40 * 75), buf(np.zeros(40, np.float32)), 40, 75, _bits(0.0), _bits(-0.0))]
    planes, h, w, k = 6, 10, 10, 3
    records.append(("col2im", floats(planes * k * k * h * w), buf(np.zeros(planes * h * w, np.float32)), planes,
                    h, w, h, w, k, k, 1, 1, 1, 1, 1, 1))
    a, b = buf(rng.integers(0, 2, (8, 50), np.uint8)), buf(rng.integers(0, 2, (8, 50), np.uint8))
    records.append(("logical", a, b, buf(np.zeros((8, 50), np.uint8)), 0, 2, 8, 50, 50, 1, 50, 1))
    records.append(("where", a, floats(400), floats(50), buf(np.zeros(400, np.float32)), 4, 2, 8, 50, 50, 1, 50, 1,
                    0, 1))
    records.append(("copy_strided", floats(400), buf(np.zeros(400, np.float32)), 4, 2, 0, 0, 50, 8, 1, 50, 8, 1))
    sizes = [1000, 37]
    weights, grads = [floats(s) for s in sizes], [floats(s) for s in sizes]
    records.append(("sgd", buf(np.float32([0.1])), buf(np.ones(1, np.uint8)), *weights, *grads,
                    buf(np.zeros(1, np.uint8)), len(sizes), 1, *sizes))
    finite = rng.standard_normal(n).astype(np.float32)
    finite[rng.integers(0, n, 50)] = np.nan
    records.append(("nonfinite", buf(finite), buf(np.int32([3])), n))
    words = _program(records)
    table = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    start = [a.copy() for a in arrays]
    assert LIB.run_program(ctypes.c_void_p(words.ctypes.data), len(words), table) == 0
    want = [a.copy() for a in arrays]
    for work in (0, SPLIT_WORK):
        split_work(work)
        split = LIB.program_split_records(ctypes.c_void_p(words.ctypes.data), len(words), table, 3)
        assert split == len(records) if work == 0 else 0 < split < len(records)   # the default: the costly maps
        for parts in PARTS:
            for a, s in zip(arrays, start):
                np.copyto(a, s)
            assert pools[parts].run(words.ctypes.data, len(words), ctypes.addressof(table), sync.ctypes.data) == 0
            for i, (a, e) in enumerate(zip(arrays, want)):
                assert np.array_equal(a.view(np.uint8), e.view(np.uint8)), (work, parts, i)
