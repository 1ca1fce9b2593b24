"""The Trainer's epoch loop against the same loop written on onnxruntime-training 1.19.2, and its resumes."""
import json

import numpy as np
import pytest

import ort_cases as oc
from onnxtrain import api
from onnxtrain.train import DataError, NonFiniteStepError, Trainer
from onnxtrain.train.resume import PROPERTY

RTOL, ATOL = 1e-5, 1e-6  # float32 parity with ORT, as in test_parity_training


def build(lib, name="mlp_ce_sgd"):
    f = oc.files(name)
    state = lib.CheckpointState.load_checkpoint(str(f["checkpoint"]))
    module = lib.Module(str(f["training"]), state, str(f["eval"]))
    return state, module, lib.Optimizer(str(f["optimizer"]), module)


def rows(name="mlp_ce_sgd", batches=3, seed=0):
    parts = oc.batches(name, batches, seed)
    return [np.concatenate([b[i] for b in parts]) for i in range(len(parts[0]))]


def ort_loop(name, data, validation, *, batch_size, epochs, lr, warmup, seed):
    """The loop a user writes on onnxruntime-training: seeded shuffles, LinearLRScheduler, eval each epoch."""
    ort = oc.ort_api()
    state, module, optimizer = build(ort, name)
    n = len(data[0])
    per_epoch = -(-n // batch_size)
    total = epochs * per_epoch
    # ORT 1.19.2's wrapper swaps the two counts (see api/lr_scheduler.py)
    scheduler = ort.LinearLRScheduler(optimizer, total, int(round(warmup * total)), lr)
    rng = np.random.default_rng(seed)
    losses, rates, validation_losses = [], [], []
    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            batch = [a[order[start:start + batch_size]] for a in data]
            rates.append(optimizer.get_learning_rate())
            losses.append(float(module(*batch)))
            optimizer.step()
            scheduler.step()
            module.lazy_reset_grad()
        module.eval()
        validation_losses.append(float(module(*validation)))
        module.train()
    return losses, rates, validation_losses, {n: np.array(p.data) for n, p in state.parameters}


def test_the_linear_schedule_over_shuffled_epochs_matches_an_onnxruntime_loop():
    data, validation = rows(batches=3), rows(batches=1, seed=1)
    settings = dict(batch_size=10, epochs=3, lr=0.05, warmup=0.25, seed=7)  # 24 rows: batches of 10, 10, 4
    losses, rates, validation_losses, params = ort_loop("mlp_ce_sgd", data, validation, **settings)
    state, module, optimizer = build(api)
    trainer = Trainer(module, optimizer, {"input": data[0], "labels": data[1]}, validation=validation,
                      batch_size=10, epochs=3, learning_rate=0.05, schedule="linear", warmup=0.25, seed=7)
    records = []
    ended = trainer.run(on_progress=records.append)
    assert [r["step"] for r in records] == list(range(1, 10)) and records[-1]["done"] and trainer.done
    assert [r["examples"] for r in records[:3]] == [10, 10, 4] and records[0]["steps_per_epoch"] == 3
    assert [r["epoch"] for r in ended] == [1, 2, 3] and [h["epoch"] for h in trainer.history] == [1, 2, 3]
    np.testing.assert_allclose([r["learning_rate"] for r in records], rates, rtol=1e-6)
    assert rates[0] == 0 and rates[2] == pytest.approx(0.05) and rates[-1] == pytest.approx(0.05 / 7)
    np.testing.assert_allclose([r["loss"] for r in records], losses, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose([r["validation_loss"] for r in ended], validation_losses, rtol=RTOL, atol=ATOL)
    for name, p in state.parameters:
        np.testing.assert_allclose(p.data, params[name], rtol=RTOL, atol=ATOL, err_msg=name)


def run_records(trainer, steps):
    return [trainer.step() for _ in range(steps)]


def test_a_run_resumed_mid_epoch_takes_exactly_the_steps_it_would_have_taken():
    data, validation = rows(batches=3), rows(batches=1, seed=1)
    settings = dict(validation=validation, batch_size=5, epochs=3, learning_rate=0.1, schedule="linear",
                    warmup=0.1, seed=3, keep_best=True)
    state_a, module_a, optimizer_a = build(api, "mlp_ce_adamw")
    a = Trainer(module_a, optimizer_a, data, **settings)
    run_records(a, 7)  # 5 steps an epoch: two steps into the second
    saved = a.checkpoint({"name": "run"})
    rest_a = run_records(a, 8)
    assert rest_a[-1]["done"]

    state_b, module_b, optimizer_b = build(api, "mlp_ce_adamw")
    b = Trainer(module_b, optimizer_b, data, **settings)
    assert b.restore(saved) == 1 and b.steps == 7 and b.position == 10
    rest_b = run_records(b, 8)
    for ra, rb in zip(rest_a, rest_b):
        assert {k: v for k, v in ra.items() if k != "metrics"} == {k: v for k, v in rb.items() if k != "metrics"}
    for (name, pa), (_, pb) in zip(state_a.parameters, state_b.parameters):
        np.testing.assert_array_equal(pa.data, pb.data, err_msg=name)
    assert state_b.properties["name"] == "run" and b.best.best_epoch == a.best.best_epoch


def test_a_checkpoint_at_an_epoch_end_resumes_with_the_next_epochs_shuffle():
    data = rows(batches=2)
    state_a, module_a, optimizer_a = build(api)
    a = Trainer(module_a, optimizer_a, data, batch_size=4, epochs=2, learning_rate=0.1, seed=11)
    run_records(a, 4)
    saved = a.checkpoint()
    assert json.loads(api.CheckpointState.load_checkpoint(saved).properties[PROPERTY])["position"] == 0
    rest_a = [r["loss"] for r in run_records(a, 4)]
    _, module_b, optimizer_b = build(api)
    b = Trainer(module_b, optimizer_b, data, batch_size=4, epochs=2, learning_rate=0.1, seed=99)
    b.restore(saved)
    assert [r["loss"] for r in run_records(b, 4)] == rest_a and b.done


def test_should_stop_pauses_the_run_and_it_goes_on_later():
    data = rows(batches=2)
    _, module, optimizer = build(api)
    trainer = Trainer(module, optimizer, data, batch_size=4, epochs=2, learning_rate=0.1)
    seen = []
    trainer.run(on_progress=seen.append, should_stop=lambda: len(seen) >= 3)
    assert len(seen) == 3 and not trainer.done and trainer.position == 12
    trainer.run(on_progress=seen.append)
    assert [r["step"] for r in seen] == list(range(1, 9)) and trainer.done


def test_metrics_early_stopping_and_the_best_epoch():
    data = rows(batches=1)
    validation = rows(batches=1, seed=5)  # random labels: training on 8 rows overfits, validation gets worse
    state, module, optimizer = build(api, "mlp_ce_adamw")
    calls = []

    def evaluate(trainer):
        calls.append(trainer.epoch)
        return {"epoch_seen": trainer.epoch}
    trainer = Trainer(module, optimizer, data, validation=validation, batch_size=8, epochs=200, learning_rate=0.05,
                      patience=3, evaluate=evaluate)
    ended = trainer.run()
    assert trainer.done and trainer.epoch < 200 and ended[-1]["best"]["stop"]
    assert calls == list(range(1, trainer.epoch + 1)) and ended[-1]["metrics"] == {"epoch_seen": trainer.epoch}
    best = trainer.best.best_epoch
    assert trainer.epoch - best == 3
    assert min(r["validation_loss"] for r in ended) == ended[best - 1]["validation_loss"]
    assert trainer.use_best() == best
    assert trainer.validation_loss() == pytest.approx(ended[best - 1]["validation_loss"], rel=1e-6)
    kept = api.CheckpointState.load_checkpoint(trainer.best_checkpoint())
    assert kept.properties["epoch"] == best
    for name, p in kept.parameters:
        np.testing.assert_array_equal(p.data, state.parameters[name].data, err_msg=name)


def test_validation_as_a_fraction_is_a_seeded_split():
    data = rows(batches=4)
    _, module, optimizer = build(api)
    trainer = Trainer(module, optimizer, data, validation=0.25, seed=2)
    assert len(trainer.train_data[0]) == 24 and len(trainer.validation_data[0]) == 8
    order = np.random.default_rng(2).permutation(32)
    np.testing.assert_array_equal(trainer.validation_data[0], data[0][order[:8]])


def state_of(trainer, state):
    return ({n: p.data.copy() for n, p in state.parameters}, trainer.epoch, trainer.steps, trainer.position,
            trainer.rng.bit_generator.state, trainer.optimizer.get_learning_rate(), trainer.optimizer._group.step)


def assert_same_state(a, b):
    for (name, x), y in zip(a[0].items(), b[0].values()):
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a[1:] == b[1:]


def test_out_of_memory_asks_for_a_smaller_batch_and_changes_nothing(monkeypatch):
    data = rows(batches=2)
    state, module, optimizer = build(api)
    trainer = Trainer(module, optimizer, data, batch_size=4, epochs=2, learning_rate=0.1, schedule="linear")
    trainer.step()
    before = state_of(trainer, state)

    def fail(*args, **kwargs):
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.")
    monkeypatch.setattr(trainer.guard, "step", fail)
    with pytest.raises(MemoryError, match="ran out of memory training a batch of 4 rows: choose a smaller batch size"):
        trainer.step()
    assert_same_state(before, state_of(trainer, state))
    monkeypatch.undo()
    assert trainer.step()["step"] == 2


def test_a_non_finite_step_is_undone():
    data = rows(batches=1)
    data[0] = data[0] * 1e30
    state, module, optimizer = build(api)
    trainer = Trainer(module, optimizer, data, batch_size=8, learning_rate=1e30)
    before = state_of(trainer, state)
    with pytest.raises(NonFiniteStepError, match="step 1 \\(epoch 1\\) was undone"):
        trainer.step()
    assert_same_state(before, state_of(trainer, state))


def test_bad_settings_and_data_are_named():
    data = rows(batches=1)
    _, module, optimizer = build(api)
    with pytest.raises(ValueError, match="schedule must be one of \\['constant', 'linear'\\], got 'cosine'"):
        Trainer(module, optimizer, data, schedule="cosine")
    with pytest.raises(ValueError, match="the linear schedule needs a number of epochs"):
        Trainer(module, optimizer, data, schedule="linear", epochs=None)
    with pytest.raises(ValueError, match="epochs must be a whole number >= 1, got 0"):
        Trainer(module, optimizer, data, epochs=0)
    with pytest.raises(DataError, match="the batch size must be a whole number >= 1, got 0"):
        Trainer(module, optimizer, data, batch_size=0)
    with pytest.raises(DataError, match=r"needs arrays named \['input', 'labels'\]; missing \['labels'\]; "
                                        r"unknown \['label'\]"):
        Trainer(module, optimizer, {"input": data[0], "label": data[1]})
    with pytest.raises(DataError, match="the validation data arrays have different numbers of rows"):
        Trainer(module, optimizer, data, validation=[data[0], data[1][:3]])
    with pytest.raises(ValueError, match="run\\(\\) needs a number of epochs"):
        Trainer(module, optimizer, data, epochs=None).run()


def test_a_corrupt_trainer_property_is_named_and_changes_nothing():
    data = rows(batches=1)
    state, module, optimizer = build(api)
    trainer = Trainer(module, optimizer, data, batch_size=4, epochs=2, learning_rate=0.1)
    trainer.step()
    good = trainer.checkpoint()
    for value, why in ((json.dumps({"steps": 1, "position": 50, "shuffle": None}), "50 rows into an epoch"),
                       (json.dumps({"steps": -1, "position": 0}), "'steps' must be an integer >= 0"),
                       (json.dumps({"steps": 1, "position": 4, "shuffle": {"bit_generator": "nope"}}),
                        "'shuffle' is not a generator state"),
                       ("[1]", "expected a JSON object")):
        loaded = api.CheckpointState.load_checkpoint(good)
        loaded.properties[PROPERTY] = value
        bad = api.CheckpointState.save_checkpoint(loaded, None, include_optimizer_state=True)
        before = state_of(trainer, state)
        with pytest.raises(ValueError, match=f"property '{PROPERTY}' is corrupt: .*{why}"):
            trainer.restore(bad)
        assert_same_state(before, state_of(trainer, state))


def test_configure_changes_settings_between_calls_and_checks_them_all_first():
    data = rows(batches=2)
    _, module, optimizer = build(api)
    trainer = Trainer(module, optimizer, data, batch_size=4, epochs=1, learning_rate=0.1)
    trainer.run()
    assert trainer.done and trainer.epoch == 1
    with pytest.raises(ValueError, match="the linear schedule needs a number of epochs"):
        trainer.configure(epochs=None, schedule="linear", batch_size=8)
    with pytest.raises(TypeError, match="the trainer has no setting 'lr'"):
        trainer.configure(lr=0.5)
    assert (trainer.batch_size, trainer.epochs, trainer.schedule) == (4, 1, "constant")
    trainer.configure(epochs=3, schedule="linear", learning_rate=0.2, patience=2)
    assert not trainer.done and trainer.best.patience == 2
    records = []
    trainer.run(on_progress=records.append)
    assert trainer.epoch == 3 and [r["step"] for r in records] == list(range(5, 13))
    # the linear schedule counts the run's steps: 4 done, 12 in all
    assert [r["learning_rate"] for r in records] == pytest.approx([0.2 * (12 - s) / 12 for s in range(4, 12)])
    trainer.configure(epochs=4, batch_size=8)
    assert [r["examples"] for r in run_records(trainer, 2)] == [8, 8] and trainer.done
