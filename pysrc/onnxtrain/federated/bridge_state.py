"""The page bridge's state: each page that joins gets a slot, and each slot is one Flower node (a flower-supernode
started for it) whose ClientApp hands the round's task to the page and waits for the page's result.

Pages long-poll for their task; every poll is a heartbeat.  A page silent for longer than ``page_timeout`` (no
poll and no result) is dropped: its pending task fails at once (its ClientApp raises, Flower counts a failure and
the round goes on) and its slot waits for the next page that joins (the slot's supernode keeps running: a stopped
one stays listed by the SuperLink for about a minute and would be sampled into rounds that then wait for it)."""
from __future__ import annotations

import itertools
import secrets
import threading
import time

from .checks import body_problem, parse_metrics

#: The prefix of a ClientApp error whose update the bridge refused (the strategy's guard lists it as rejected).
REJECTED = "REJECTED"


class Gone(Exception):
    """The client is unknown (never joined, left, or dropped for silence) or the run has ended: HTTP 410."""


class Refused(Exception):
    """A request the bridge refuses, with the reason: HTTP 400 (or 503 for a join without a slot)."""


class Task:
    def __init__(self, task_id: str, round_: int, vector: bytes, config: dict):
        self.id, self.round, self.vector, self.config = task_id, round_, vector, config
        self.delivered = False
        self.result = None  # (vector bytes, metrics dict)
        self.failure = None  # the reason the task failed


class Slot:
    def __init__(self, index: int, process):
        self.index, self.process = index, process
        self.client = None  # the client id of the page in the slot
        self.task = None
        self.node_id = None  # the Flower node id, as its ClientApp reports it

    def alive(self) -> bool:
        return self.process is None or self.process.poll() is None


class Client:
    def __init__(self, client_id: str, slot: Slot):
        self.id, self.slot = client_id, slot
        self.last_seen = time.monotonic()
        self.polls = 0  # long polls being held now (the page is there while one is)


