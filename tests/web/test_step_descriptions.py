"""The description of a session's step that lets the engine run it without Python (onnxtrain.web.fast_steps),
used here as web/lib/fast_steps.mjs uses it, through ctypes on the native build: the steps it runs are bit for
bit the ones Python runs, and Python calls between them see the state of the last step."""
import ctypes
import json
import os

import numpy as np
import pytest

import ort_cases as oc
from onnxtrain.ops import simd
from onnxtrain.wasm.provider import open_provider
from onnxtrain.web.sessions import Registry

pytestmark = pytest.mark.skipif(not simd.available(), reason="the wasm provider runs on the native build")
CASE = "mlp_ce_adamw"
THREADS = 2


@pytest.fixture(autouse=True, params=["library", "pool"])
def placement(request, monkeypatch):
    """Each test in both placements: the library's own memory, and the kernel pool's (its stand-in's) memory on
    THREADS threads, where the description's addresses and programs lie in the pool."""
    monkeypatch.setenv("ONNXTRAIN_THREADS", str(THREADS) if request.param == "pool" else "0")
    return request.param
ARRAYS = {"float32": np.float32, "int64": np.int64}


class Engine:
    """fast_steps.mjs's FastSteps.answer, in Python: feeds written at the described addresses, the deferred
    optimizer step and reset, the train program, the outputs read back; None where the engine asks Python."""

    def __init__(self, registry: Registry):
        self.registry = registry
        self.described = {}
        self.steps = 0

    def call(self, method, handle, args):
        answered = self.fast(method, handle, args)
        if answered is not None:
            return answered
        self.described.pop(handle, None)
        result = self.registry.call(method, handle, args)
        steps = ("run_train_step", "run_eval_step")
        if method in steps or (method == "deferred_then" and args[1] in steps):
            text = self.registry.fast_step(handle)
            if text is not None:
                self.described[handle] = json.loads(text)
        return result

    def fast(self, method, handle, args):
        step = self.described.get(handle)
        if step is None:
            return None
        if method == "deferred_then" and args[1] in ("run_train_step", "run_eval_step"):
            deferred, target, (feeds, fetches) = args
        elif method in ("run_train_step", "run_eval_step"):
            deferred, target, (feeds, fetches) = [], method, args
        else:
            return None
        part = step["train"] if target == "run_train_step" else step["eval"]
        if part is None or fetches is not None:
            return None
        if sorted(feeds) != sorted(i["name"] for i in part["inputs"]) or any(
                list(feeds[i["name"]].shape) != i["dims"] for i in part["inputs"]):
            return None
        counters = np.ctypeslib.as_array((ctypes.c_int64 * 2).from_address(step["counters"]))
        for item in part["inputs"]:
            data = np.ascontiguousarray(feeds[item["name"]], ARRAYS[item["type"]])
            ctypes.memmove(item["address"], data.ctypes.data, item["nbytes"])
        for deferred_method in deferred:
            if deferred_method == "lazy_reset_grad":
                counters[1] = 0
                continue
            ctypes.c_int64.from_address(step["step"]).value = int(counters[0]) + 1
            assert self.run(step["optimizer"]) == 0
            assert bool(step.get("pool")) == (os.environ["ONNXTRAIN_THREADS"] != "0")
            if step["updated"] is True or (step["updated"] not in (False, True)
                                           and ctypes.c_uint8.from_address(step["updated"]).value):
                counters[0] += 1
        if part is step["train"]:
            ctypes.c_uint8.from_address(step["overwrite"]).value = 0 if counters[1] else 1
        if self.run(part["program"]):
            return self.registry.call(target, handle, [feeds, fetches])
        if part is step["train"]:
            counters[1] = 1
        self.steps += 1
        return {o["name"]: {"type": o["type"], "dims": o["dims"], "data": ctypes.string_at(o["address"], o["nbytes"])}
                for o in part["outputs"]}

    def run(self, program) -> int:
        if program.get("pool"):   # the kernel pool's stand-in (onnxtrain.wasm.pool.NativeMemory)
            return open_provider(THREADS).device.memory.run_at(program["words"], program["n"], program["table"],
                                                               program["sync"])
        return simd._lib.run_program(ctypes.c_void_p(program["words"]), program["n"],
                                     ctypes.c_void_p(program["table"]))


