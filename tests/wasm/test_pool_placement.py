"""The wasm provider placed in the kernel pool's memory (wasm/pool.py, wasm/pool_runner.py), on CPython's stand-in
for the page's pool: native threads running run_program_threads on one block of memory.  Every step is the
provider's own bits in its usual placement (the same records, one thread, the state fed in place), and the state
moves between the pool and the host arrays only when Python reads or writes it."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import ort_cases
from helpers import WASM, assert_bits
from onnxtrain import api
from onnxtrain.api import _internal
from onnxtrain.runtime import RunError
from onnxtrain.wasm.errors import WasmMemoryError
from onnxtrain.wasm.pool import NativeMemory, PoolDevice
from onnxtrain.wasm.provider import WasmPoolProvider, open_provider

CASES = ["mlp_full_ce_adamw", "cnn_full_ce_adamw", "mlp_ce_sgd", "mlp_bce_adamw", "frozen_ce_adamw",
         "mlp_cesum_ignore_sgd", "mlp_ce_adamw_wd_clip"]


class Options:
    def __init__(self, threads: int):
        self.intra_op_num_threads = threads


def trainer(name: str, threads: int):
    files = ort_cases.files(name)
    state = api.CheckpointState.load_checkpoint(files["checkpoint"])
    module = api.Module(files["training"], state, files["eval"], device="wasm",
                        session_options=Options(threads) if threads else None)
    optimizer = api.Optimizer(files["optimizer"], module)
    return module, optimizer


def steps(module, optimizer, batches) -> list:
    out = []
    for batch in batches:
        out.append(np.asarray(module(*batch)).copy())
        optimizer.step()
        module.lazy_reset_grad()
        out.append(module.get_contiguous_parameters(True).copy())
    return out


def state_arrays(module) -> list:
    return [a.copy() for e in module._state._entries.values() for a in (e.data, e.grad) if a is not None]


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("name", CASES)
def test_steps_in_the_pool_are_the_providers_bits(name, threads):
    batches = ort_cases.batches(name, 4)
    module, optimizer = trainer(name, threads)
    assert isinstance(module._provider, WasmPoolProvider) and module._provider.device.memory.threads == threads
    got = steps(module, optimizer, batches)
    want_module, want_optimizer = trainer(name, 0)
    assert want_module._provider is WASM
    want = steps(want_module, want_optimizer, batches)
    assert module._train.fallbacks == want_module._train.fallbacks   # host nodes between the executor's calls
    assert optimizer._session.fallbacks == want_optimizer._session.fallbacks
    for i, (a, b) in enumerate(zip(got, want)):
        assert_bits(a, b, f"output {i}")
    for a, b in zip(state_arrays(module), state_arrays(want_module)):
        assert_bits(a, b, "the state's arrays")
    module.eval()
    want_module.eval()
    assert_bits(np.asarray(module(*batches[0])), np.asarray(want_module(*batches[0])), "eval")


def test_the_state_stays_in_the_pool_until_read():
    name = "mlp_full_ce_adamw"
    module, optimizer = trainer(name, 2)
    batches = ort_cases.batches(name, 2)
    entry = next(iter(module._state._entries.values()))
    host = entry.data
    module(*batches[0])
    optimizer.step()
    residency = module._residency
    stale = [r for _, r in residency._mirrors.values() if r.device_newer]
    assert stale, "a step leaves its residents newer than the host arrays"
    before = host.copy()
    params = module.get_contiguous_parameters(True)
    assert not any(r.device_newer for _, r in residency._mirrors.values())
    assert not np.array_equal(host, before), "reading the parameters brought the step's update to the host"
    assert_bits(params[:host.size].reshape(host.shape), host, "the contiguous parameters")


def test_checkpoints_written_and_loaded_between_steps(tmp_path):
    name = "mlp_full_ce_adamw"
    batches = ort_cases.batches(name, 6)
    module, optimizer = trainer(name, 2)
    steps(module, optimizer, batches[:3])
    api.CheckpointState.save_checkpoint(module._state, tmp_path / "ckpt", include_optimizer_state=True)
    after = steps(module, optimizer, batches[3:])
    files = ort_cases.files(name)
    state = api.CheckpointState.load_checkpoint(tmp_path / "ckpt")
    resumed = api.Module(files["training"], state, files["eval"], device="wasm", session_options=Options(2))
    resumed_optimizer = api.Optimizer(files["optimizer"], resumed)
    again = steps(resumed, resumed_optimizer, batches[3:])
    for a, b in zip(after, again):
        assert_bits(a, b, "a step after resuming")


def test_host_writes_reach_the_pool_before_the_next_step():
    name = "mlp_full_ce_adamw"
    batches = ort_cases.batches(name, 3)
    runs = []
    for threads in (2, 0):
        module, optimizer = trainer(name, threads)
        steps(module, optimizer, batches[:1])
        params = module.get_contiguous_parameters(True)
        module.copy_buffer_to_parameters(params * np.float32(0.5), True)
        optimizer.set_learning_rate(0.01)
        runs.append(steps(module, optimizer, batches[1:]))
    for a, b in zip(*runs):
        assert_bits(a, b, "a step after the host changed the parameters and the learning rate")


def test_a_bad_label_names_the_node_and_the_session_goes_on():
    name = "mlp_full_ce_adamw"
    module, optimizer = trainer(name, 2)
    (x, labels), good = ort_cases.batches(name, 2)
    module(*good)
    optimizer.step()
    before = state_arrays(module)
    labels = labels.copy()
    labels[3] = 10
    with pytest.raises(RunError, match=r"SoftmaxCrossEntropyLoss node .*label 10 is outside \[0, 10\)"):
        module(x, labels)
    for a, b in zip(state_arrays(module), before):
        assert_bits(a, b, "the state after the failed step")
    assert np.isfinite(module(*good))


@pytest.mark.parametrize("threads", [0, 2])
def test_a_non_finite_step_is_undone_by_the_guard(threads):
    from onnxtrain.train.guard import NonFiniteStepError, StepGuard
    name = "mlp_full_ce_adamw"
    module, optimizer = trainer(name, threads)
    x, labels = ort_cases.batches(name, 1)[0]
    guard = StepGuard(module, optimizer)
    guard.step([x, labels])
    params = module.get_contiguous_parameters(True).copy()
    moments = [a.copy() for group in _internal.moments(optimizer).values() for a in group.values()]
    bad = x.copy()
    bad[0, 0] = np.inf
    with pytest.raises(NonFiniteStepError, match="step 2 was undone"):
        guard.step([bad, labels])
    assert_bits(module.get_contiguous_parameters(True), params, "the parameters after the undone step")
    for a, b in zip([a for group in _internal.moments(optimizer).values() for a in group.values()], moments):
        assert_bits(a, b, "the moments after the undone step")
    assert np.isfinite(guard.step([x, labels]))


def test_buffers_go_back_to_the_pool_when_sessions_go():
    device = open_provider(2).device
    name = "cnn_full_ce_adamw"
    module, optimizer = trainer(name, 2)
    steps(module, optimizer, ort_cases.batches(name, 1))
    gc.collect()
    held = device.bytes_held
    for _ in range(3):
        module, optimizer = trainer(name, 2)
        steps(module, optimizer, ort_cases.batches(name, 1))
    del module, optimizer
    gc.collect()
    assert device.bytes_held <= held


def test_a_program_too_big_for_the_pool_names_what_and_leaves_it_usable():
    device = PoolDevice(NativeMemory(2, capacity=1 << 20))
    small = device.buffer(1000, "a tensor")
    with pytest.raises(WasmMemoryError, match=r"cannot hold the weights \(2000000 bytes"):
        device.buffer(2_000_000, "the weights")
    device.release(small)
    assert device.bytes_held == 0
    assert device.buffer((1 << 20) - 64, "a tensor").offset == 0
