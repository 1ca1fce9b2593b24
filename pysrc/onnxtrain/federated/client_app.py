"""The federation's Flower ClientApp (run by flwr-clientapp for each message a node gets).  A page slot's node
(node config ``kind="page"``) hands the task to its page through the federation server and waits; a native node
(``kind="native"``) trains here with onnxtrain or onnxruntime-training on its local CSV."""
from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from ..train import settings as train_settings
from .bridge_client import BridgeClient, BridgeError

app = ClientApp()


def round_settings(config) -> dict:
    """The page's X-Config (camelCase) from the round's ConfigRecord (kebab-case; FedProx adds proximal-mu)."""
    return {train_settings.camel(name): value
            for name, value in train_settings.round_settings(config, train_settings.config_key).items()}


@app.train()
def train(msg: Message, context: Context) -> Message:
    vector = msg.content["arrays"].to_numpy_ndarrays()[0].astype(np.float32)
    config = msg.content["config"]
    round_, settings, node = int(config["server-round"]), round_settings(config), context.node_config
    if node.get("kind") == "page":
        bridge = BridgeClient(str(node["bridge"]), str(node["bridge-token"]))
        try:
            trained, metrics = bridge.task(int(node["slot"]), round_, vector, settings, context.node_id,
                                           float(context.run_config["round-timeout"]))
        except BridgeError as e:
            raise RuntimeError(str(e)) from None
    else:
        from .local_round import train_round  # onnxtrain's training, only for a native node
        trained, metrics = train_round(str(node.get("backend", "onnxtrain")), str(node["artifacts"]),
                                       str(node["data"]), vector, settings, seed=round_)
    return Message(RecordDict({"arrays": ArrayRecord([trained]), "metrics": MetricRecord(metrics)}), reply_to=msg)
