"""Flower's stock strategies (FedAvg, FedProx, FedAdam), optionally wrapped by its server-side differential
privacy with fixed clipping, behind a guard that rejects bad updates with a logged reason."""
from __future__ import annotations

import time
from logging import INFO, WARNING

from flwr.app import MetricRecord, RecordDict
from flwr.common.logger import log
from flwr.serverapp.strategy import (DifferentialPrivacyServerSideFixedClipping, FedAdam, FedAvg, FedProx,
                                     Strategy)

from .bridge_state import REJECTED
from .checks import metrics_problem, vector_problem
from .flower_files import STRATEGIES


def reply_problem(content: RecordDict, size: int):
    """Why a training reply's content cannot be aggregated (None when it can): one ArrayRecord holding one finite
    float32 vector of ``size`` values, and one MetricRecord of finite numbers with num-examples > 0."""
    arrays, metrics = list(content.array_records.values()), list(content.metric_records.values())
    if len(arrays) != 1 or len(metrics) != 1:
        return f"{len(arrays)} array records and {len(metrics)} metric records instead of one each"
    try:
        vectors = arrays[0].to_numpy_ndarrays()
    except Exception as e:  # a record that does not deserialise
        return f"the arrays cannot be read ({e})"
    return vector_problem(vectors, size) or metrics_problem(dict(metrics[0]))


class Guarded(Strategy):
    """Wraps a strategy (outermost, so that it also guards a DP wrapper's clipping): replies with errors, the wrong
    size or non-finite values are left out of the aggregation, each with a logged reason naming the node and round;
    the others reach the inner strategy with the metrics that all of them have.  ``reporter`` (the bridge) hears
    of each round's start and outcome."""

    def __init__(self, inner: Strategy, size: int, reporter=None):
        self.inner, self.size, self.reporter = inner, size, reporter
        self.started = {}

    def configure_train(self, server_round, arrays, config, grid):
        messages = list(self.inner.configure_train(server_round, arrays, config, grid))
        if server_round == 1:  # min-clients gates the first round; later ones train whoever is connected
            base = self.inner
            while hasattr(base, "strategy"):  # inside a DP wrapper
                base = base.strategy
            base.min_available_nodes = base.min_train_nodes = 1
        self.started[server_round] = time.monotonic()
        if self.reporter is not None:
            self.reporter.begin(server_round, len(messages))
        return messages

    def aggregate_train(self, server_round, replies):
        good, failures, rejected = [], [], []
        for reply in replies:
            where = f"node {reply.metadata.src_node_id} round {server_round}"
            if reply.has_error():
                reason = str(reply.error.reason)
                if REJECTED in reason:
                    rejected.append(f"{where}: " + reason.split(REJECTED, 1)[1].strip(" '\">"))
                else:
                    failures.append(f"{where}: {reason}")
                continue
            problem = reply_problem(reply.content, self.size)
            if problem:
                rejected.append(f"{where}: {problem}")
                continue
            good.append(reply)
        for reason in rejected:
            log(WARNING, "REJECTED update of %s", reason)
        for reason in failures:
            log(WARNING, "FAILED %s", reason)
        if good:
            common = set.intersection(*(set(next(iter(r.content.metric_records.values())).keys()) for r in good))
            for r in good:
                metrics = next(iter(r.content.metric_records.values()))
                r.content = RecordDict({"arrays": next(iter(r.content.array_records.values())),
                                        "metrics": MetricRecord({k: metrics[k] for k in sorted(common)})})
        log(INFO, "guard: round %d: %d results, %d failures, %d rejected", server_round, len(good), len(failures),
            len(rejected))
        result = self.inner.aggregate_train(server_round, good) if good else (None, None)
        if self.reporter is not None:
            seconds = time.monotonic() - self.started.pop(server_round, time.monotonic())
            self.reporter.round({"round": server_round, "results": len(good), "failures": len(failures),
                                 "failureReasons": failures, "rejected": rejected, "seconds": seconds})
        return result

    def configure_evaluate(self, server_round, arrays, config, grid):
        return self.inner.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round, replies):
        return self.inner.aggregate_evaluate(server_round, replies)

    def summary(self) -> None:
        log(INFO, "\t├──> Guard: updates of the wrong size or with non-finite values are rejected")
        self.inner.summary()


def make_strategy(name: str, size: int, min_clients: int, proximal_mu: float = 0.0,
                  server_learning_rate: float = 0.01, dp_noise: float = 0.0, dp_clip: float = 0.0,
                  reporter=None) -> Guarded:
    """The guarded strategy ``name`` (fedavg, fedprox or fedadam) over all connected nodes, the first round once
    ``min_clients`` are (a page that leaves takes its node offline, so later rounds do not wait for it), training only (the global model is evaluated on the server); with ``dp_clip`` > 0 inside Flower's
    DifferentialPrivacyServerSideFixedClipping."""
    sampling = dict(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=min_clients,
                    min_evaluate_nodes=min_clients, min_available_nodes=min_clients)
    if name == "fedavg":
        strategy = FedAvg(**sampling)
    elif name == "fedprox":
        strategy = FedProx(proximal_mu=proximal_mu, **sampling)
    elif name == "fedadam":
        strategy = FedAdam(eta=server_learning_rate, **sampling)
    else:
        raise ValueError(f"unknown strategy {name!r}; choose one of {sorted(STRATEGIES)}")
    if dp_clip > 0:
        strategy = DifferentialPrivacyServerSideFixedClipping(strategy, noise_multiplier=dp_noise,
                                                              clipping_norm=dp_clip, num_sampled_clients=min_clients)
    return Guarded(strategy, size, reporter)
