"""The bridge: MQTT asks become protocol v1 runs on the daemon's own socket.

It is a client of the daemon like any other: a DEALER connected to one of the daemon's bound
endpoints, in its own thread. So an ask over MQTT meets the same queue, limits, ``busy``,
deadlines and counters as one over ZeroMQ, and the bridge never reaches into the serving loop.

Threads:

- paho's network thread runs the MQTT connection (reconnecting with backoff) and the callbacks,
  which parse each message and hand asks over through a bounded inbox;
- the bridge thread owns the DEALER: it forwards asks, matches replies to their reply topics,
  and polls ``status`` for the busy sensor and the retained ``info``;
- the sensor thread calls the sensor skills every ``sensor_interval_s`` and publishes readings,
  so a hung sysfs read can only delay readings, never answers.

Every outgoing reply is QoS 1, held in paho's bounded queue while the broker is away and sent
after the reconnect. A reply that cannot be queued, or is still unsent at shutdown, is counted
(``undeliverable``) and logged: nothing is dropped silently.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import ipaddress
import json
import logging
import os
import socket
import ssl
import sys
import threading
import time
import uuid
from typing import Any

import paho.mqtt.client as mqtt
import zmq
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from edge_agent.agent.registry import Registry
from edge_agent.protocol.framing import FrameError, decode_reply
from edge_agent.protocol.mqttwire import (
    OFFLINE,
    ONLINE,
    Ask,
    AskError,
    Topics,
    error_payload,
    parse_ask,
    reply_payload,
)
from edge_agent.protocol.wire import PROTOCOL_VERSION, ErrorCode, encode
from edge_agent.service.mqtt.discovery import (
    ANSWER_STATE_MAX_CHARS,
    QUESTION_MAX_CHARS,
    Discovery,
    Reading,
    collect_readings,
    encode_config,
    package_version,
)
from edge_agent.service.mqtt.settings import MqttSettings

log = logging.getLogger(__name__)

INBOX_LIMIT = 64
"""Asks parsed but not yet handed to the daemon; beyond this a flood gets ``busy`` at once."""
PENDING_LIMIT = 1024
"""Runs handed to the daemon and not yet answered (the daemon's queue bounds them far lower)."""
STATUS_POLL_IDLE_S = 15.0
STATUS_POLL_ACTIVE_S = 2.0
FIRST_READINGS_WAIT_S = 5.0
DRAIN_S = 2.0
"""At shutdown, how long replies still coming from the daemon are waited for."""
FLUSH_S = 5.0
"""At shutdown, how long unsent replies and the ``offline`` status may take to reach the broker."""


@dataclasses.dataclass
class Pending:
    """A request handed to the daemon (a run, or a cancel of one): where its replies go."""

    reply_to: str | None
    request_id: Any
    correlation: bytes | None
    stream: bool
    query: str
    question: bool = False
    target: Any = None
    """A cancel's: the requester's id of the run it cancels (the daemon knows another)."""


def _properties(correlation: bytes | None) -> Properties:
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.ContentType = "application/json"
    if correlation is not None:
        props.CorrelationData = correlation
    return props


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "kind": "error", "code": code, "message": message}


