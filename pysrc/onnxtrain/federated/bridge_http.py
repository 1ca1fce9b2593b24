"""The federation's one HTTP server: the site's static files (with the cross-origin isolation headers and MIME
types Pyodide needs, as build.py's server), the pages' API under /fed/ and, under /bridge/, what the Flower apps
of this federation call (each with the server's secret token)."""
from __future__ import annotations

import functools
import http.server
import json
import sys
import time
import urllib.parse

import numpy as np

from .bridge_state import Gone, Refused

MIME = {**http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript", ".json": "application/json",
        ".whl": "application/zip", ".onnx": "application/octet-stream", ".zip": "application/zip",
        "": "application/octet-stream"}
TOKEN_HEADER = "X-Bridge-Token"
OCTETS = "application/octet-stream"


class Federation:
    """What the handler serves: the state (bridge_state.BridgeState), the model (model.FederatedModel), the info
    JSON, the held-out data to evaluate on (or None), the export's outputs, the token of the Flower apps, the
    record of the pages' requests (None: not recorded) and the pages' Flower nodes (fleet_bridge.FleetBridge,
    which the ServerApp's grid tells where it pushed instructions)."""

    def __init__(self, state, model, info: dict, eval_data, outputs: list, token: str, record: bool, fleet=None):
        self.state, self.model, self.info, self.eval_data = state, model, info, eval_data
        self.outputs, self.token, self.fleet = outputs, token, fleet
        self.requests = [] if record else None
        self._export = (None, None)  # (round, bytes) of the last export
        self._status = (0.0, None)  # (time, body) of fed/status, built at most once a second for all pages

    def status_body(self) -> bytes:
        moment = time.monotonic()
        if self._status[1] is None or moment - self._status[0] >= 1.0:
            self._status = (moment, json.dumps({**self.state.status(), "rounds": self.info["rounds"]}).encode())
        return self._status[1]

    def global_model(self) -> tuple:
        state = self.state
        with state.cv:
            vector, round_ = state.global_vector, state.global_round
        if self._export[0] != round_ or vector is None:
            data = np.frombuffer(vector, np.float32) if vector is not None else self.model.initial
            self._export = (round_, self.model.export(data, self.outputs))
        return self._export[0] if self._export[0] is not None else 0, self._export[1]


