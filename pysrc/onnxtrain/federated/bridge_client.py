"""What the Flower apps (in their own processes) call on the federation server's /bridge/ endpoints."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from .bridge_http import TOKEN_HEADER


class BridgeError(RuntimeError):
    """The federation server refused or did not answer; the message is its reason."""


class BridgeClient:
    def __init__(self, url: str, token: str):
        self.url, self.token = url.rstrip("/"), token

    def call(self, path: str, query: dict = None, body: bytes = None, headers: dict = None, timeout: float = 60):
        """(body bytes, response headers) of a request to /bridge/``path``; BridgeError with the reason if not 200."""
        url = f"{self.url}/bridge/{path}" + ("?" + urllib.parse.urlencode(query) if query else "")
        request = urllib.request.Request(url, data=body, method="GET" if body is None else "POST",
                                         headers={TOKEN_HEADER: self.token, **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.read(), response.headers
        except urllib.error.HTTPError as e:
            raise BridgeError(e.read().decode(errors="replace") or f"HTTP {e.code}") from None
        except OSError as e:
            raise BridgeError(f"the federation server at {self.url} does not answer: {e}") from None

    def post_json(self, path: str, value, query: dict = None) -> None:
        self.call(path, query, json.dumps(value).encode(), {"Content-Type": "application/json"})

    # ---- the ServerApp ----

    def initial(self) -> np.ndarray:
        return np.frombuffer(self.call("initial")[0], np.float32).copy()

    def begin(self, round_: int, nodes: int) -> None:
        self.call("begin", {"round": round_, "nodes": nodes}, b"")

    def round(self, summary: dict) -> None:
        self.post_json("round", summary)

    def evaluate(self, round_: int, vector: np.ndarray, timeout: float = 300):
        body, _ = self.call("evaluate", {"round": round_}, vector.astype(np.float32).tobytes(),
                            {"Content-Type": "application/octet-stream"}, timeout)
        return json.loads(body)

    def end(self, ok: bool, error: str = None) -> None:
        self.post_json("end", {"ok": ok, "error": error})

    def pushed(self, node_ids: list) -> None:
        """The grid pushed instructions to ``node_ids``: the page nodes among them pull theirs now."""
        try:
            self.post_json("pushed", [int(n) for n in node_ids])
        except BridgeError:
            pass  # the bridge's own sweep pulls them a little later

    def pulled(self, node_ids: list) -> None:
        """The grid pulled replies from ``node_ids``: the page nodes among them that are closing go offline."""
        try:
            self.post_json("pulled", [int(n) for n in node_ids])
        except BridgeError:
            pass  # they go offline after the bridge's grace
