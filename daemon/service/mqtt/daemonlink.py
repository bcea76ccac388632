"""The bridge's link to the daemon: one :class:`~edge_agentd.client.zmqclient.Client`, many asks.

The link is a client of the daemon like any other, on one of its bound endpoints, so an ask over
MQTT meets the same queue, limits, ``busy``, deadlines and counters as one over ZeroMQ. Its thread
owns the Client (requests in flight with :meth:`Client.send`, replies read with
:meth:`Client.receive`), the asks waiting to be sent, and the runs waiting for their result.

A failure is contained: one ask's or one reply's goes to that ask as ``internal``; one that ends
the thread is caught by its supervisor, which answers every waiting ask, reports the link as
``restarting`` in ``status`` and starts it again, and after :data:`MAX_RESTARTS` in a row reports
``failed`` (docs/mqtt.md, *Reliability*).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import zmq

from edge_agentd.client.zmqclient import Client, DaemonError
from edge_agentd.protocol.mqttwire import Ask
from edge_agentd.protocol.wire import PROTOCOL_VERSION, ErrorCode
from edge_agentd.service.mqtt.askkeys import source_problem, with_journal_key
from edge_agentd.service.mqtt.discovery import QUESTION_MAX_CHARS
from edge_agentd.service.mqtt.state import BridgeState, log
from edge_agentd.service.threads.daemonthread import DaemonThread
from edge_agentd.service.threads.wakeup import WakeUp

WAITING_LIMIT = 64
"""Asks between the broker and the daemon's answer: waiting here to be sent, or sent and not yet
answered (queued or running in the daemon). Beyond, an ask gets ``busy`` at once."""
STATUS_ID = "mqtt-status"
STATUS_POLL_IDLE_S = 15.0
STATUS_POLL_ACTIVE_S = 2.0
DRAIN_S = 2.0
"""At shutdown, how long replies still coming from the daemon are waited for."""
MAX_RESTARTS = 5
HEALTHY_S = 60.0
"""A link that ran this long before failing starts its count of restarts afresh."""


def error_reply(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "kind": "error", "code": code, "message": message[:300]}


@dataclasses.dataclass
class Pending:
    """An ask handed to the link (a run, or a cancel of one): where its replies go."""

    reply_to: str | None
    request_id: Any
    correlation: bytes | None
    stream: bool = False
    query: str = ""
    question: bool = False
    """Home Assistant's text entity asked it: the answer goes to the answer sensor."""
    target: Any = None
    """A cancel's: the requester's id of the run it cancels (the daemon knows another)."""


Deliver = Callable[[Pending, dict[str, Any]], None]