#: The largest body of a request that is not a parameter vector (a page's join or leave, the ServerApp's reports).
SMALL_BODY = 1 << 20
NEAR = 4096


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # a request whose body stalls this long is dropped (its thread is not held for ever)
    extensions_map = MIME
    federation: Federation = None
    site = None  # the folder of static files (None: only the API)

    def end_headers(self):
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):
        pass

    def _reply(self, code: int, body=b"", content_type="text/plain; charset=utf-8", headers=None):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, value, code=200):
        self._reply(code, json.dumps(value), "application/json")

    def _body(self, path: str) -> bytes:
        """The request's body; Refused (413) when it is larger than the request takes, (400) when the connection
        ends before the Content-Length it announced."""
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise Refused(f"Content-Length {self.headers.get('Content-Length')!r} is not a number") from None
        vector = 4 * self.federation.model.size
        # a result a little off a vector's size is read and refused as the wrong size (400); far larger: 413 unread
        limit = vector + NEAR if path == "/fed/result" else vector + SMALL_BODY if path.startswith("/bridge/") else \
            SMALL_BODY
        if n > limit or n < 0:
            raise Refused(f"the body of {n} bytes is larger than {path} takes ({limit} bytes at most)", 413)
        body = self.rfile.read(n) if n else b""
        if len(body) != n:
            raise Refused(f"truncated body: {len(body)} of the {n} bytes its Content-Length announced came")
        return body

    def _route(self):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        return url.path, query

    def _record(self, path: str, body: bytes):
        requests = self.federation.requests
        if requests is not None and path.startswith("/fed/"):
            requests.append({"method": self.command, "path": self.path, "bodyLength": len(body),
                             "headers": dict(self.headers.items())})

    def do_GET(self):
        path, query = self._route()
        if path.startswith("/fed/"):
            self._record(path, b"")
            return self._fed_get(path, query)
        if path.startswith("/bridge/"):
            return self._internal(path, query)
        if self.site is None:
            return self._reply(404, "not found")
        return super().do_GET()

    def do_HEAD(self):
        if self.site is None or self.path.startswith(("/fed/", "/bridge/")):
            return self._reply(404, "not found")
        return super().do_HEAD()

    def do_POST(self):
        path, query = self._route()
        try:
            body = self._body(path)
        except (Refused, OSError) as e:
            self.close_connection = True  # its body is left unread
            reason = str(e) if isinstance(e, Refused) else f"the body did not come ({e})"
            self.federation.state.refused(f"POST {path}", reason)
            return self._reply(getattr(e, "status", 400), reason)
        if path.startswith("/fed/"):
            self._record(path, body)
            return self._fed_post(path, query, body)
        if path.startswith("/bridge/"):
            return self._internal(path, query, body)
        self._reply(404, "not found")

    # ---- the pages' API ------------------------------------------------------------------------------------

    def _fed_get(self, path: str, query: dict):
        fed = self.federation
        name = path[len("/fed/"):]
        try:
            if name == "info":
                return self._json(fed.info)
            if name.startswith("artifacts/") and name[len("artifacts/"):] in fed.model.files:
                return self._reply(200, fed.model.files[name[len("artifacts/"):]], OCTETS)
            if name == "status":
                return self._reply(200, fed.status_body(), "application/json")
            if name == "next":
                task = fed.state.next_task(query.get("client"))
                if task is None:
                    return self._reply(204)
                config = json.dumps(task.config)
                vector, task.vector = task.vector, None  # delivered once; the bridge keeps the round's copy
                return self._reply(200, vector, OCTETS,
                                   {"X-Task": task.id, "X-Round": str(task.round), "X-Config": config})
            if name == "global.onnx":
                round_, data = fed.global_model()
                return self._reply(200, data, OCTETS, {
                    "X-Round": str(round_),
                    "Content-Disposition": f'attachment; filename="global_round_{round_}.onnx"'})
            if name == "requests" and fed.requests is not None:
                return self._json(list(fed.requests))
        except Gone as e:
            fed.state.refused(f"GET {path}", str(e))
            return self._reply(410, str(e))
        self._reply(404, "not found")

    def _fed_post(self, path: str, query: dict, body: bytes):
        state = self.federation.state
        name = path[len("/fed/"):]
        try:
            if name == "join":
                return self._json({"client": state.join()})
            if name == "result":
                state.submit_result(query.get("client"), query.get("task"), body, self.headers.get("X-Metrics"))
                return self._json({"accepted": True})
            if name == "leave":
                if not state.leave(query.get("client")):
                    raise Gone("unknown client: it never joined, it left, or it was silent too long")
                return self._reply(200, "left")
        except Gone as e:
            state.refused(f"POST {path}", str(e))
            return self._reply(410, str(e))
        except Refused as e:
            state.refused(f"POST {path}", str(e))
            return self._reply(e.status, str(e))
        self._reply(404, "not found")

    # ---- what the Flower apps call -------------------------------------------------------------------------

    def _internal(self, path: str, query: dict, body: bytes = b""):
        fed = self.federation
        if self.headers.get(TOKEN_HEADER) != fed.token:
            return self._reply(403, "forbidden")
        name = path[len("/bridge/"):]
        state = fed.state
        try:
            if name == "initial":
                return self._reply(200, fed.model.initial.tobytes(), OCTETS)
            if name == "pushed":
                queued = fed.fleet.pull([int(n) for n in json.loads(body)]) if fed.fleet is not None else 0
                return self._json({"pulling": queued})
            if name == "pulled":
                if fed.fleet is not None:
                    fed.fleet.pulled([int(n) for n in json.loads(body)])
                return self._reply(200, "ok")
            if name == "begin":
                state.begin_round(int(query["round"]), int(query["nodes"]))
                return self._reply(200, "ok")
            if name == "round":
                state.end_round(json.loads(body))
                return self._reply(200, "ok")
            if name == "evaluate":
                vector = np.frombuffer(body, np.float32)
                metrics = fed.model.evaluate(vector, fed.eval_data) if fed.eval_data is not None else None
                state.evaluated(int(query["round"]), body, metrics)
                return self._json(metrics)
            if name == "end":
                result = json.loads(body)
                state.finish(bool(result.get("ok")), result.get("error"))
                return self._reply(200, "ok")
        except Refused as e:
            return self._reply(410, str(e))
        except (KeyError, ValueError) as e:
            return self._reply(400, f"bad request to {path}: {e}")
        self._reply(404, "not found")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many pages connect at once (the default backlog of 5 drops their connections)

    def handle_error(self, request, client_address):
        """A page that went away mid-reply (a closed tab, an aborted poll) is no error of the server's."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def make_server(federation: Federation, port: int, site=None, host: str = "127.0.0.1") -> Server:
    """The server on ``host``:``port`` (0: a free port) for ``federation``, serving ``site``'s files too."""
    folder = None if site is None else str(site)
    handler = type("FederationHandler", (Handler,), {"federation": federation, "site": folder})
    return Server((host, port), functools.partial(handler, directory=folder or "/nonexistent"))
