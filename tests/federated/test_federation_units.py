"""The federation's parts without Flower's processes: the guard in front of Flower's strategies (and of its
server-side DP wrapper), the page bridge's silence rule, rejoining as a new node, refusals, and the checks of an update."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
from flwr.app import ArrayRecord, Error, Message, MetricRecord, RecordDict
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg
from flwr.supercore.task_identity import TaskIdentity

from onnxtrain.federated.bridge_state import REJECTED, BridgeState, Gone, Refused
from onnxtrain.federated.checks import parse_metrics, vector_problem
from onnxtrain.federated.strategies import Guarded, make_strategy

SIZE = 5


@pytest.fixture(autouse=True)
def server_identity():
    """The identity flwr-serverapp gives its process (messages need a run id)."""
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 1
    yield


class Reports:
    """What the guard tells the federation server (begin and round), kept in a BridgeState as the server does."""

    def __init__(self):
        self.state = BridgeState(SIZE, None, log=lambda text: None)

    def begin(self, round_, nodes):
        self.state.begin_round(round_, nodes)

    def round(self, summary):
        self.state.end_round(json.loads(json.dumps(summary)))


def reply(node: int, vector=None, metrics=None, error: str = None) -> Message:
    instruction = Message(RecordDict(), dst_node_id=node, message_type="train")
    if error is not None:
        return Message(Error(code=0, reason=error), reply_to=instruction)
    return Message(RecordDict({"arrays": ArrayRecord([np.asarray(vector)]), "metrics": MetricRecord(metrics)}),
                   reply_to=instruction)


def vec(*values) -> np.ndarray:
    return np.array(values, np.float32)


def test_guard_leaves_out_bad_updates_with_reasons_and_averages_the_rest():
    reports = Reports()
    guard = Guarded(FedAvg(fraction_evaluate=0.0), SIZE, reports)
    guard.started[1] = time.monotonic()
    good_a, good_b = vec(1, 2, 3, 4, 5), vec(5, 4, 3, 2, 1)
    replies = [
        reply(11, good_a, {"num-examples": 30, "loss": 1.0, "accuracy": 0.5}),
        reply(12, good_b, {"num-examples": 10, "loss": 3.0}),  # no accuracy: only the common metrics are averaged
        reply(13, vec(1, np.nan, 3, np.inf, 5), {"num-examples": 10}),
        reply(14, vec(1, 2, 3, 4), {"num-examples": 10}),
        reply(15, good_a.astype(np.float64), {"num-examples": 10}),
        reply(16, good_a, {"loss": 1.0}),
        reply(17, good_a, {"num-examples": 0}),
        reply(18, error=f"RuntimeError: {REJECTED} page abc (slot 2): wrong size: the body has 16 bytes"),
        reply(19, error="RuntimeError: page abc (slot 3) went silent for more than 10 s: dropped"),
    ]
    arrays, metrics = guard.aggregate_train(1, replies)
    np.testing.assert_allclose(arrays.to_numpy_ndarrays()[0], (30 * good_a + 10 * good_b) / 40, rtol=1e-6)
    assert dict(metrics) == pytest.approx({"loss": 1.5})
    entry = reports.state.status()["history"][0]
    assert entry["results"] == 2 and entry["failures"] == 1
    assert entry["rejected"] == [
        "node 13 round 1: non-finite values: 2 of 5 parameters are NaN or infinite",
        "node 14 round 1: wrong size or type: float32[4] instead of float32[5]",
        "node 15 round 1: wrong size or type: float64[5] instead of float32[5]",
        "node 16 round 1: the metrics lack an integer 'num-examples'",
        "node 17 round 1: 'num-examples' must be > 0, got 0",
        "node 18 round 1: page abc (slot 2): wrong size: the body has 16 bytes"]


def test_guard_with_nothing_good_keeps_the_global_model():
    guard = Guarded(FedAvg(fraction_evaluate=0.0), SIZE)
    assert guard.aggregate_train(2, [reply(3, vec(np.nan, 0, 0, 0, 0), {"num-examples": 1}),
                                     reply(4, error="boom")]) == (None, None)


def test_dp_wrapper_sits_inside_the_guard_and_clips_each_update():
    strategy = make_strategy("fedavg", SIZE, 2, dp_noise=0.0, dp_clip=1.0)
    dp = strategy.inner
    assert isinstance(strategy, Guarded) and isinstance(dp, DifferentialPrivacyServerSideFixedClipping)
    assert type(dp.strategy) is FedAvg and dp.clipping_norm == 1.0 and dp.noise_multiplier == 0.0
    global_ = vec(1, 1, 1, 1, 1)
    dp.current_arrays = ArrayRecord([global_])  # what configure_train records
    far, near = global_ + vec(3, 4, 0, 0, 0), global_ + vec(0, 0, 0.1, 0, 0)
    replies = [reply(1, far, {"num-examples": 10}), reply(2, near, {"num-examples": 10}),
               reply(3, vec(1, 2), {"num-examples": 10}),  # would break the clipping; the guard drops it first
               reply(4, error="page went away")]  # Flower's DP wrapper skips a round with errors; the guard lets it on
    arrays, _ = strategy.aggregate_train(1, replies)
    clipped_far = global_ + vec(3, 4, 0, 0, 0) / 5  # norm 5 clipped to 1
    np.testing.assert_allclose(arrays.to_numpy_ndarrays()[0], (clipped_far + near) / 2, rtol=1e-6)


def test_strategies_by_name():
    assert type(make_strategy("fedprox", SIZE, 3, proximal_mu=0.25).inner).__name__ == "FedProx"
    assert make_strategy("fedprox", SIZE, 3, proximal_mu=0.25).inner.proximal_mu == 0.25
    adam = make_strategy("fedadam", SIZE, 3, server_learning_rate=0.05).inner
    assert type(adam).__name__ == "FedAdam" and adam.eta == 0.05 and adam.min_available_nodes == 3
    with pytest.raises(ValueError, match="unknown strategy 'krum'"):
        make_strategy("krum", SIZE, 3)


def test_checks_of_an_update():
    assert vector_problem([vec(1, 2, 3, 4, 5)], SIZE) is None
    assert vector_problem([vec(1, 2, 3, 4, 5)] * 2, SIZE) == "2 arrays instead of one parameter vector"
    assert parse_metrics('{"num-examples": 3, "loss": 0.5}') == ({"num-examples": 3, "loss": 0.5}, None)
    assert parse_metrics('{"num-examples": 3, "loss": NaN}')[1] == "metric 'loss' is not a finite number: nan"
    assert parse_metrics('[1]')[1] == "the metrics must be a JSON object, not list"
    assert parse_metrics("{")[1].startswith("the X-Metrics header is not JSON")
    assert parse_metrics(None)[1] == "the X-Metrics header is missing"


class Nodes:
    """A stand-in for the fleet bridge: node ids, and what reaches Flower (replies, failures, closed nodes)."""

    def __init__(self):
        self.opened, self.outcomes, self.closed = [], [], []

    def open(self):
        self.opened.append(100 + len(self.opened))
        return self.opened[-1]

    def close(self, node_id, why):
        self.closed.append((node_id, why))

    def reply(self, node_id, vector, metrics):
        self.outcomes.append((node_id, "result", vector, metrics))

    def fail(self, node_id, reason):
        self.outcomes.append((node_id, "failure", reason))


def bridge(page_timeout=0.5):
    nodes = Nodes()
    return BridgeState(SIZE, nodes, page_timeout=page_timeout, poll_hold=0.2, log=lambda text: None), nodes


def task_in_flight(state, client, round_):
    node = state.clients[client].node_id
    assert state.deliver(node, round_, vec(0, 0, 0, 0, 0).tobytes(), {"epochs": 1})
    task = None
    while task is None:
        task = state.next_task(client)
    return node, task


def test_a_silent_page_is_dropped_its_node_closed_and_it_joins_again_as_a_new_node():
    state, nodes = bridge(0.5)
    client = state.join()
    node, task = task_in_flight(state, client, 1)
    assert task.round == 1 and task.vector == vec(0, 0, 0, 0, 0).tobytes() and task.config == {"epochs": 1}
    t0 = time.monotonic()
    while not nodes.closed and time.monotonic() - t0 < 5:  # the page never answers nor polls again
        time.sleep(0.05)
    assert nodes.closed == [(node, f"page {client} (node {node}) went silent for more than 0.5 s: dropped")]
    assert time.monotonic() - t0 < 3
    with pytest.raises(Gone):
        state.next_task(client)
    again = state.join()
    assert again != client and state.clients[again].node_id != node and nodes.opened == [node, node + 1]
    assert not state.deliver(node, 2, vec(0, 0, 0, 0, 0).tobytes(), {})  # the old node has no page
    state.close()


def test_a_polling_page_stays_and_a_wrong_size_result_fails_the_task_with_the_reason():
    state, nodes = bridge(0.5)
    client = state.join()
    for _ in range(4):  # held polls are heartbeats: 0.8 s of them outlast the 0.5 s silence limit
        assert state.next_task(client) is None
    node, task = task_in_flight(state, client, 3)
    with pytest.raises(Refused, match="unknown task 'nope'"):
        state.submit_result(client, "nope", vec(1, 2, 3, 4, 5).tobytes(), '{"num-examples": 3}')
    with pytest.raises(Refused) as refused:
        state.submit_result(client, task.id, vec(1, 2, 3, 4).tobytes(), '{"num-examples": 3}')
    assert str(refused.value) == "wrong size: the body has 16 bytes, a parameter vector has 20 (5 float32 values)"
    assert nodes.outcomes == [(node, "failure", f"{REJECTED} page {client} (node {node}): {refused.value}")]
    state.close()


def test_a_non_finite_update_from_a_page_is_refused_at_once_with_the_reason():
    """The server answers a NaN or infinite update with an error at once (bridge_http: 400 with the reason, so the
    page's onRound says "rejected"), and the node's reply is a rejection with it."""
    state, nodes = bridge(5)
    client = state.join()
    node, task = task_in_flight(state, client, 1)
    with pytest.raises(Refused) as refused:
        state.submit_result(client, task.id, vec(1, np.nan, 3, np.inf, 5).tobytes(), '{"num-examples": 3}')
    assert str(refused.value) == "non-finite values: 2 of 5 parameters are NaN or infinite"
    assert nodes.outcomes == [(node, "failure", f"{REJECTED} page {client} (node {node}): {refused.value}")]
    state.close()


def test_a_result_is_handed_to_the_node_and_the_end_of_the_run_closes_the_api():
    state, nodes = bridge(5)
    client = state.join()
    node, task = task_in_flight(state, client, 1)
    state.submit_result(client, task.id, vec(1, 2, 3, 4, 5).tobytes(), '{"num-examples": 3, "loss": 0.25}')
    assert nodes.outcomes == [(node, "result", vec(1, 2, 3, 4, 5).tobytes(), {"num-examples": 3, "loss": 0.25})]
    state.finish(True)
    with pytest.raises(Gone, match="the run has ended"):
        state.next_task(client)
    with pytest.raises(Refused, match="run has ended"):
        state.join()
    assert state.status()["phase"] == "done"
    state.close()
