"""The files Flower's tools read: the Flower App project that `flwr run` packs into a FAB (its components are
onnxtrain.federated's ServerApp and ClientApp, its run config the federation's settings), a node config for
flower-supernode, and the `flwr` CLI's connection to the SuperLink."""
from __future__ import annotations

import json
import os

#: --strategy's choices -> Flower's strategy names
STRATEGIES = {"fedavg": "FedAvg", "fedprox": "FedProx", "fedadam": "FedAdam"}
SERVER_APP = "onnxtrain.federated.server_app:app"
CLIENT_APP = "onnxtrain.federated.client_app:app"


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else "0.0"
    return json.dumps(str(value))  # a TOML basic string


def toml_table(values: dict) -> str:
    return "".join(f"{key} = {toml_value(value)}\n" for key, value in values.items())


def write_app(folder: str, run_config: dict) -> str:
    """The Flower App project in ``folder`` (created); returns ``folder``."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "pyproject.toml"), "w", encoding="utf-8") as f:
        f.write('[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
                '[project]\nname = "onnxtrain-federation"\nversion = "1.0.0"\n'
                'description = "onnxtrain clients (pages, CPython, onnxruntime-training) in one Flower federation"\n'
                'license = "MIT"\ndependencies = []\n\n'
                '[tool.hatch.build.targets.wheel]\npackages = ["."]\n\n'
                '[tool.flwr.app]\npublisher = "onnxtrain"\n\n'
                f'[tool.flwr.app.components]\nserverapp = "{SERVER_APP}"\nclientapp = "{CLIENT_APP}"\n\n'
                '[tool.flwr.app.config]\n' + toml_table(run_config))
    return folder


def write_node_config(path: str, values: dict) -> str:
    """A node config file for flower-supernode --node-config; returns ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(toml_table(values))
    return path


def write_connection(flwr_home: str, address: str) -> str:
    """``$FLWR_HOME/config.toml`` naming the SuperLink at ``address`` (insecure) as the connection "federation";
    returns the connection's name."""
    os.makedirs(flwr_home, exist_ok=True)
    with open(os.path.join(flwr_home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(f'[superlink]\ndefault = "federation"\n\n[superlink.federation]\naddress = "{address}"\n'
                'insecure = true\n')
    return "federation"
