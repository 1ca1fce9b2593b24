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

    # ---- a page slot's ClientApp ----

    def task(self, slot: int, round_: int, vector: np.ndarray, config: dict, node_id, timeout: float) -> tuple:
        """(the page's vector, its metrics); BridgeError with the reason when the page gives none."""
        body, headers = self.call("task", {"slot": slot, "round": round_, "timeout": timeout},
                                  vector.astype(np.float32).tobytes(),
                                  {"X-Config": json.dumps(config), "X-Node": str(node_id),
                                   "Content-Type": "application/octet-stream"}, timeout + 30)
        return np.frombuffer(body, np.float32).copy(), json.loads(headers["X-Metrics"])
