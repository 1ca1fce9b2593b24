"""The federation's Flower ClientApp (run by flwr-clientapp for each message a native node gets): it trains with
onnxtrain or onnxruntime-training on the node's local CSV.  Pages' nodes have no ClientApp: the federation
server's fleet bridge (fleet_bridge.py) answers for them with what the page sent."""
from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from ..train import settings as train_settings

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
    from .local_round import train_round  # onnxtrain's training, only where a node trains
    trained, metrics = train_round(str(node.get("backend", "onnxtrain")), str(node["artifacts"]),
                                   str(node["data"]), vector, settings, seed=round_)
    return Message(RecordDict({"arrays": ArrayRecord([trained]), "metrics": MetricRecord(metrics)}), reply_to=msg)
