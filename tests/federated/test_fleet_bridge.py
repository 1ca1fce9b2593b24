"""The fleet bridge: every page a Flower node of one process (no flower-supernode per page).  A real Flower run
(flower-superlink, flwr run, the ServerApp with FedAvg) with many simulated pages that speak exactly what
web/lib/src/federation.mjs speaks; a page that vanishes mid-round; node expiry against a real SuperLink; and each
refusal of the pages' API (forged clients, foreign tasks, oversized and truncated bodies, join floods)."""
from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from flwr.proto.fleet_pb2 import ActivateNodeRequest, ActivateNodeResponse
from page_wire import SimPage, aggregate_checks, rounds_of, run_pages_now
from test_federation import ROOT, Federate, digits, post  # noqa: F401 (digits: a fixture)

from onnxtrain.federated.bridge_http import Federation, make_server
from onnxtrain.federated.bridge_state import REJECTED, BridgeState
from onnxtrain.federated.fleet_bridge import FleetBridge, FleetError
from onnxtrain.federated.model import FederatedModel
from onnxtrain.federated.processes import child_env, free_port, tool

PAGES = 12


def supernodes_running() -> list:
    found = []
    for line in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines():
        if "flower-supernode" in line and str(ROOT) not in line:
            found.append(line)
    return found


@pytest.mark.slow
def test_many_pages_in_one_flower_run_aggregate_as_flowers_fedavg(digits, tmp_path):
    before = supernodes_running()
    fed = Federate(tmp_path, ["--artifacts", str(digits / "mlp"), "--eval", str(digits / "data" / "test.csv"),
                              "--rounds", "3", "--min-clients", str(PAGES - 1), "--page-timeout", "3",
                              "--round-timeout", "60", "--linger", "20"])
    try:
        pages = [SimPage(i, {1: "nan"} if i == 0 else {2: "vanish"} if i == 1 else {}) for i in range(PAGES)]
        run_pages_now(fed.url, pages, 240)
        assert supernodes_running() == before, "a page must not cost a flower-supernode"
        status = fed.status()
    finally:
        fed.proc.terminate()
        fed.proc.wait(30)
    log = fed.text()
    assert status["phase"] == "done", log
    history = {h["round"]: h for h in status["history"]}
    # round 1: every page trained; page 0's NaN update was refused at once (400) and counted as rejected
    assert pages[0].refusals == [(1, 400, "non-finite values: 1 of 2410 parameters are NaN or infinite")]
    assert history[1]["results"] == PAGES - 1 and len(history[1]["rejected"]) == 1, history[1]
    assert "NaN" in history[1]["rejected"][0]
    # round 2: page 1 took its task and vanished: a failure the strategy saw, from its own node
    assert pages[1].end == "vanished in round 2"
    assert history[2]["results"] == PAGES - 1 and history[2]["failures"] == 1, history[2]
    assert re.search(r"round 2: failure: node (\d+) round 2: page [0-9a-f]+ \(node \1\) went silent for more than "
                     r"3 s: dropped", log), log
    assert history[3]["results"] == PAGES - 1 and history[3]["failures"] == 0, history[3]
    # the others took part in every round, and each page's update was its own
    by_round = rounds_of(pages)
    assert sorted(len(by_round[r]) for r in (1, 2, 3)) == [PAGES - 1, PAGES, PAGES]
    checks = aggregate_checks(pages)
    assert [c[0] for c in checks] == [1, 2]
    for round_, results, to_flower, bound, to_float64 in checks:
        assert results == PAGES - 1
        assert to_flower <= bound, (round_, to_flower, bound)
        assert to_float64 <= 2 * bound, (round_, to_float64, bound)
    assert all(p.end.startswith("gone: the run has ended") for p in pages if p.index != 1), [p.end for p in pages]


# ---- the pages' API's refusals, with the real HTTP server and a stand-in for the Flower nodes -------------------

