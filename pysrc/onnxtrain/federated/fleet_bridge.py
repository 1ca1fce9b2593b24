"""Many Flower nodes in one process: each page that joins gets a node of its own, registered with the SuperLink
over Flower's Fleet API (protobuf over HTTP, each request signed by the node's own EC key), kept online by one
heartbeat thread for all of them, and given its instructions by pulls that the ServerApp's grid asks for when it
pushes (``pull``), plus a slow sweep.  Replies are built with Flower's own Message classes, as a ClientApp's are.

It replaces a flower-supernode (and its helper) per page, ~270 MB each: N pages cost O(1) processes (the
federation server grew by ~0.14 MB a page at 1,000 pages of a 100k-parameter model, docs/federated.md).
Wire objects come from flwr 1.42's own modules (protobuf messages, serde, inflatable objects): internal APIs,
pinned by the project's flwr requirement."""
from __future__ import annotations

import base64
import collections
import queue
import random
import threading
import time

import httpx
import numpy as np
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.app import ArrayRecord, Error, Message, MetricRecord, RecordDict
from flwr.app.message import remove_content_from_message
from flwr.common.constant import TIMESTAMP_HEADER, ErrorCode
from flwr.common.serde import message_from_proto, message_to_proto
from flwr.proto.fleet_pb2 import (ActivateNodeRequest, ActivateNodeResponse, DeactivateNodeRequest,
                                  DeactivateNodeResponse, PullMessagesRequest, PullMessagesResponse,
                                  PushMessagesRequest, PushMessagesResponse, RegisterNodeFleetRequest,
                                  RegisterNodeFleetResponse, UnregisterNodeFleetRequest,
                                  UnregisterNodeFleetResponse)
from flwr.proto.heartbeat_pb2 import SendNodeHeartbeatRequest, SendNodeHeartbeatResponse
from flwr.proto.message_pb2 import (ConfirmMessageReceivedRequest, ConfirmMessageReceivedResponse,
                                    PullObjectRequest, PullObjectResponse, PushObjectRequest, PushObjectResponse)
from flwr.proto.node_pb2 import Node
from flwr.supercore.constant import FLEET_HTTP_PUBLIC_KEY_HEADER, FLEET_HTTP_SIGNATURE_HEADER
from flwr.supercore.date import now
from flwr.supercore.inflatable.inflatable_object import (get_all_nested_objects, get_object_tree,
                                                        iterate_object_tree, no_object_id_recompute)
from flwr.supercore.inflatable.inflatable_utils import inflate_object_from_contents
from flwr.supercore.primitives.asymmetric import public_key_to_bytes, sign_message

from .client_app import round_settings

PROTOBUF = "application/protobuf"
TRAIN = "train"
#: Flower's SuperLink accepts heartbeat intervals from 10 s to 30 min; a node is offline after 2 intervals.
MIN_HEARTBEAT, MAX_HEARTBEAT = 10.0, 1800.0


class FleetError(RuntimeError):
    """The SuperLink refused a Fleet request or did not answer; the message names the RPC and its reason."""