class BridgeState:
    """Slots, clients, tasks and the run's progress.  ``start_node(index)`` starts the supernode of a new slot and
    returns its process (or None); ``log(text)`` prints a line of the federation's log."""

    def __init__(self, size: int, start_node, page_timeout: float = 10.0, poll_hold: float = 10.0,
                 max_slots: int = 16, log=print):
        self.size, self.start_node, self.log = size, start_node, log
        self.page_timeout, self.poll_hold, self.max_slots = page_timeout, poll_hold, max_slots
        self.cv = threading.Condition()
        self.slots, self.clients = [], {}
        self.task_ids = itertools.count(1)
        self.phase, self.round, self.nodes, self.error = "waiting", 0, 0, None
        self.history, self.initial = [], None
        self.global_vector, self.global_round = None, 0  # the last aggregated parameters (bytes)
        self.round_started = None
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, daemon=True, name="fed-reaper")
        self._reaper.start()

    # ---- pages -------------------------------------------------------------------------------------------

    def join(self) -> str:
        with self.cv:
            if self.phase in ("done", "failed"):
                raise Refused(f"the federation's run has ended ({self.phase}); no more rounds to join")
            if self._stop.is_set():
                raise Refused("the federation server is stopping")
            slot = next((s for s in self.slots if s.client is None and s.alive()), None)
            if slot is None:
                if len(self.slots) >= self.max_slots:
                    raise Refused(f"all {self.max_slots} page slots are taken; try again when a page leaves")
                slot = Slot(len(self.slots), None)
                self.slots.append(slot)
                slot.process = self.start_node(slot.index)
            client = Client(secrets.token_hex(8), slot)
            slot.client = client.id
            self.clients[client.id] = client
            self.cv.notify_all()
        self.log(f"page {client.id} joined (slot {slot.index})")
        return client.id

    def _client(self, client_id) -> Client:
        client = self.clients.get(client_id)
        if client is None or self.phase in ("done", "failed"):
            raise Gone("the run has ended" if self.phase in ("done", "failed") else
                       "unknown client: it never joined, it left, or it was silent too long")
        client.last_seen = time.monotonic()
        return client

    def next_task(self, client_id):
        """The page's task (delivered once), or None after holding the poll up to ``poll_hold`` seconds."""
        with self.cv:
            client = self._client(client_id)
            client.polls += 1
            try:
                deadline = time.monotonic() + self.poll_hold
                while True:
                    task = client.slot.task if client.slot.client == client.id else None
                    if task is not None and not task.delivered and task.failure is None:
                        task.delivered = True
                        return task
                    left = deadline - time.monotonic()
                    if left <= 0 or self.clients.get(client_id) is not client or self._stop.is_set():
                        break
                    self.cv.wait(min(left, 1.0))
                self._client(client_id)  # 410 if it was dropped or the run ended while waiting
                return None
            finally:
                client.polls -= 1
                client.last_seen = time.monotonic()

    def submit_result(self, client_id, task_id, body: bytes, metrics_header) -> None:
        """Accept a page's result for its task; Refused (the task fails at once) with the reason otherwise."""
        with self.cv:
            client = self._client(client_id)
            task = client.slot.task
            if task is None or task.id != task_id or not task.delivered or task.result or task.failure:
                raise Refused(f"unknown task {task_id!r} for client {client_id} (no such task is waiting for a "
                              f"result)")
            problem = body_problem(body, self.size)
            metrics = None
            if problem is None:
                metrics, problem = parse_metrics(metrics_header)
            if problem:
                task.failure = f"{REJECTED} page {client_id} (slot {client.slot.index}): {problem}"
                self.cv.notify_all()
                self.log(f"round {task.round}: refused the result of page {client_id} (slot {client.slot.index}): "
                         f"{problem}")
                raise Refused(problem)
            task.result = (body, metrics)
            self.cv.notify_all()

    def leave(self, client_id, why: str = "left") -> None:
        with self.cv:
            client = self.clients.pop(client_id, None)
            if client is None:
                return
            slot = client.slot
            if slot.client == client_id:
                slot.client = None
                if slot.task is not None and slot.task.result is None and slot.task.failure is None:
                    slot.task.failure = f"page {client_id} (slot {slot.index}) {why}"
            self.cv.notify_all()
        self.log(f"page {client_id} (slot {slot.index}) {why}")

    def _reap(self) -> None:
        while not self._stop.wait(0.5):
            now = time.monotonic()
            with self.cv:
                silent = [c.id for c in self.clients.values()
                          if c.polls == 0 and now - c.last_seen > self.page_timeout]
            for client_id in silent:
                self.leave(client_id, f"went silent for more than {self.page_timeout:g} s: dropped")

    # ---- the ClientApp of a slot ----------------------------------------------------------------------------

    def run_task(self, slot_index: int, round_: int, vector: bytes, config: dict, node_id, timeout: float):
        """Hand a task to the slot's page and wait for its result: (vector bytes, metrics); Refused with the
        reason when there is no page, the page goes away, refuses or does not answer within ``timeout``."""
        with self.cv:
            if not 0 <= slot_index < len(self.slots):
                raise Refused(f"no slot {slot_index}")
            slot = self.slots[slot_index]
            slot.node_id = node_id
            if slot.client is None:
                raise Refused(f"slot {slot_index} has no page now (its page left or was dropped)")
            if len(vector) != 4 * self.size:
                raise Refused(f"the global vector has {len(vector)} bytes, not {4 * self.size}")
            task = Task(str(next(self.task_ids)), round_, vector, config)
            slot.task = task
            self.cv.notify_all()
            deadline = time.monotonic() + timeout
            try:
                while task.result is None and task.failure is None and not self._stop.is_set():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        task.failure = f"page in slot {slot_index} gave no result within {timeout:g} s"
                        break
                    self.cv.wait(min(left, 1.0))
                if task.result is not None:
                    return task.result
                raise Refused(task.failure or "the federation server is stopping")
            finally:
                if slot.task is task:
                    slot.task = None

    # ---- the ServerApp's progress ---------------------------------------------------------------------------

    def begin_round(self, round_: int, nodes: int) -> None:
        with self.cv:
            self.phase, self.round, self.nodes = "running", round_, nodes
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
            for slot in self.slots:
                if slot.task is not None and slot.task.result is None and slot.task.failure is None:
                    slot.task.failure = "the run has ended"
            self.cv.notify_all()
        self.log("the run is done" if ok else f"the run failed: {self.error}")

    def status(self) -> dict:
        with self.cv:
            return {"phase": self.phase, "round": self.round, "clients": len(self.clients), "nodes": self.nodes,
                    "history": [dict(h) for h in self.history], "error": self.error, "initial": self.initial}

    def close(self) -> None:
        self._stop.set()
        with self.cv:
            self.cv.notify_all()