def session(engine):
    f = oc.files(CASE)
    created = engine.call("create", None, [f["checkpoint"].read_bytes(), f["training"].read_bytes(),
                                           f["eval"].read_bytes(), f["optimizer"].read_bytes(), None])
    return created["handle"], created["trainingInputNames"], created["trainingOutputNames"]


def loop(engine, handle, names, batches, deferred=False) -> list:
    """onnxruntime-web's loop as the library sends it: each step's optimizer step and reset ride with the next."""
    losses = []
    for batch in batches:
        feeds = dict(zip(names, batch))
        if deferred:
            out = engine.call("deferred_then", handle, [["run_optimizer_step", "lazy_reset_grad"], "run_train_step",
                                                        [feeds, None]])
        else:
            out = engine.call("run_train_step", handle, [feeds, None])
        losses.append(np.frombuffer(out[next(iter(out))]["data"], np.float32)[0])
        deferred = True
    return losses


def test_steps_without_python_are_pythons_bit_for_bit():
    batches = oc.batches(CASE, 8)
    fast = Engine(Registry())
    handle, names, _ = session(fast)
    got = loop(fast, handle, names, batches)
    params = fast.call("deferred_then", handle, [["run_optimizer_step", "lazy_reset_grad"],
                                                 "get_contiguous_parameters", [True]])
    assert fast.steps == 6   # the first step has no optimizer program, the second compiles it
    slow = Registry()
    handle2, names2, _ = session(Engine(slow))
    want = []
    for i, batch in enumerate(batches):
        feeds = dict(zip(names2, batch))
        steps = [] if i == 0 else ["run_optimizer_step", "lazy_reset_grad"]
        out = slow.call("deferred_then", handle2, [steps, "run_train_step", [feeds, None]])
        want.append(np.frombuffer(out[next(iter(out))]["data"], np.float32)[0])
    expected = slow.call("deferred_then", handle2, [["run_optimizer_step", "lazy_reset_grad"],
                                                    "get_contiguous_parameters", [True]])
    assert np.array_equal(got, want)
    assert params["data"] == expected["data"]
    assert slow.sessions[handle2].optimizer._group.step == fast.registry.sessions[handle].optimizer._group.step == 8


def test_python_calls_between_fast_steps_take_the_counters_back():
    batches = oc.batches(CASE, 9, seed=1)
    fast = Engine(Registry())
    handle, names, _ = session(fast)
    loop(fast, handle, names, batches[:4])
    session_ = fast.registry.sessions[handle]
    fast.call("set_learning_rate", handle, [0.03125])       # the deferred optimizer step of step 4 is still due
    assert session_.optimizer._group.step == 3 and session_.module._accumulate
    loop(fast, handle, names, batches[4:], deferred=True)
    assert fast.steps >= 4
    saved = fast.call("deferred_then", handle, [["run_optimizer_step", "lazy_reset_grad"], "save_checkpoint", []])
    assert session_.optimizer._group.step == 9 and not session_.module._accumulate

    from onnxtrain import api
    f = oc.files(CASE)
    module = api.Module(f["training"], api.CheckpointState.load_checkpoint(f["checkpoint"]), f["eval"])
    optimizer = api.Optimizer(f["optimizer"], module)
    for i, batch in enumerate(batches):
        module(*batch)
        if i == 3:   # as in the engine: after the fourth train step, before its optimizer step
            optimizer.set_learning_rate(0.03125)
        optimizer.step()
        module.lazy_reset_grad()
    loaded = dict(api.CheckpointState.load_checkpoint(saved).parameters)
    for name, parameter in module._state.parameters:
        assert np.array_equal(loaded[name].data, parameter.data), name


