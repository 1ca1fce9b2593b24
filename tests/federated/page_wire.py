"""Simulated pages: the HTTP exchange of web/lib/src/federation.mjs's Federation (connect, join, the fed/next long
polls, each round's fed/result with the raw float32 vector and the X-Metrics header, fed/status every 3 s as the
panel's onStatus polls it, fed/leave at the end), from one asyncio loop, for many pages at once.  A page's
"training" is deterministic, so a test or the bench can recompute every update it sent: the global vector plus a
small perturbation seeded by (page, round), with num-examples = 10 + page % 7.

A page's ``faults``: round -> "nan" (a NaN in the update), "short" (one value short), "vanish" (takes the round's
task, then never speaks again, as a closed tab whose beacon was lost)."""
from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.parse

import numpy as np

STATUS_SECONDS = 3.0  # federation.mjs: FED_POLL_STATUS_MS


class Answer:
    def __init__(self, status_code: int, headers: dict, content: bytes):
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")

    def json(self):
        return json.loads(self.content)


class Connection:
    """One keep-alive HTTP/1.1 connection, as a browser holds to its origin: requests one after another (the
    server always answers with a Content-Length); reconnects when the server closed it.  Light enough for a
    thousand pages in one asyncio loop."""

    def __init__(self, base: str):
        url = urllib.parse.urlsplit(base)
        self.host, self.port = url.hostname, url.port
        self.reader = self.writer = None

    async def request(self, method: str, path: str, params: dict = None, content: bytes = b"",
                      headers: dict = None, timeout: float = 120.0) -> Answer:
        if params:
            path += "?" + urllib.parse.urlencode(params)
        for attempt in (0, 1):
            try:
                return await asyncio.wait_for(self._once(method, path, content, headers or {}), timeout)
            except (ConnectionError, asyncio.IncompleteReadError, OSError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _once(self, method, path, content, headers) -> Answer:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        if method == "POST":
            head += f"Content-Length: {len(content)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        self.writer.write(head.encode() + content)
        await self.writer.drain()
        status = await self.reader.readuntil(b"\r\n")
        if not status:
            raise ConnectionError("closed")
        code = int(status.split()[1])
        answer_headers = {}
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            key, _, value = line.decode("latin-1").partition(":")
            answer_headers[key.strip()] = value.strip()
        body = await self.reader.readexactly(int(answer_headers.get("Content-Length", 0)))
        if answer_headers.get("Connection", "").lower() == "close":
            self.close()
        return Answer(code, answer_headers, body)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def update(global_vector: np.ndarray, page: int, round_: int) -> tuple:
    """(the page's trained vector, its num-examples) for ``round_``."""
    rng = np.random.default_rng([page, round_])
    delta = (0.01 * rng.standard_normal(global_vector.size)).astype(np.float32)
    return (global_vector + delta).astype(np.float32), 10 + page % 7


class SimPage:
    def __init__(self, index: int, faults: dict = None, train_seconds: float = 0.0, poll_status: bool = True):
        self.index, self.faults, self.train_seconds = index, faults or {}, train_seconds
        self.poll_status = poll_status
        self.client = None
        self.sent = {}  # round -> (global vector received, vector sent, num-examples, HTTP status of the result)
        self.refusals = []  # (round, status, reason)
        self.joins = 0
        self.end = None  # why it stopped

    async def run(self, base: str, deadline: float) -> None:
        http, poll = Connection(base), Connection(base)  # a browser's fetches go over a few connections
        try:
            await self._run(http, poll, base, deadline)
        finally:
            http.close()
            poll.close()

    async def _run(self, http, poll, base, deadline) -> None:
        info = (await http.request("GET", "/fed/info")).json()
        while True:  # the panel's user clicks Join again when the server says try later
            answer = await http.request("POST", "/fed/join")
            self.joins += 1
            if answer.status_code == 200:
                break
            if answer.status_code not in (429, 503) or time.monotonic() > deadline:
                self.end = f"join refused: {answer.status_code} {answer.text}"
                return
            await asyncio.sleep(1.0)
        self.client = answer.json()["client"]
        status = asyncio.create_task(self._status(Connection(base))) if self.poll_status else None
        try:
            await self._rounds(http, poll, info, deadline)
        finally:
            if status is not None:
                status.cancel()

    async def _status(self, http) -> None:
        try:
            while True:
                try:
                    await http.request("GET", "/fed/status")
                except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                    pass
                await asyncio.sleep(STATUS_SECONDS)
        finally:
            http.close()

    async def _rounds(self, http, poll, info, deadline) -> None:
        size = int(info["parameters"])
        while time.monotonic() < deadline:
            try:
                answer = await poll.request("GET", "/fed/next", params={"client": self.client})
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.5)
                continue
            if answer.status_code == 410:
                self.end = "gone: " + answer.text
                return
            if answer.status_code == 204:
                continue
            if answer.status_code != 200:
                self.end = f"next: {answer.status_code} {answer.text}"
                return
            round_, task = int(answer.headers["X-Round"]), answer.headers["X-Task"]
            json.loads(answer.headers["X-Config"])
            global_vector = np.frombuffer(answer.content, np.float32)
            assert global_vector.size == size
            fault = self.faults.get(round_)
            if fault == "vanish":
                self.sent[round_] = (global_vector, None, 0, None)
                self.end = f"vanished in round {round_}"
                return
            trained, examples = update(global_vector, self.index, round_)
            if fault == "nan":
                trained[3] = np.nan
            if fault == "short":
                trained = trained[:-1]
            if self.train_seconds:
                await asyncio.sleep(self.train_seconds)
            metrics = json.dumps({"num-examples": examples, "loss": 0.5, "accuracy": 0.75, "global-accuracy": 0.7})
            result = await http.request("POST", "/fed/result", params={"client": self.client, "task": task},
                                        content=trained.tobytes(),
                                        headers={"Content-Type": "application/octet-stream", "X-Metrics": metrics})
            self.sent[round_] = (global_vector, trained, examples, result.status_code)
            if result.status_code != 200:
                self.refusals.append((round_, result.status_code, result.text))
            if result.status_code == 410:
                self.end = "gone: " + result.text
                return
        await http.request("POST", "/fed/leave", params={"client": self.client})
        self.end = "deadline"