class DaemonLink:
    """Asks in, replies out, in arrival order (so a cancel finds the run asked before it)."""

    def __init__(
        self,
        state: BridgeState,
        *,
        on_final: Deliver,
        on_progress: Deliver,
        on_daemon_status: Callable[[dict[str, Any]], None],
        on_started: Callable[[], None],
        backoff_s: float = 2.0,
    ) -> None:
        self.state = state
        self.backoff_s = backoff_s
        """The first restart's wait; each one after waits twice as long, up to 30 s."""
        self.endpoint = ""
        self._on_final = on_final
        self._on_progress = on_progress
        self._on_daemon_status = on_daemon_status
        self._on_started = on_started
        self._inbox: collections.deque[tuple[Ask, Pending]] = collections.deque()
        self._pending: dict[str, Pending] = {}
        self._owned: dict[tuple[str, Any], str] = {}
        """(reply topic, requester's id) -> the daemon-side id of that run, for cancels: MQTT
        does not say who published, so the reply topic and the id are the run's owner."""
        self._active = False
        self._started = False
        self._status_due = True
        self._stop = threading.Event()
        self._wakeup = WakeUp()
        self.thread = DaemonThread("mqtt-bridge", self._supervise, ask_stop=self._ask_stop)
        """The link's thread: a crash that escapes its supervisor shows in ``status``."""

    # -- any thread --------------------------------------------------------------------------------

    def start(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.thread.start()

    def waiting(self) -> int:
        with self.state.lock:
            return len(self._inbox) + len(self._pending)

    def enqueue(self, ask: Ask, pending: Pending) -> bool:
        """Take an ask for the daemon; False (nothing taken) when :data:`WAITING_LIMIT` are."""
        with self.state.lock:
            if len(self._inbox) + len(self._pending) >= WAITING_LIMIT:
                return False
            self._inbox.append((ask, pending))
        self._wakeup.wake()
        return True

    def stop(self, join_s: float) -> None:
        self.thread.stop(join_s)
        self._wakeup.close()

    def _ask_stop(self) -> None:
        self._stop.set()
        self._wakeup.wake()

    # -- the supervisor ----------------------------------------------------------------------------

    def _supervise(self) -> None:
        restarts = 0
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self._serve()
                self.state.set_daemon_link("stopped")
                return
            except Exception as exc:  # noqa: BLE001 - reported, answered and restarted below
                restarts = 1 if time.monotonic() - began > HEALTHY_S else restarts + 1
                problem = f"the link to the daemon failed ({type(exc).__name__})"
                log.exception("mqtt: %s; every waiting ask is answered 'internal'", problem)
                self.state.count("link_failures")
                self._answer_all("internal", "the bridge lost this ask; ask again")
                if restarts > MAX_RESTARTS:
                    self.state.set_daemon_link("failed", f"{problem}; gave up after {restarts}")
                    self.state.set_link("failed", f"{problem}; no MQTT ask is answered")
                    self._refuse_while_failed()
                    return
                self.state.set_daemon_link("restarting", problem)
                self._stop.wait(min(self.backoff_s * 2.0 ** (restarts - 1), 30.0))

    def _refuse_while_failed(self) -> None:
        """Given up: each ask still gets its one reply, ``internal``, until the daemon stops."""
        while not self._stop.wait(0.2):
            self._answer_all("internal", "the bridge's link to the daemon has failed")

    def _answer_all(self, code: ErrorCode, message: str) -> None:
        with self.state.lock:
            left = list(self._pending.values()) + [pending for _, pending in self._inbox]
            self._pending.clear()
            self._owned.clear()
            self._inbox.clear()
        for pending in left:
            self._finish(pending, error_reply(code, message))

    # -- the link's thread -------------------------------------------------------------------------

    def _serve(self) -> None:
        client = Client(self.endpoint, retries=0)
        try:
            poller = zmq.Poller()
            poller.register(client.socket, zmq.POLLIN)
            poller.register(self._wakeup.fileno(), zmq.POLLIN)
            self._status_due = True
            if not self._started:
                self._started = True
                self._on_started()
            self.state.set_daemon_link("up")
            next_status = 0.0
            while not self._stop.is_set():
                now = time.monotonic()
                if self._status_due or now >= next_status:
                    next_status = now + self._poll_status(client)
                self._forward(client)
                for item, _ in poller.poll(round(max(0.0, next_status - now) * 1000)):
                    if item is client.socket:
                        self._read_replies(client)
                    else:
                        self._wakeup.drain()
            self._drain(client)
        finally:
            client.close()

    def _poll_status(self, client: Client) -> float:
        """Ask the daemon's status (the busy light, the info); when to ask next."""
        self._status_due = False
        with contextlib.suppress(DaemonError):  # busy: the next poll asks again
            client.send("status", {}, request_id=STATUS_ID)
        with self.state.lock:
            active = bool(self._pending) or self._active
        return STATUS_POLL_ACTIVE_S if active else STATUS_POLL_IDLE_S

    def _forward(self, client: Client) -> None:
        while True:
            with self.state.lock:
                if not self._inbox:
                    return
                ask, pending = self._inbox.popleft()
            try:
                if ask.op == "cancel":
                    self._send_cancel(client, ask, pending)
                else:
                    self._send_run(client, ask, pending)
            except Exception:  # noqa: BLE001 - contained to this ask, which is answered
                log.exception("mqtt: forwarding an ask failed; it is answered 'internal'")
                self.state.count("internal_errors")
                self._forget_all_of(pending)
                self._finish(pending, error_reply("internal", "the bridge failed on this ask"))

    def _send_run(self, client: Client, ask: Ask, pending: Pending) -> None:
        owner = (
            None if pending.question or ask.request_id is None else (ask.reply_to, ask.request_id)
        )
        pending.stream = ask.stream
        pending.query = str(ask.fields.get("query", ""))[:QUESTION_MAX_CHARS]
        problem = source_problem(ask.fields)
        if problem is not None:
            self._finish(pending, error_reply("bad_request", problem))
            return
        internal = client_id()
        with self.state.lock:
            duplicate = owner is not None and owner in self._owned
            if not duplicate:
                self._pending[internal] = pending
                if owner is not None:
                    self._owned[owner] = internal
        if duplicate:
            # As over ZeroMQ: an id still queued or running is refused, so a cancel names one run.
            self._finish(
                pending,
                error_reply(
                    "bad_request",
                    "an ask with this id for this reply topic is still queued or running; use a "
                    "fresh id per ask",
                ),
            )
            return
        fields = with_journal_key(ask.fields, pending.reply_to, ask.request_id, pending.correlation)
        self._send(client, internal, "run", fields)

    def _send_cancel(self, client: Client, ask: Ask, pending: Pending) -> None:
        pending.target = ask.fields["target"]
        internal = client_id()
        with self.state.lock:
            run = self._owned.get((ask.reply_to, pending.target))
            self._pending[internal] = pending
        if run is None:
            # Not this reply topic's, or already answered: the daemon is asked to cancel a run
            # no one has, so it answers exactly as for another connection's run (and judges the
            # cancel's other fields as it judges any).
            self.state.count("cancels_unmatched")
            run = client_id()
        self._send(client, internal, "cancel", {**ask.fields, "target": run})

    def _send(self, client: Client, internal: str, op: str, fields: dict[str, Any]) -> None:
        try:
            client.send(op, fields, request_id=internal)
        except DaemonError as exc:
            # bad_request: a value the wire cannot carry (a number beyond 64 bits, a lone
            # surrogate); busy: the daemon's socket is full. Nothing was sent.
            with self.state.lock:
                pending = self._pending.pop(internal)
                self._disown(internal, pending)
            code: ErrorCode = "busy" if exc.code == "busy" else "bad_request"
            self._finish(pending, error_reply(code, exc.message))
            return
        self._status_due = True

    def _forget_all_of(self, pending: Pending) -> None:
        with self.state.lock:
            for internal in [k for k, v in self._pending.items() if v is pending]:
                del self._pending[internal]
                self._disown(internal, pending)

    def _disown(self, internal: str, pending: Pending) -> None:
        """Forget a finished run's owner (with the lock held)."""
        if pending.target is not None or pending.reply_to is None or pending.question:
            return  # a cancel, or a question: never owned
        owner = (pending.reply_to, pending.request_id)
        if self._owned.get(owner) == internal:
            del self._owned[owner]

    def _read_replies(self, client: Client) -> None:
        for _ in range(256):
            try:
                reply = client.receive(0)
            except DaemonError as exc:
                log.warning("mqtt: the daemon sent an unreadable reply: %s", exc.message)
                continue
            if reply is None:
                return
            if reply.get("id") == STATUS_ID:
                if reply.get("kind") == "result":
                    self._daemon_status(reply)
                continue
            self._on_reply(reply)

    def _daemon_status(self, reply: dict[str, Any]) -> None:
        self._active = reply.get("state") != "ready"
        try:
            self._on_daemon_status(reply)
        except Exception:  # noqa: BLE001 - the next poll tries again
            self.state.count("internal_errors")
            log.exception("mqtt: publishing the daemon's status failed")

    def _on_reply(self, reply: dict[str, Any]) -> None:
        internal = reply.get("id")
        kind = reply.get("kind")
        with self.state.lock:
            pending = self._pending.get(internal) if isinstance(internal, str) else None
            if isinstance(internal, str) and pending is not None and kind in ("result", "error"):
                del self._pending[internal]
                self._disown(internal, pending)
        if pending is None:
            log.debug("mqtt: a reply for no known ask (%s)", kind)
            return
        if kind in ("accepted", "event"):
            if pending.stream and pending.reply_to is not None:
                self._progress(pending, reply)
            return
        self._status_due = True
        self._finish(pending, reply)

    def _progress(self, pending: Pending, reply: dict[str, Any]) -> None:
        try:
            self._on_progress(pending, reply)
        except Exception:  # noqa: BLE001 - a lost progress reply; the result still comes
            self.state.count("internal_errors")
            log.exception("mqtt: passing on a progress reply failed")

    def _finish(self, pending: Pending, reply: dict[str, Any]) -> None:
        """The final reply of one ask; a failure to pass it on is counted and logged."""
        try:
            self._on_final(pending, reply)
        except Exception:  # noqa: BLE001 - contained to this ask
            self.state.count("internal_errors")
            log.exception("mqtt: passing on a final reply failed")

    def _drain(self, client: Client) -> None:
        """Shutdown: the daemon has answered every run; pass on what is still in the socket."""
        until = time.monotonic() + DRAIN_S
        while time.monotonic() < until:
            with self.state.lock:
                if not self._pending and not self._inbox:
                    break
            if client.socket.poll(50):
                self._read_replies(client)
        self._answer_all("shutting_down", "the daemon shut down before the run was answered")


def client_id() -> str:
    """A fresh daemon-side request id (the requester's own id never reaches the daemon)."""
    return uuid.uuid4().hex


__all__ = ["WAITING_LIMIT", "DaemonLink", "Pending", "error_reply"]