def test_a_failed_fast_step_is_pythons_error_and_nothing_is_counted_twice():
    batches = oc.batches(CASE, 4, seed=2)
    fast = Engine(Registry())
    handle, names, _ = session(fast)
    loop(fast, handle, names, batches[:3])
    bad = dict(zip(names, batches[3]))
    bad[names[1]] = bad[names[1]].copy()
    bad[names[1]][0] = 99
    with pytest.raises(Exception, match="label 99 is outside"):
        fast.call("deferred_then", handle, [["run_optimizer_step", "lazy_reset_grad"], "run_train_step",
                                            [bad, None]])
    state = fast.registry.sessions[handle]
    assert state.optimizer._group.step == 3        # the deferred step ran once, in the engine
    out = fast.call("run_train_step", handle, [dict(zip(names, batches[0])), None])
    assert np.isfinite(np.frombuffer(out[next(iter(out))]["data"], np.float32)[0])


def test_other_shapes_are_pythons_then_the_engines_again():
    batches = oc.batches(CASE, 3, seed=3)
    half = [[a[: len(a) // 2] for a in b] for b in oc.batches(CASE, 3, seed=4)]
    fast = Engine(Registry())
    handle, names, _ = session(fast)
    loop(fast, handle, names, batches)
    before = fast.steps
    loop(fast, handle, names, half, deferred=True)
    # the first half batch compiles its program (Python), and the engine answers the two after it
    assert fast.steps - before == 2


def test_eval_steps_and_a_loaded_checkpoint_between_fast_steps():
    batches = oc.batches(CASE, 8, seed=5)
    fast = Engine(Registry())
    handle, names, _ = session(fast)
    loop(fast, handle, names, batches[:3])
    saved = fast.call("deferred_then", handle, [["run_optimizer_step", "lazy_reset_grad"], "save_checkpoint", []])
    evals = [fast.call("run_eval_step", handle, [dict(zip(names, b)), None]) for b in batches[:3]]
    before = fast.steps
    evals += [fast.call("run_eval_step", handle, [dict(zip(names, b)), None]) for b in batches[:3]]
    assert fast.steps - before == 3      # the first eval step described the eval program: these are the engine's
    assert [e[next(iter(e))]["data"] for e in evals[:3]] == [e[next(iter(e))]["data"] for e in evals[3:]]
    loop(fast, handle, names, batches[3:6])
    fast.call("deferred_then", handle, [["run_optimizer_step", "lazy_reset_grad"], "load_checkpoint", [saved]])
    again = loop(fast, handle, names, batches[3:6])
    first = Engine(Registry())
    handle2, names2, _ = session(first)
    want = loop(first, handle2, names2, batches[:6])[3:]
    assert np.array_equal(again, want)

    from onnxtrain import api
    f = oc.files(CASE)
    module = api.Module(f["training"], api.CheckpointState.load_checkpoint(f["checkpoint"]), f["eval"])
    optimizer = api.Optimizer(f["optimizer"], module)
    for batch in batches[:3]:
        module(*batch)
        optimizer.step()
        module.lazy_reset_grad()
    module.eval()
    for batch, got in zip(batches[:3], evals[:3]):
        assert got[next(iter(got))]["data"] == np.asarray(module(*batch), np.float32).tobytes()


def test_a_train_run_between_fast_steps_starts_from_their_state_and_counts_on():
    batches = oc.batches(CASE, 6, seed=6)
    fast = Engine(Registry())
    handle, names, _ = session(fast)
    loop(fast, handle, names, batches[:4])
    x, y = [np.concatenate(a) for a in zip(*batches)]
    fast.call("deferred_then", handle, [["run_optimizer_step", "lazy_reset_grad"], "train_begin",
                                        [{names[0]: x, names[1]: y}, {"epochs": 1, "batchSize": 8, "shuffle": False}]])
    state = fast.registry.sessions[handle]
    assert state.optimizer._group.step == 4 and not state.module._accumulate
    while not fast.call("train_continue", handle, [1000])["done"]:
        pass
    fast.call("train_end", handle, [True])
    steps = len(x) // 8 + (len(x) % 8 > 0)
    assert state.optimizer._group.step == 4 + steps
    before = fast.steps
    loop(fast, handle, names, batches[:3])
    assert fast.steps - before == 2   # the run compiled the optimizer's program: the first step describes both
    fast.call("get_learning_rate", handle, [])                         # Python takes the counters back
    assert state.optimizer._group.step == 4 + steps + 2 and state.module._accumulate