def _loopback(host: str) -> bool:
    """Whether ``host`` is this machine's loopback (which the systemd unit always allows)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: the unit's allow list holds addresses only


def _no_delay(client: mqtt.Client, userdata: Any, sock: Any) -> None:
    """Small packets leave at once: Nagle's algorithm against delayed ACKs costs ~40 ms a hop."""
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class MqttBridge:
    """One node on the broker. :meth:`start` once the daemon is bound, :meth:`stop` after it."""

    def __init__(
        self,
        settings: MqttSettings,
        *,
        registry: Registry | None = None,
        max_request_bytes: int = 64 * 1024,
        password: str | None = None,
    ) -> None:
        self.settings = settings
        self.endpoint = ""
        self.registry = registry
        self.max_request_bytes = max_request_bytes
        self.topics = Topics(settings.topic_prefix, settings.node)
        self.version = package_version()
        self.counters: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._link = "connecting"
        self._since = time.time()
        self._last_problem: str | None = None
        self._inbox: collections.deque[tuple[Ask, bytes | None, bool]] = collections.deque()
        self._pending: dict[str, Pending] = {}
        self._owned: dict[tuple[str, Any], str] = {}
        """(reply topic, requester's id) -> the daemon-side id of that run, for cancels: MQTT
        does not say who published, so the reply topic and the id are the run's owner."""
        self._unacked: dict[int, tuple[str, bool]] = {}
        """Published, not yet acknowledged: mid -> (topic, whether it is a reply to someone)."""
        self._early_acks: set[int] = set()
        self._stop = threading.Event()
        self._stopping = False
        self._first_readings = threading.Event()
        self._readings: list[Reading] = []
        self._daemon_status: dict[str, Any] = {}
        self._busy: bool | None = None
        self._status_due = True
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._threads: list[threading.Thread] = []
        self._client = self._make_client(password)

    # -- setup -------------------------------------------------------------------------------------

    def _make_client(self, password: str | None) -> mqtt.Client:
        """The paho client; TLS files are read here, so a bad one fails before the daemon serves."""
        s = self.settings
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=s.client_name,
            protocol=MQTTProtocolVersion.MQTTv5,
            reconnect_on_failure=True,
        )
        client.will_set(self.topics.status, OFFLINE, qos=1, retain=True)
        if s.username is not None:
            client.username_pw_set(s.username, password)
        if s.use_tls:
            context = ssl.create_default_context(cafile=s.ca_file)
            if s.cert_file is not None:
                context.load_cert_chain(s.cert_file, s.key_file)
            client.tls_set_context(context)
        client.max_queued_messages_set(s.buffer_messages)
        client.reconnect_delay_set(1, s.reconnect_max_s)
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_publish = self._on_publish
        client.on_socket_open = _no_delay
        return client

    def start(self, endpoint: str) -> None:
        """Start the threads, a client of the daemon at ``endpoint``; the broker is reached in the
        background (the daemon never waits for it)."""
        self.endpoint = endpoint
        for name, target in (("mqtt-bridge", self._run), ("mqtt-sensors", self._sensor_loop)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info(
            "mqtt: node %s, broker %s:%d%s%s",
            self.topics.node,
            self.settings.host,
            self.settings.broker_port,
            " (TLS)" if self.settings.use_tls else "",
            f" as {self.settings.username}" if self.settings.username else "",
        )

    def _connect(self) -> None:
        self._client.connect_async(
            self.settings.host, self.settings.broker_port, keepalive=self.settings.keepalive_s
        )
        self._client.loop_start()

    # -- state for `status` ------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The link state and the bridge's counters, for the daemon's ``status`` (any thread)."""
        with self._lock:
            return {
                "link": self._link,
                "since": round(self._since, 3),
                "last_problem": self._last_problem,
                "broker": f"{self.settings.host}:{self.settings.broker_port}",
                "tls": self.settings.use_tls,
                "node": self.topics.node,
                "prefix": self.settings.topic_prefix,
                "discovery": self.settings.discovery,
                "pending": len(self._pending),
                "unsent": sum(1 for _, reply in self._unacked.values() if reply),
                "counters": dict(self.counters),
            }

    def _set_link(self, link: str, problem: str | None = None) -> None:
        with self._lock:
            changed = link != self._link or problem != self._last_problem
            self._link = link
            if changed:
                self._since = time.time()
            if problem is not None:
                self._last_problem = problem
        if changed:
            level = logging.INFO if problem is None else logging.WARNING
            log.log(level, "mqtt: %s%s", link, f" ({problem})" if problem else "")

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counters[name] += n

    # -- paho's thread -----------------------------------------------------------------------------

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if reason.is_failure:
            self._set_link("refused", f"the broker refused the connection: {reason}")
            return
        self._set_link("connected")
        self._count("connects")
        options = SubscribeOptions(qos=1, noLocal=True)
        client.subscribe(
            [
                (self.topics.ask, options),
                (self.topics.question, options),
                (f"{self.settings.discovery_prefix}/status", options),
                (self._discovery().config_subscription, options),
            ]
        )
        self._publish(self.topics.status, ONLINE, retain=True)
        with self._lock:
            known = bool(self._daemon_status)
            busy = self._busy
        if known:  # else the daemon's first status reply publishes them
            self._publish_info()
            self._publish_discovery()
        if busy is not None:
            self._publish(self.topics.busy, "ON" if busy else "OFF", retain=True)
        self._wake()

    def _on_connect_fail(self, client: mqtt.Client, userdata: Any) -> None:
        # paho calls this from inside its `except OSError`: the error says why (refused, timed
        # out, no route to the host).
        error = sys.exc_info()[1]
        why = "cannot reach the broker" + (f": {error}" if error is not None else "")
        if os.environ.get("INVOCATION_ID") and not _loopback(self.settings.host):
            # Under systemd, the unit's IPAddressDeny=any drops the packets to any broker beyond
            # loopback (the connect times out) until a drop-in allows its address.
            why += (
                "; the systemd unit reaches only loopback unless a drop-in allows the broker's "
                "address (systemd/edge-agent.service.d/mqtt-broker.conf, docs/mqtt.md)"
            )
        self._set_link("disconnected", f"{why}; retrying with backoff")

    def _on_disconnect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if self._stopping:
            self._set_link("stopped")
        elif self._link == "refused":
            return  # the refusal is the news; paho retries with backoff
        else:
            self._set_link("disconnected", f"lost the broker: {reason}; reconnecting")

    def _on_publish(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        with self._lock:
            if self._unacked.pop(mid, None) is None:
                self._early_acks.add(mid)

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        try:
            topic = message.topic
            if topic == self.topics.ask:
                self._on_ask(message)
            elif topic == self.topics.question:
                self._on_question(message)
            elif topic == f"{self.settings.discovery_prefix}/status":
                if message.payload.strip() == b"online":
                    log.info("mqtt: Home Assistant came online; publishing discovery again")
                    self._count("ha_births")
                    self._publish_discovery()
            elif topic.endswith("/config"):
                self._on_retained_config(topic, message)
        except Exception:
            log.exception("mqtt: handling a message on %s failed", message.topic[:200])

    def _on_ask(self, message: mqtt.MQTTMessage) -> None:
        self._count("asks")
        props = message.properties
        response_topic = getattr(props, "ResponseTopic", None) if props is not None else None
        correlation = getattr(props, "CorrelationData", None) if props is not None else None
        try:
            ask = parse_ask(
                bytes(message.payload),
                response_topic=response_topic,
                max_bytes=self.max_request_bytes,
                hard_max_bytes=4 * self.max_request_bytes,
            )
        except AskError as exc:
            if exc.reply_to is None:
                self._count("unanswerable")
                log.info(
                    "mqtt: an ask on %s cannot be answered (%s: %s); ignored",
                    message.topic,
                    exc.code,
                    exc.message[:200],
                )
                return
            self._send_error(exc.reply_to, correlation, exc.request_id, exc.code, exc.message)
            return
        self._enqueue(ask, correlation, question=False)

    def _on_question(self, message: mqtt.MQTTMessage) -> None:
        """Home Assistant's text entity publishes the bare text."""
        self._count("questions")
        try:
            text = message.payload.decode("utf-8").strip()
        except UnicodeDecodeError:
            text = ""
        if not text or len(message.payload) > self.max_request_bytes:
            self._count("unanswerable")
            log.info("mqtt: an empty, oversized or non-UTF-8 question was ignored")
            return
        self._publish(f"{self.topics.question}/state", text[:QUESTION_MAX_CHARS], retain=True)
        ask = Ask(reply_to=self.topics.answer, request_id=None, fields={"query": text})
        self._enqueue(ask, None, question=True)

    def _enqueue(self, ask: Ask, correlation: bytes | None, *, question: bool) -> None:
        with self._lock:
            full = len(self._inbox) >= INBOX_LIMIT or len(self._pending) >= PENDING_LIMIT
            if not full:
                self._inbox.append((ask, correlation, question))
        if full:
            self._count("busy_at_bridge")
            self._finish(
                Pending(ask.reply_to, ask.request_id, correlation, False, "", question),
                {
                    "v": PROTOCOL_VERSION,
                    "kind": "error",
                    "code": "busy",
                    "message": "too many asks are waiting; try again later",
                },
            )
            return
        self._wake()

    def _on_retained_config(self, topic: str, message: mqtt.MQTTMessage) -> None:
        """A retained discovery config of this node: clear it when it is no longer wanted."""
        if not message.payload:
            return
        with self._lock:
            readings = list(self._readings)
        wanted = self._discovery().configs(readings) if self.settings.discovery else {}
        if topic not in wanted:
            log.info("mqtt: clearing the stale discovery config %s", topic)
            self._count("configs_cleared")
            self._publish(topic, b"", retain=True)

    # -- publishing (any thread: paho's publish is thread-safe) ------------------------------------

    def _publish(
        self,
        topic: str,
        payload: str | bytes,
        *,
        retain: bool = False,
        qos: int = 1,
        properties: Properties | None = None,
        reply: bool = False,
    ) -> bool:
        """Publish; a reply that cannot even be queued is counted and logged."""
        try:
            info = self._client.publish(
                topic, payload, qos=qos, retain=retain, properties=properties
            )
        except (ValueError, OSError) as exc:
            self._undeliverable(topic, str(exc))
            return False
        if info.rc not in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN):
            if reply or qos:
                self._undeliverable(topic, mqtt.error_string(info.rc))
            return False
        if qos == 0 and info.rc == MQTTErrorCode.MQTT_ERR_NO_CONN:
            return False  # not sent, and never will be: no acknowledgement to wait for
        with self._lock:
            # paho may acknowledge before publish() has even returned here.
            if info.mid in self._early_acks:
                self._early_acks.discard(info.mid)
            else:
                self._unacked[info.mid] = (topic, reply)
        return True

    def _undeliverable(self, topic: str, why: str) -> None:
        self._count("undeliverable")
        log.warning("mqtt: a message for %s could not be queued (%s); it is lost", topic[:200], why)

    def _send_error(
        self,
        reply_to: str,
        correlation: bytes | None,
        request_id: Any,
        code: ErrorCode,
        message: str,
    ) -> None:
        self._count(f"error_{code}")
        self._publish(
            reply_to,
            error_payload(request_id, code, message, self.topics.node),
            properties=_properties(correlation),
            reply=True,
        )

    def _finish(self, pending: Pending, reply: dict[str, Any]) -> None:
        """The final reply of one run: to the requester, or to the answer sensor."""
        kind = reply.get("kind")
        if pending.question:
            self._publish_answer(pending, reply)
            return
        if pending.reply_to is None:
            return
        if kind == "error":
            self._count(f"error_{reply.get('code')}")
        elif pending.target is not None:
            # The daemon names the run by the bridge's id; the requester knows its own.
            reply = {**reply, "target": pending.target}
            self._count("cancels")
        else:
            self._count("results")
        self._publish(
            pending.reply_to,
            reply_payload(reply, pending.request_id, self.topics.node),
            properties=_properties(pending.correlation),
            reply=True,
        )

    def _publish_answer(self, pending: Pending, reply: dict[str, Any]) -> None:
        answer = reply.get("answer")
        outcome = reply.get("outcome") if reply.get("kind") == "result" else "error"
        if isinstance(answer, str) and answer:
            state = answer[:ANSWER_STATE_MAX_CHARS]
        else:
            state = f"({outcome}: {reply.get('code')})" if outcome == "error" else f"({outcome})"
        attributes = {
            "answer": answer,
            "outcome": outcome,
            "question": pending.query,
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "timing": reply.get("timing"),
        }
        if reply.get("kind") == "error":
            attributes["error"] = {"code": reply.get("code"), "message": reply.get("message")}
        self._count("answers")
        self._publish(self.topics.answer, state, retain=True, reply=True)
        self._publish(
            self.topics.answer_attributes,
            json.dumps(attributes, ensure_ascii=False, default=str),
            retain=True,
            reply=True,
        )

    def _discovery(self) -> Discovery:
        with self._lock:
            model = self._daemon_status.get("model") or {}
        return Discovery(
            topics=self.topics,
            discovery_prefix=self.settings.discovery_prefix,
            version=self.version,
            model=str(model.get("name") or model.get("spec") or "edge-agent"),
            sensor_interval_s=self.settings.sensor_interval_s,
        )

    def _publish_discovery(self, removed: list[str] | None = None) -> None:
        if not self._client.is_connected():
            return
        with self._lock:
            readings = list(self._readings)
        discovery = self._discovery()
        configs = discovery.configs(readings)
        if not self.settings.discovery:
            # Discovery is off: take back every config this node may have published.
            for topic in configs:
                self._publish(topic, b"", retain=True)
            return
        for topic in removed or ():
            self._publish(topic, b"", retain=True)
        for topic, config in configs.items():
            self._publish(topic, encode_config(config), retain=True)
        self._publish_readings(readings)

    def _publish_info(self) -> None:
        with self._lock:
            status = dict(self._daemon_status)
        info = {
            "node": self.topics.node,
            "version": self.version,
            "protocol": PROTOCOL_VERSION,
            "model": status.get("model"),
            "state": status.get("state"),
            "skills": self.registry.names() if self.registry is not None else [],
            "workflows": status.get("workflows", []),
            "queue_limit": status.get("queue_limit"),
            "topics": self.topics.as_dict(),
        }
        self._publish(self.topics.info, json.dumps(info, ensure_ascii=False), retain=True)

    def _publish_readings(self, readings: list[Reading]) -> None:
        for reading in readings:
            self._publish(
                self.topics.sensor(reading.key), f"{reading.value:g}", retain=True, qos=0
            )

    # -- the sensor thread -------------------------------------------------------------------------

    def _sensor_loop(self) -> None:
        while True:
            try:
                readings = collect_readings(self.registry) if self.registry is not None else []
            except Exception:
                log.exception("mqtt: reading the sensors failed")
                readings = []
            with self._lock:
                before = {r.key for r in self._readings}
                self._readings = readings
            self._first_readings.set()
            after = {r.key for r in readings}
            if self._client.is_connected():
                if after != before:
                    discovery = self._discovery()
                    removed = [
                        discovery.config_topic("sensor", f"sensor_{key}") for key in before - after
                    ]
                    self._publish_discovery(removed)
                else:
                    self._publish_readings(readings)
            if self._stop.wait(self.settings.sensor_interval_s):
                return

    # -- the bridge thread -------------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_write.send(b"\0")

    def _run(self) -> None:
        context: zmq.Context[Any] = zmq.Context()
        sock: zmq.Socket[bytes] = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 10_000)
        sock.setsockopt(zmq.RCVHWM, 10_000)
        sock.connect(self.endpoint)
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(self._wake_read.fileno(), zmq.POLLIN)
        self._first_readings.wait(FIRST_READINGS_WAIT_S)
        self._connect()
        next_status = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if self._status_due or now >= next_status:
                    self._status_due = False
                    with contextlib.suppress(zmq.Again):
                        sock.send(
                            encode({"v": PROTOCOL_VERSION, "id": "mqtt-status", "op": "status"}),
                            zmq.NOBLOCK,
                        )
                    with self._lock:
                        active = bool(self._pending) or self._busy or (
                            self._daemon_status.get("state") != "ready"
                        )
                    next_status = now + (STATUS_POLL_ACTIVE_S if active else STATUS_POLL_IDLE_S)
                self._forward(sock)
                for item, _ in poller.poll(round(max(0.0, next_status - now) * 1000)):
                    if item is sock:
                        self._read_replies(sock)
                    else:
                        with contextlib.suppress(BlockingIOError, InterruptedError):
                            while self._wake_read.recv(4096):
                                pass
            self._drain(sock)
        finally:
            sock.close(linger=0)
            context.term()

    def _forward(self, sock: zmq.Socket[bytes]) -> None:
        """Hand the inbox to the daemon, in arrival order (so a cancel finds the run asked
        before it)."""
        senders = {"run": self._send_run, "cancel": self._send_cancel}
        while True:
            with self._lock:
                if not self._inbox:
                    return
                ask, correlation, question = self._inbox.popleft()
            senders[ask.op](sock, ask, correlation, question)

    def _send_run(
        self, sock: zmq.Socket[bytes], ask: Ask, correlation: bytes | None, question: bool
    ) -> None:
        owner = None if question or ask.request_id is None else (ask.reply_to, ask.request_id)
        pending = Pending(
            ask.reply_to,
            ask.request_id,
            correlation,
            ask.stream,
            str(ask.fields.get("query", ""))[:QUESTION_MAX_CHARS],
            question,
        )
        internal = uuid.uuid4().hex
        with self._lock:
            duplicate = owner is not None and owner in self._owned
            if not duplicate:
                self._pending[internal] = pending
                if owner is not None:
                    self._owned[owner] = internal
        if duplicate:
            # As over ZeroMQ: an id still queued or running is refused, so a cancel names one run.
            self._finish(
                pending,
                _error(
                    "bad_request",
                    f"an ask with id {ask.request_id!r} for this reply topic is still queued or "
                    "running; use a fresh id per ask",
                ),
            )
            return
        self._send(sock, internal, {"op": "run", **ask.fields})

    def _send_cancel(
        self, sock: zmq.Socket[bytes], ask: Ask, correlation: bytes | None, question: bool
    ) -> None:
        target = ask.fields["target"]
        pending = Pending(ask.reply_to, ask.request_id, correlation, False, "", target=target)
        internal = uuid.uuid4().hex
        with self._lock:
            run = self._owned.get((ask.reply_to, target))
            if run is not None:
                self._pending[internal] = pending
        if run is None:
            # Not this reply topic's, or already answered: as over ZeroMQ, a run of someone
            # else's is answered exactly like one that does not exist.
            self._count("cancels_unmatched")
            self._finish(
                pending,
                {
                    "v": PROTOCOL_VERSION,
                    "kind": "result",
                    "op": "cancel",
                    "target": target,
                    "cancelled": False,
                    "was": None,
                },
            )
            return
        self._send(sock, internal, {"op": "cancel", "target": run})

    def _send(self, sock: zmq.Socket[bytes], internal: str, fields: dict[str, Any]) -> None:
        request = {"v": PROTOCOL_VERSION, "id": internal, **fields}
        try:
            sock.send(encode(request), zmq.NOBLOCK)
        except zmq.Again:
            with self._lock:
                pending = self._pending.pop(internal)
                self._disown(internal, pending)
            self._finish(
                pending, _error("busy", "the daemon is not taking requests; try again later")
            )
            return
        self._status_due = True

    def _disown(self, internal: str, pending: Pending) -> None:
        """Forget a finished run's owner (with the lock held)."""
        if pending.target is not None or pending.reply_to is None:
            return  # a cancel, or a question: never owned
        owner = (pending.reply_to, pending.request_id)
        if self._owned.get(owner) == internal:
            del self._owned[owner]

    def _read_replies(self, sock: zmq.Socket[bytes]) -> None:
        for _ in range(256):
            try:
                frame = sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                reply = decode_reply(frame)
            except FrameError as exc:
                log.warning("mqtt: the daemon sent an unreadable reply: %s", exc.message)
                continue
            if reply.get("id") == "mqtt-status":
                if reply.get("kind") == "result":
                    self._on_daemon_status(reply)
                continue
            self._on_reply(reply)

    def _on_reply(self, reply: dict[str, Any]) -> None:
        internal = reply.get("id")
        kind = reply.get("kind")
        with self._lock:
            pending = self._pending.get(internal) if isinstance(internal, str) else None
            if isinstance(internal, str) and pending is not None and kind in ("result", "error"):
                del self._pending[internal]
                self._disown(internal, pending)
        if pending is None:
            log.debug("mqtt: a reply for no known ask (%s)", kind)
            return
        if kind in ("accepted", "event"):
            if pending.stream and pending.reply_to is not None:
                self._publish(
                    pending.reply_to,
                    reply_payload(reply, pending.request_id, self.topics.node),
                    properties=_properties(pending.correlation),
                )
            return
        self._status_due = True
        self._finish(pending, reply)

    def _on_daemon_status(self, reply: dict[str, Any]) -> None:
        busy = reply.get("state") == "busy"
        with self._lock:
            before = self._daemon_status
            self._daemon_status = reply
            changed_busy = busy != self._busy
            self._busy = busy
        if changed_busy:
            self._publish(self.topics.busy, "ON" if busy else "OFF", retain=True)
        if (before.get("state"), before.get("model")) != (reply.get("state"), reply.get("model")):
            self._publish_info()
            if before.get("model") != reply.get("model"):
                self._publish_discovery()

    def _drain(self, sock: zmq.Socket[bytes]) -> None:
        """Shutdown: the daemon has answered every run; pass on what is still in the socket."""
        until = time.monotonic() + DRAIN_S
        while time.monotonic() < until:
            with self._lock:
                if not self._pending and not self._inbox:
                    break
            if sock.poll(50):
                self._read_replies(sock)
        with self._lock:
            left = list(self._pending.values())
            self._pending.clear()
            self._owned.clear()
            for ask, correlation, question in self._inbox:
                left.append(Pending(ask.reply_to, ask.request_id, correlation, False, "", question))
            self._inbox.clear()
        for pending in left:
            self._finish(
                pending,
                {
                    "v": PROTOCOL_VERSION,
                    "kind": "error",
                    "code": "shutting_down",
                    "message": "the daemon shut down before the run was answered",
                },
            )

    # -- shutdown ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """After the daemon stopped: pass on its last replies, say ``offline``, disconnect."""
        self._stop.set()
        self._wake()
        for thread in self._threads[:1]:
            thread.join(DRAIN_S + 3.0)
        self._stopping = True
        if self._client.is_connected():
            if not self.settings.discovery:
                self._publish_discovery()
            self._publish(self.topics.status, OFFLINE, retain=True, reply=True)
        until = time.monotonic() + FLUSH_S
        while time.monotonic() < until and self._client.is_connected():
            with self._lock:
                if not any(reply for _, reply in self._unacked.values()):
                    break
            time.sleep(0.02)
        with self._lock:
            unsent = [
                topic
                for topic, reply in self._unacked.values()
                if reply and topic != self.topics.status
            ]
            self._unacked.clear()
        if unsent:
            self._count("undeliverable", len(unsent))
            log.warning(
                "mqtt: %d repl%s could not be delivered before shutdown (the broker is away): %s",
                len(unsent),
                "y" if len(unsent) == 1 else "ies",
                ", ".join(sorted(set(unsent)))[:300],
            )
        self._client.disconnect()
        self._client.loop_stop()
        self._wake_read.close()
        self._wake_write.close()
        log.info("mqtt: closed; counters %s", json.dumps(self.status()["counters"], sort_keys=True))


__all__ = ["MqttBridge"]
