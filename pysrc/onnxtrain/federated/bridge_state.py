"""The page bridge's state: each page that joins gets a Flower node of its own (``nodes.open()``: a node id the
fleet bridge registered with the SuperLink), and each instruction for that node becomes the page's task.

Pages long-poll for their task; every poll is a heartbeat.  A page silent for longer than ``page_timeout`` (no
poll and no result) is dropped: its node closes (a task in flight becomes an error reply, a failure Flower's
strategy counts at once) and a page that comes back joins again as a new node.  Each client waits on a
condition of its own, so an event wakes one page's poll, not all of them."""
from __future__ import annotations

import secrets
import threading
import time

from .checks import body_problem, parse_metrics

#: The prefix of a ClientApp error whose update the bridge refused (the strategy's guard lists it as rejected).
REJECTED = "REJECTED"


class Gone(Exception):
    """The client is unknown (never joined, left, or dropped for silence) or the run has ended: HTTP 410."""


class Refused(Exception):
    """A request the bridge refuses, with the reason: HTTP 400 (``status`` says otherwise: 429, 503)."""

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.status = status


class Task:
    def __init__(self, round_: int, vector: bytes, config: dict):
        self.id, self.round, self.vector, self.config = secrets.token_hex(8), round_, vector, config
        self.delivered = False
        self.answered = False  # a result or a failure went to the node


class Client:
    def __init__(self, client_id: str, node_id: int, lock):
        self.id, self.node_id = client_id, node_id
        self.last_seen = time.monotonic()
        self.polls = 0  # long polls being held now (the page is there while one is)
        self.task = None
        self.cv = threading.Condition(lock)


class JoinRate:
    """At most ``rate`` joins a second on average, ``rate`` at once (a token bucket)."""

    def __init__(self, rate: float):
        self.rate, self.tokens, self.at = rate, rate, time.monotonic()

    def take(self) -> bool:
        moment = time.monotonic()
        self.tokens = min(self.rate, self.tokens + (moment - self.at) * self.rate)
        self.at = moment
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class RefusalLog:
    """Each refusal logged, the same reason at most once a second (then with how many came)."""

    def __init__(self, log):
        self.log, self.last, self.counts = log, {}, {}
        self.lock = threading.Lock()

    def __call__(self, what: str, reason: str) -> None:
        key = (what, reason)
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1
            moment = time.monotonic()
            if moment - self.last.get(key, -1e9) < 1.0:
                return
            self.last[key], count = moment, self.counts.pop(key)
        self.log(f"refused {what}: {reason}" + (f" ({count} times in the last second)" if count > 1 else ""))


