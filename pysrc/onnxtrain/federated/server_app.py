"""The federation's Flower ServerApp (run by flwr-serverapp): the guarded strategy over the global vector that the
federation server holds, whose progress and global evaluation go to that server."""
from __future__ import annotations

import math

from flwr.app import ArrayRecord, ConfigRecord, Context, MetricRecord
from flwr.serverapp import Grid, ServerApp

from ..train.settings import ROUND_SETTINGS, config_key
from .bridge_client import BridgeClient, BridgeError
from .polling_grid import PollingGrid
from .strategies import make_strategy

app = ServerApp()


def evaluation(bridge: BridgeClient):
    """Flower's evaluate_fn: the federation server evaluates (and keeps) each round's global model."""
    def evaluate(server_round: int, arrays: ArrayRecord):
        metrics = bridge.evaluate(server_round, arrays.to_numpy_ndarrays()[0])
        numbers = {k: float(v) for k, v in (metrics or {}).items()
                   if isinstance(v, (int, float)) and math.isfinite(v)}
        return MetricRecord(numbers) if numbers else None
    return evaluate


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    bridge = BridgeClient(str(cfg["bridge"]), str(cfg["bridge-token"]))
    try:
        initial = bridge.initial()
        strategy = make_strategy(str(cfg["strategy"]), initial.size, int(cfg["min-clients"]),
                                 float(cfg["proximal-mu"]), float(cfg["server-learning-rate"]),
                                 float(cfg["dp-noise"]), float(cfg["dp-clip"]), reporter=bridge)
        train_config = ConfigRecord({config_key(name): kind(cfg[config_key(name)])  # FedProx adds proximal-mu
                                     for name, kind in ROUND_SETTINGS.items() if name != "proximal_mu"})
        strategy.start(grid=PollingGrid(grid, pushed=bridge.pushed, pulled=bridge.pulled),
                       initial_arrays=ArrayRecord([initial]),
                       num_rounds=int(cfg["num-server-rounds"]), timeout=float(cfg["round-timeout"]),
                       train_config=train_config, evaluate_fn=evaluation(bridge))
    except BaseException as e:
        try:
            bridge.end(False, f"{type(e).__name__}: {e}")
        except BridgeError:
            pass  # the server is gone; the error below is the run's
        raise
    bridge.end(True)