class Nodes:
    """A stand-in for FleetBridge: hands out node ids and records what reaches Flower."""

    def __init__(self):
        self.next_id, self.replies, self.failures, self.closed = 100, [], [], []

    def open(self):
        self.next_id += 1
        return self.next_id

    def close(self, node_id, why):
        self.closed.append((node_id, why))

    def reply(self, node_id, vector, metrics):
        self.replies.append((node_id, vector, metrics))

    def fail(self, node_id, reason):
        self.failures.append((node_id, reason))


@pytest.fixture
def api(digits):
    lines, nodes = [], Nodes()
    model = FederatedModel(str(digits / "mlp"))
    state = BridgeState(model.size, nodes, page_timeout=30, poll_hold=0.3, join_rate=5, log=lines.append)
    server = make_server(Federation(state, model, {"rounds": 1}, None, ["output"], "secret", False), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", state, nodes, lines, model.size
    state.close()
    server.shutdown()
    server.server_close()


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def raw_post(url: str, path: str, announced: int, body: bytes) -> tuple:
    """A POST whose body stops short of its Content-Length (the sender closes its side)."""
    host, port = url[len("http://"):].split(":")
    with socket.create_connection((host, int(port)), 10) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n"
                  f"Content-Length: {announced}\r\nX-Metrics: {{\"num-examples\": 3}}\r\n\r\n".encode() + body)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, text = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), text.decode()


def test_the_pages_api_refuses_forgeries_foreign_tasks_bad_bodies_and_floods(api):
    url, state, nodes, lines, size = api
    client = json.loads(post(f"{url}/fed/join")[1])["client"]
    other = json.loads(post(f"{url}/fed/join")[1])["client"]
    assert state.deliver(101, 1, np.zeros(size, np.float32).tobytes(), {"epochs": 1})
    assert state.deliver(102, 1, np.ones(size, np.float32).tobytes(), {"epochs": 1})
    code, body, headers = get(f"{url}/fed/next?client={client}")
    assert code == 200 and headers["X-Round"] == "1" and body == np.zeros(size, np.float32).tobytes()
    task = headers["X-Task"]
    good = np.full(size, 0.5, np.float32).tobytes()
    metrics = {"X-Metrics": '{"num-examples": 3}', "Content-Type": "application/octet-stream"}

    # a forged client id: 410 on every call, and nothing reaches a node
    for call in (lambda: get(f"{url}/fed/next?client=f00dfeedf00dfeed")[0],
                 lambda: post(f"{url}/fed/result?client=f00dfeedf00dfeed&task={task}", good, metrics)[0],
                 lambda: post(f"{url}/fed/leave?client=f00dfeedf00dfeed")[0]):
        assert call() == 410
    # the other page answering this page's task (it was not given it): 400
    code, text = post(f"{url}/fed/result?client={other}&task={task}", good, metrics)
    assert code == 400 and b"unknown task" in text
    # a body far larger than a parameter vector: 413 before it is read; one cut short: 400
    code, text = post(f"{url}/fed/result?client={client}&task={task}", good + b"\0" * 8192, metrics)
    assert code == 413 and f"({4 * size + 4096} bytes at most)".encode() in text
    code, text = raw_post(url, f"/fed/result?client={client}&task={task}", 4 * size, good[:1000])
    assert code == 400 and text == f"truncated body: 1000 of the {4 * size} bytes its Content-Length announced came"
    code, text = post(f"{url}/fed/join", b"x" * ((1 << 20) + 1))
    assert code == 413
    assert nodes.replies == [] and nodes.failures == []
    # the task still waits for its page's own good answer, which reaches its node alone
    assert post(f"{url}/fed/result?client={client}&task={task}", good, metrics)[0] == 200
    assert nodes.replies == [(101, good, {"num-examples": 3})]
    assert post(f"{url}/fed/result?client={client}&task={task}", good, metrics)[0] == 400  # answered once only

    # a flood of joins: 5 a second pass (2 were taken above, the bucket refills), the rest 429 with the reason
    t0 = time.monotonic()
    answers = [post(f"{url}/fed/join") for _ in range(20)]
    allowed = 5 + 5 * (time.monotonic() - t0)
    refused = [a for a in answers if a[0] == 429]
    assert sum(a[0] == 200 for a in answers) <= allowed and len(refused) + sum(a[0] == 200 for a in answers) == 20
    assert refused and all(a[1] == b"too many pages are joining at once; try again in a second" for a in refused)
    assert len(state.clients) == 2 + sum(a[0] == 200 for a in answers)
    text = "\n".join(lines)
    for reason in ("refused GET /fed/next: unknown client", "refused POST /fed/result: unknown client",
                   "refused POST /fed/leave: unknown client", "refused POST /fed/result: unknown task",
                   "larger than /fed/result takes", "refused POST /fed/result: truncated body",
                   "refused POST /fed/join: too many pages are joining at once"):
        assert reason in text, (reason, text)
    # a reloaded page joins again as a new node; its old node was closed
    time.sleep(1.2)
    assert post(f"{url}/fed/leave?client={client}")[0] == 200
    again = json.loads(post(f"{url}/fed/join")[1])["client"]
    assert again != client and state.clients[again].node_id not in (101, 102)
    assert (101, f"page {client} (node 101) left") in nodes.closed