class Identity:
    """A Flower node: its key pair (P-256: the SuperLink verifies any EC key; Flower's own nodes use P-384) and,
    once registered, its node id."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.public = public_key_to_bytes(self.key.public_key())
        self.public_header = base64.b64encode(self.public).decode("ascii")
        self.node_id = None
        self.next_heartbeat = 0.0
        self.instruction = None  # the Message being worked on (its reply not pushed yet)
        self.unpulled = False  # a reply was pushed that the ServerApp has not pulled yet
        self.lock = threading.Lock()

    def take(self):
        """The instruction to answer (None if there is none), answered from now on."""
        with self.lock:
            instruction, self.instruction = self.instruction, None
            return instruction

    def headers(self) -> dict:
        timestamp = now().isoformat()
        signature = sign_message(self.key, timestamp.encode("ascii"))
        return {FLEET_HTTP_PUBLIC_KEY_HEADER: self.public_header, TIMESTAMP_HEADER: timestamp,
                FLEET_HTTP_SIGNATURE_HEADER: base64.b64encode(signature).decode("ascii"),
                "Content-Type": PROTOBUF, "Accept": PROTOBUF}


class FleetClient:
    """The Fleet API of the SuperLink at ``address`` (host:port) over one keep-alive HTTP client for all nodes."""

    def __init__(self, address: str, timeout: float = 30.0):
        self.url = f"http://{address}/v1/fleet/"
        self.http = httpx.Client(timeout=timeout, limits=httpx.Limits(max_connections=16,
                                                                       max_keepalive_connections=16))
        self.requests = collections.Counter()  # RPC -> requests made

    def call(self, identity: Identity, rpc: str, request, response_type):
        self.requests[rpc] += 1
        try:
            response = self.http.post(self.url + rpc, content=request.SerializeToString(),
                                      headers=identity.headers())
        except httpx.HTTPError as e:
            raise FleetError(f"Fleet {rpc}: the SuperLink does not answer ({e})") from None
        if response.status_code != 200:
            raise FleetError(f"Fleet {rpc}: HTTP {response.status_code}: {response.text[:300]}")
        return response_type.FromString(response.content)

    def close(self) -> None:
        self.http.close()


class ObjectCache:
    """Object contents by id (content-addressed, so the round's global vector is pulled once for all nodes),
    the least recently used dropped past ``limit`` bytes."""

    def __init__(self, limit: int = 64 << 20):
        self.limit, self.size, self.items = limit, 0, collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, object_id: str):
        with self.lock:
            content = self.items.get(object_id)
            if content is not None:
                self.items.move_to_end(object_id)
            return content

    def put(self, object_id: str, content: bytes) -> None:
        with self.lock:
            if object_id not in self.items:
                self.items[object_id] = content
                self.size += len(content)
            while self.size > self.limit and len(self.items) > 1:
                self.size -= len(self.items.popitem(last=False)[1])


class FleetBridge:
    """Flower nodes for pages.  ``deliver(node_id, round, vector bytes, config) -> bool`` (set by the owner) hands
    a training instruction to the node's page (False: no page has the node now); ``log(text)`` prints a line."""

    def __init__(self, superlink: str, heartbeat_interval: float = 60.0, sweep: float = 120.0, workers: int = 2,
                 grace: float = 3.0, log=print):
        if not MIN_HEARTBEAT <= heartbeat_interval <= MAX_HEARTBEAT:
            raise ValueError(f"the heartbeat interval must be {MIN_HEARTBEAT:g} to {MAX_HEARTBEAT:g} s (Flower's "
                             f"limits), got {heartbeat_interval:g}")
        self.fleet, self.interval, self.sweep, self.log = FleetClient(superlink), heartbeat_interval, sweep, log
        self.deliver, self.grace = None, grace
        self.closing = []  # (when, identity) of nodes to take offline
        self.lock = threading.Lock()
        self.nodes = {}  # node id -> Identity, the open ones
        self.cache = ObjectCache()
        self.vectors = {}  # content id -> the vector's bytes, of the last two instructions' contents
        self.pulls = queue.Queue()
        self.queued = set()
        self._stop = threading.Event()
        self.threads = [threading.Thread(target=self._heartbeats, daemon=True, name="fleet-heartbeats"),
                        threading.Thread(target=self._sweep, daemon=True, name="fleet-sweep")]
        self.threads += [threading.Thread(target=self._puller, daemon=True, name=f"fleet-pull-{i}")
                         for i in range(workers)]
        for thread in self.threads:
            thread.start()

    # ---- nodes ----------------------------------------------------------------------------------------------

    def open(self) -> int:
        """A new node, registered and online: its node id.  FleetError when the SuperLink refuses."""
        identity = Identity()
        self.fleet.call(identity, "register-node", RegisterNodeFleetRequest(public_key=identity.public),
                        RegisterNodeFleetResponse)
        reply = self.fleet.call(identity, "activate-node", ActivateNodeRequest(
            public_key=identity.public, heartbeat_interval=self.interval), ActivateNodeResponse)
        identity.node_id = reply.node_id
        identity.next_heartbeat = time.monotonic() + self.interval * random.uniform(0.3, 0.5)
        with self.lock:
            self.nodes[identity.node_id] = identity
        return identity.node_id

    def close(self, node_id: int, why: str) -> None:
        """The node's page is gone (``why``): a reply in flight becomes an error reply (a failure the strategy
        counts); the node goes offline and is unregistered once the ServerApp has pulled its reply (``pulled``),
        at once if it owes none, else after ``grace`` seconds at most.  Not before: the SuperLink answers the
        ServerApp's pull for an offline node's instruction with "node unavailable" even when its reply is there,
        so a page that sent its result and closed its tab would lose it."""
        with self.lock:
            identity = self.nodes.pop(node_id, None)
        if identity is None:
            return
        self._push_error(identity, why)
        if identity.unpulled:
            with self.lock:
                self.closing.append((time.monotonic() + self.grace, identity))
        else:
            self._offline(identity)

    def pulled(self, node_ids) -> None:
        """The ServerApp pulled the replies of ``node_ids``: those of them that are closing go offline now."""
        ids = set(node_ids)
        with self.lock:
            for identity in self.nodes.values():
                if identity.node_id in ids:
                    identity.unpulled = False
            due = [i for _, i in self.closing if i.node_id in ids]
            self.closing = [(at, i) for at, i in self.closing if i.node_id not in ids]
        for identity in due:
            self._offline(identity)

    def _offline(self, identity: Identity) -> None:
        node_id = identity.node_id
        for rpc, request, kind in (("deactivate-node", DeactivateNodeRequest(node_id=node_id),
                                    DeactivateNodeResponse),
                                   ("unregister-node", UnregisterNodeFleetRequest(node_id=node_id),
                                    UnregisterNodeFleetResponse)):
            try:
                self.fleet.call(identity, rpc, request, kind)
            except FleetError as e:
                self.log(f"node {node_id}: {e}")

    def _close_due(self, everything: bool = False) -> None:
        moment = time.monotonic()
        with self.lock:
            due = [i for at, i in self.closing if everything or at <= moment]
            self.closing = [(at, i) for at, i in self.closing if not (everything or at <= moment)]
        for identity in due:
            self._offline(identity)

    def forget(self, node_id: int):
        """Stop speaking for the node without telling the SuperLink (as if this process died): the SuperLink
        marks it offline after two heartbeat intervals.  Returns its identity."""
        with self.lock:
            return self.nodes.pop(node_id, None)

    def _heartbeats(self) -> None:
        while not self._stop.wait(0.5):
            self._close_due()
            moment = time.monotonic()
            with self.lock:
                due = [i for i in self.nodes.values() if i.next_heartbeat <= moment]
            for identity in due:
                identity.next_heartbeat = moment + self.interval * random.uniform(0.4, 0.5)
                try:
                    ok = self.fleet.call(identity, "send-node-heartbeat", SendNodeHeartbeatRequest(
                        node=Node(node_id=identity.node_id), heartbeat_interval=self.interval),
                        SendNodeHeartbeatResponse).success
                    if not ok:
                        self.log(f"node {identity.node_id}: the SuperLink does not know it any more")
                except FleetError as e:
                    if identity.node_id in self.nodes:
                        self.log(f"node {identity.node_id}: {e}")

    # ---- instructions ---------------------------------------------------------------------------------------

    def pull(self, node_ids) -> int:
        """Pull instructions for those of ``node_ids`` that are this bridge's (the grid pushed them some);
        how many were queued."""
        count = 0
        with self.lock:
            for node_id in node_ids:
                if node_id in self.nodes and node_id not in self.queued:
                    self.queued.add(node_id)
                    self.pulls.put(node_id)
                    count += 1
        return count

    def _sweep(self) -> None:
        """Each idle node is pulled once per ``sweep`` seconds too, should a hint from the grid be lost."""
        while not self._stop.wait(max(1.0, self.sweep / 20)):
            with self.lock:
                idle = [n for n, i in self.nodes.items() if i.instruction is None]
            self.pull(random.sample(idle, max(1, len(idle) // 20)) if idle else [])

    def _puller(self) -> None:
        while not self._stop.is_set():
            try:
                node_id = self.pulls.get(timeout=0.5)
            except queue.Empty:
                continue
            with self.lock:
                self.queued.discard(node_id)
                identity = self.nodes.get(node_id)
            if identity is None:
                continue
            try:
                self._receive(identity)
            except Exception as e:  # one node's failure is logged, the others go on
                self.log(f"node {node_id}: pulling its instruction failed: {type(e).__name__}: {e}")

    def _receive(self, identity: Identity) -> None:
        node = Node(node_id=identity.node_id)
        got = self.fleet.call(identity, "pull-messages", PullMessagesRequest(node=node), PullMessagesResponse)
        if not got.messages_list:
            return
        header, tree = message_from_proto(got.messages_list[0]), got.message_object_trees[0]
        run_id = header.metadata.run_id
        contents = {}
        for part in iterate_object_tree(tree):
            content = self.cache.get(part.object_id)
            if content is None:
                content = self._pull_object(identity, run_id, part.object_id, tree.object_id)
                if part.object_id != tree.object_id:  # the Message object itself is this node's only
                    self.cache.put(part.object_id, content)
            contents[part.object_id] = content
        self.fleet.call(identity, "confirm-message-received", ConfirmMessageReceivedRequest(
            node=node, run_id=run_id, message_object_id=tree.object_id), ConfirmMessageReceivedResponse)
        message = inflate_object_from_contents(tree.object_id, contents)
        message.metadata.__dict__["_message_id"] = tree.object_id
        self._push_error(identity, "a newer instruction came for this node before its page answered")
        with identity.lock:  # a reply needs the instruction's metadata only
            identity.instruction = remove_content_from_message(message)
        problem = self._hand_over(identity, message, tree.children[0].object_id if tree.children else "")
        if problem:
            self._push_error(identity, problem)

    def _pull_object(self, identity: Identity, run_id: int, object_id: str, message_id: str,
                     patience: float = 120.0) -> bytes:
        """An object of a pulled message.  The grid pushes a message before its objects, so one may not be
        available yet: retried with a growing pause for up to ``patience`` seconds (as Flower's pull_objects)."""
        pause, give_up = 0.1, time.monotonic() + patience
        while True:
            answer = self.fleet.call(identity, "pull-object", PullObjectRequest(
                node=Node(node_id=identity.node_id), run_id=run_id, object_id=object_id), PullObjectResponse)
            if answer.object_found and answer.object_available:
                return answer.object_content
            if not answer.object_found or time.monotonic() > give_up or self._stop.is_set():
                raise FleetError(f"object {object_id} of message {message_id} is "
                                 f"{'not available' if answer.object_found else 'unknown to the SuperLink'}")
            time.sleep(pause)
            pause = min(2 * pause, 2.0)

    def _hand_over(self, identity: Identity, message: Message, content_id: str):
        """Give the instruction to the node's page; the reason it cannot be, or None.  Pages given the same
        content (``content_id``: a round's global vector and config) share one copy of the vector's bytes."""
        if message.metadata.message_type != TRAIN:
            return f"a page node only trains; it got a {message.metadata.message_type!r} message"
        try:
            vector = message.content["arrays"].to_numpy_ndarrays()[0].astype(np.float32)
            config = message.content["config"]
            round_, settings = int(config["server-round"]), round_settings(config)
        except (KeyError, IndexError, ValueError, TypeError) as e:
            return f"the instruction has no parameter vector and round config ({e})"
        with self.lock:
            data = self.vectors.get(content_id)
            if data is None:
                data = vector.tobytes()
                self.vectors = {content_id: data, **dict(list(self.vectors.items())[:1])}  # this round's, the last
        if self.deliver is None or not self.deliver(identity.node_id, round_, data, settings):
            return f"node {identity.node_id} has no page now"
        return None

    # ---- replies --------------------------------------------------------------------------------------------

    def reply(self, node_id: int, vector: bytes, metrics: dict) -> None:
        """The page's trained vector and metrics, pushed as the reply to the node's instruction."""
        identity = self.nodes.get(node_id)
        instruction = None if identity is None else identity.take()
        if instruction is None:
            raise FleetError(f"node {node_id} has no instruction to answer")
        trained = np.frombuffer(vector, np.float32).copy()
        self._push(identity, Message(RecordDict({"arrays": ArrayRecord([trained]), "metrics": MetricRecord(metrics)}),
                                     reply_to=instruction))

    def fail(self, node_id: int, reason: str) -> None:
        """An error reply to the node's instruction: a failure (or, with REJECTED in it, a rejection) that the
        strategy's guard counts with ``reason``."""
        identity = self.nodes.get(node_id)
        if identity is not None:
            self._push_error(identity, reason)

    def _push_error(self, identity: Identity, reason: str) -> None:
        instruction = identity.take()
        if instruction is None:
            return
        try:
            self._push(identity, Message(Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=reason),
                                         reply_to=instruction))
        except FleetError as e:
            self.log(f"node {identity.node_id}: its error reply ({reason}) was not delivered: {e}")

    def _push(self, identity: Identity, message: Message) -> None:
        identity.unpulled = True
        node = Node(node_id=identity.node_id)
        with no_object_id_recompute():
            message.metadata.__dict__["_message_id"] = message.object_id
            tree = get_object_tree(message)
            objects = get_all_nested_objects(message)
            proto = message_to_proto(remove_content_from_message(message) if message.has_content() else message)
        pushed = self.fleet.call(identity, "push-messages", PushMessagesRequest(
            node=node, messages_list=[proto], message_object_trees=[tree], clientapp_runtime_list=[0.0]),
            PushMessagesResponse)
        for object_id in pushed.objects_to_push:
            self.fleet.call(identity, "push-object", PushObjectRequest(
                node=node, run_id=message.metadata.run_id, object_id=object_id,
                object_content=objects[object_id].deflate(), session_id=pushed.session_id), PushObjectResponse)

    def close_all(self) -> None:
        """Stop speaking for every node (the federation stops its SuperLink next, so they are not deactivated
        one by one: with a thousand pages that would take minutes)."""
        self._stop.set()
        with self.lock:
            self.nodes.clear()
            self.closing = []
        self.fleet.close()