class BridgeState:
    """Clients, tasks and the run's progress.  ``nodes`` (fleet_bridge.FleetBridge, or a stand-in) opens and closes
    Flower nodes and pushes replies: ``open() -> node id``, ``close(node_id, why)``, ``reply(node_id, vector,
    metrics)``, ``fail(node_id, reason)``; it hands tasks over with ``deliver``.  ``log(text)`` prints a line of
    the federation's log."""

    def __init__(self, size: int, nodes, page_timeout: float = 10.0, poll_hold: float = 10.0,
                 max_pages: int = 1000, join_rate: float = 50.0, log=print):
        self.size, self.nodes, self.log = size, nodes, log
        self.page_timeout, self.poll_hold, self.max_pages = page_timeout, poll_hold, max_pages
        self.refused = RefusalLog(log)
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)  # the run's progress
        self.clients, self.by_node, self.opening = {}, {}, 0
        self.join_rate = JoinRate(join_rate)
        self.phase, self.round, self.nodes_in_round, self.error = "waiting", 0, 0, None
        self.history, self.initial = [], None
        self.global_vector, self.global_round = None, 0  # the last aggregated parameters (bytes)
        self.round_started = None
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, daemon=True, name="fed-reaper")
        self._reaper.start()

    # ---- pages -------------------------------------------------------------------------------------------

    def join(self) -> str:
        with self.lock:
            if self.phase in ("done", "failed"):
                raise Refused(f"the federation's run has ended ({self.phase}); no more rounds to join", 503)
            if self._stop.is_set():
                raise Refused("the federation server is stopping", 503)
            if len(self.clients) + self.opening >= self.max_pages:
                raise Refused(f"all {self.max_pages} page places are taken; try again when a page leaves", 503)
            if not self.join_rate.take():
                raise Refused("too many pages are joining at once; try again in a second", 429)
            self.opening += 1
        try:
            node_id = self.nodes.open()
        except Exception as e:
            raise Refused(f"the SuperLink did not take a new node: {e}", 503) from None
        finally:
            with self.lock:
                self.opening -= 1
        client = Client(secrets.token_hex(8), node_id, self.lock)
        with self.lock:
            self.clients[client.id] = client
            self.by_node[node_id] = client
        self.log(f"page {client.id} joined as Flower node {node_id}")
        return client.id

    def _client(self, client_id) -> Client:
        client = self.clients.get(client_id)
        if client is None or self.phase in ("done", "failed"):
            raise Gone("the run has ended" if self.phase in ("done", "failed") else
                       "unknown client: it never joined, it left, or it was silent too long")
        client.last_seen = time.monotonic()
        return client

    def deliver(self, node_id: int, round_: int, vector: bytes, config: dict) -> bool:
        """A training instruction for the node: the task of its page (False: no page has the node)."""
        if len(vector) != 4 * self.size:
            return False
        with self.lock:
            client = self.by_node.get(node_id)
            if client is None or self.clients.get(client.id) is not client:
                return False
            client.task = Task(round_, vector, config)
            client.cv.notify()
        return True

    def next_task(self, client_id):
        """The page's task (delivered once), or None after holding the poll up to ``poll_hold`` seconds."""
        with self.lock:
            client = self._client(client_id)
            client.polls += 1
            try:
                deadline = time.monotonic() + self.poll_hold
                while True:
                    task = client.task
                    if task is not None and not task.delivered and not task.answered:
                        task.delivered = True
                        return task
                    left = deadline - time.monotonic()
                    if left <= 0 or self.clients.get(client_id) is not client or self._stop.is_set():
                        break
                    client.cv.wait(left)
                self._client(client_id)  # 410 if it was dropped or the run ended while waiting
                return None
            finally:
                client.polls -= 1
                client.last_seen = time.monotonic()

    def submit_result(self, client_id, task_id, body: bytes, metrics_header) -> None:
        """Pass a page's result for its task to its node; Refused (the task fails at once) with the reason."""
        with self.lock:
            client = self._client(client_id)
            task = client.task
            if task is None or task.id != task_id or not task.delivered or task.answered:
                raise Refused(f"unknown task {task_id!r} for client {client_id} (no such task is waiting for a "
                              f"result)")
            task.answered = True
        problem = body_problem(body, self.size)
        metrics = None
        if problem is None:
            metrics, problem = parse_metrics(metrics_header)
        if problem:
            self.nodes.fail(client.node_id, f"{REJECTED} page {client_id} (node {client.node_id}): {problem}")
            self.log(f"round {task.round}: refused the result of page {client_id} (node {client.node_id}): "
                     f"{problem}")
            raise Refused(problem)
        self.nodes.reply(client.node_id, body, metrics)

    def leave(self, client_id, why: str = "left") -> bool:
        """The page is gone (``why``): its node closes; False when no such page was there."""
        with self.lock:
            client = self.clients.pop(client_id, None)
            if client is None:
                return False
            self.by_node.pop(client.node_id, None)
            if client.task is not None:
                client.task.answered = True
            client.cv.notify_all()
        self.nodes.close(client.node_id, f"page {client_id} (node {client.node_id}) {why}")
        self.log(f"page {client_id} (node {client.node_id}) {why}")
        return True

    def _reap(self) -> None:
        while not self._stop.wait(0.5):
            moment = time.monotonic()
            with self.lock:
                silent = [c.id for c in self.clients.values()
                          if c.polls == 0 and moment - c.last_seen > self.page_timeout]
            for client_id in silent:
                self.leave(client_id, f"went silent for more than {self.page_timeout:g} s: dropped")

    # ---- the ServerApp's progress ---------------------------------------------------------------------------

    def begin_round(self, round_: int, nodes: int) -> None:
        with self.cv:
            self.phase, self.round, self.nodes_in_round = "running", round_, nodes
            self.round_started = time.monotonic()
        self.log(f"round {round_}: training on {nodes} nodes")

    def end_round(self, summary: dict) -> None:
        with self.cv:
            round_ = int(summary["round"])
            rejected = list(summary.get("rejected", []))
            entry = {"round": round_, "results": int(summary.get("results", 0)),
                     "failures": int(summary.get("failures", 0)), "rejected": rejected, "global": None,
                     "seconds": float(summary.get("seconds", 0.0))}
            self.history.append(entry)
        for reason in summary.get("failureReasons", []):
            self.log(f"round {round_}: failure: {reason}")
        for reason in rejected:
            self.log(f"round {round_}: rejected: {reason}")

    def evaluated(self, round_: int, vector: bytes, metrics) -> None:
        """The global parameters after ``round_`` (0: the initial ones) and their metrics on the server's data."""
        with self.cv:
            self.global_vector, self.global_round = vector, round_
            if round_ == 0:
                self.initial = metrics
            for entry in self.history:
                if entry["round"] == round_:
                    entry["global"] = metrics
                    entry = dict(entry)
                    break
            else:
                entry = None
        if entry is not None:
            where = "" if metrics is None else (f", global loss {metrics['loss']:.4f}" + (
                "" if metrics.get("accuracy") is None else f", accuracy {metrics['accuracy']:.4f}"))
            self.log(f"round {round_} done in {entry['seconds']:.1f} s: {entry['results']} results, "
                     f"{entry['failures']} failures, {len(entry['rejected'])} rejected{where}")
        elif metrics is not None and round_ == 0:
            self.log(f"initial global model: loss {metrics['loss']:.4f}"
                     + ("" if metrics.get("accuracy") is None else f", accuracy {metrics['accuracy']:.4f}"))

    def finish(self, ok: bool, error=None) -> None:
        with self.cv:
            if self.phase in ("done", "failed"):
                return
            self.phase, self.error = ("done", None) if ok else ("failed", str(error or "the run failed"))
            for client in self.clients.values():
                client.cv.notify_all()
        self.log("the run is done" if ok else f"the run failed: {self.error}")

    def status(self) -> dict:
        with self.cv:
            return {"phase": self.phase, "round": self.round, "clients": len(self.clients),
                    "nodes": self.nodes_in_round,
                    "history": [dict(h) for h in self.history], "error": self.error, "initial": self.initial}

    def close(self) -> None:
        self._stop.set()
        with self.lock:
            self.cv.notify_all()
            for client in self.clients.values():
                client.cv.notify_all()