async def run_pages(base: str, pages: list, seconds: float) -> None:
    """Run ``pages`` against the federation at ``base`` until each ends (the run's end) or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(p.run(base, deadline) for p in pages))


def run_pages_now(base: str, pages: list, seconds: float) -> None:
    """``run_pages`` on an event loop of its own, in a thread of its own: the thread that calls may already run
    one (Playwright's sync API keeps its loop in the test session's main thread)."""
    failure = []

    def run():
        try:
            asyncio.run(run_pages(base, pages, seconds))
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
            failure.append(e)

    thread = threading.Thread(target=run, name="simulated pages")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def rounds_of(pages: list) -> dict:
    """round -> [(page, global vector received, vector sent or None, num-examples, result status)]."""
    by_round = {}
    for p in pages:
        for round_, (received, sent, examples, status) in p.sent.items():
            by_round.setdefault(round_, []).append((p.index, received, sent, examples, status))
    return by_round


def flower_fedavg(round_: int, updates: list) -> np.ndarray:
    """Flower's FedAvg (flwr.serverapp.strategy.FedAvg.aggregate_train) of ``updates`` [(page, vector,
    num-examples)], each wrapped in the reply Message a node sends."""
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.serverapp.strategy import FedAvg
    from flwr.supercore.task_identity import TaskIdentity
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 1
    replies = []
    for page, vector, examples in updates:
        instruction = Message(RecordDict(), dst_node_id=1000 + page, message_type="train")
        replies.append(Message(RecordDict({"arrays": ArrayRecord([vector]),
                                           "metrics": MetricRecord({"num-examples": examples})}),
                               reply_to=instruction))
    arrays, _ = FedAvg(fraction_evaluate=0.0).aggregate_train(round_, replies)
    return arrays.to_numpy_ndarrays()[0]


def aggregate_checks(pages: list) -> list:
    """For each round r whose next round's global vector the pages received: (r, results, max |server - Flower's
    FedAvg|, the float32 reordering bound, max |server - float64 weighted mean|).  The bound: a weighted sum of n
    float32 terms summed in another order differs by at most ~n ulps of its largest term."""
    by_round, out = rounds_of(pages), []
    for r in sorted(by_round):
        if r + 1 not in by_round:
            continue
        server = by_round[r + 1][0][1]
        assert all(np.array_equal(g, server) for _, g, *_ in by_round[r + 1]), "pages got different global vectors"
        accepted = [(p, sent, n) for p, _, sent, n, status in by_round[r] if status == 200]
        flower = flower_fedavg(r, accepted)
        weights = np.array([n for *_, n in accepted], np.float64)
        mean64 = (np.stack([s.astype(np.float64) for _, s, _ in accepted]) * weights[:, None]).sum(0) / weights.sum()
        bound = len(accepted) * float(np.finfo(np.float32).eps) * float(np.abs(server).max())
        out.append((r, len(accepted), float(np.abs(server - flower).max()), bound,
                    float(np.abs(server.astype(np.float64) - mean64).max())))
    return out