def test_a_refused_update_is_a_rejection_of_its_own_node(api):
    url, state, nodes, lines, size = api
    client = json.loads(post(f"{url}/fed/join")[1])["client"]
    node = state.clients[client].node_id
    state.deliver(node, 2, np.zeros(size, np.float32).tobytes(), {})
    _, _, headers = get(f"{url}/fed/next?client={client}")
    bad = np.zeros(size, np.float32)
    bad[5] = np.inf
    code, text = post(f"{url}/fed/result?client={client}&task={headers['X-Task']}", bad.tobytes(),
                      {"X-Metrics": '{"num-examples": 3}'})
    assert code == 400 and text == b"non-finite values: 1 of 2410 parameters are NaN or infinite"
    assert nodes.failures == [(node, f"{REJECTED} page {client} (node {node}): {text.decode()}")]
    assert nodes.replies == []


# ---- node liveness against a real SuperLink ---------------------------------------------------------------------

@pytest.fixture
def superlink(tmp_path):
    port = free_port()
    log = open(tmp_path / "superlink.log", "w")
    proc = subprocess.Popen([tool("flower-superlink"), "--insecure", "--host", "127.0.0.1", "--port", str(port),
                             "--database", ":flwr-in-memory:"], stdout=log, stderr=subprocess.STDOUT,
                            env=child_env(str(tmp_path / "flwr")), start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "superlink.log").read_text()
            time.sleep(0.2)
    yield f"127.0.0.1:{port}"
    import os
    import signal
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(20)
    log.close()


@pytest.mark.slow
def test_a_node_that_stops_heartbeating_expires_and_a_closed_one_is_gone(superlink):
    """ActivateNode succeeds only for a node the SuperLink holds offline: the one whose heartbeats stopped (as if
    the bridge died) is offline after two intervals; the one still heartbeating stays online."""
    lines = []
    bridge = FleetBridge(superlink, heartbeat_interval=10, log=lines.append)
    try:
        kept, dropped, closed = bridge.open(), bridge.open(), bridge.open()
        assert len({kept, dropped, closed}) == 3
        lost = bridge.forget(dropped)
        bridge.close(closed, "left")
        again = bridge.open()
        assert again not in (kept, dropped, closed)  # a page joining again is a new node
        keeper = bridge.nodes[kept]

        def activate(identity):
            try:
                bridge.fleet.call(identity, "activate-node", ActivateNodeRequest(
                    public_key=identity.public, heartbeat_interval=10), ActivateNodeResponse)
                return True
            except FleetError:
                return False
        assert not activate(lost) and not activate(keeper)  # both online now
        time.sleep(22)  # two intervals and a little
        assert activate(lost), "the node whose heartbeats stopped should be offline by now"
        assert not activate(keeper), "the node that kept heartbeating should still be online"
        assert bridge.fleet.requests["send-node-heartbeat"] >= 2
    finally:
        bridge.close_all()
    assert not [line for line in lines if "HTTP" in line], lines
