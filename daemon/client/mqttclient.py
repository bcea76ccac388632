"""Asking an edge-agent node through an MQTT broker: ``ask --mqtt``, and the connection that
``edge-agent nodes`` (:mod:`edge_agentd.client.mqttnodes`) shares. The commands' options and what
they print are cli/'s (:mod:`edge_agentd.cli.mqtt`).

Needs the ``mqtt`` extra (paho-mqtt 2.x). Asks use MQTT v5 request/response (a Response Topic of
our own and Correlation Data); the result and the errors are the daemon's own, with the same
codes, so ``edge-agent ask`` exits the same way over MQTT as over ZeroMQ.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from edge_agentd.client.askoptions import AS_THE_DAEMON_SAYS, AskOptions
from edge_agentd.client.zmqclient import RUN_GRACE_S, DaemonError, Timeout, Unavailable
from edge_agentd.protocol.mqttwire import (
    DEFAULT_PREFIX,
    ONLINE,
    Topics,
    check_node_id,
)

CONNECT_TIMEOUT_S = 5.0
RETAINED_QUIET_S = 0.5
"""After subscribing, retained messages come at once; this long without one ends the listing."""
log = logging.getLogger(__name__)

CANCEL_WAIT_S = 1.0
"""How long leaving (Ctrl-C, a timeout) waits for the broker to take the cancel."""


@dataclasses.dataclass(frozen=True)
class BrokerOptions:
    host: str
    port: int | None = None
    prefix: str = DEFAULT_PREFIX
    username: str | None = None
    password_file: str | None = None
    ca_file: str | None = None
    tls: bool = False

    @property
    def use_tls(self) -> bool:
        return self.tls or self.ca_file is not None

    @property
    def broker_port(self) -> int:
        return self.port if self.port is not None else (8883 if self.use_tls else 1883)

    @property
    def address(self) -> str:
        """``HOST``, or ``HOST:PORT`` when a port was given: the broker as messages name it."""
        return self.host if self.port is None else f"{self.host}:{self.port}"


def split_host(text: str) -> tuple[str, int | None]:
    """``HOST``, ``HOST:PORT`` or ``[V6]:PORT``."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port = text.partition(":")
    else:
        host, port = text, ""
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise DaemonError("bad_request", f"{text!r}: the port must be 1-65535")
    return host, int(port) if port else None


class MqttConnection:
    """One paho client, connected (MQTT v5) on entry; every message lands in a queue."""

    def __init__(self, options: BrokerOptions, timeout: float = CONNECT_TIMEOUT_S) -> None:
        try:
            import paho.mqtt.client as mqtt  # noqa: PLC0415 - the optional extra
            from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion  # noqa: PLC0415
        except ImportError:
            raise Unavailable("MQTT needs the mqtt extra: pip install 'paho-mqtt>=2.1'") from None
        self.options = options
        self.messages: queue.Queue[Any] = queue.Queue()
        self._connected = threading.Event()
        self._subscribed = threading.Event()
        self._refused: str | None = None
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"edge-agent-cli-{uuid.uuid4().hex[:12]}",
            protocol=MQTTProtocolVersion.MQTTv5,
        )
        if options.username is not None:
            client.username_pw_set(options.username, _password(options.password_file))
        if options.use_tls:
            client.tls_set(ca_certs=options.ca_file)
        client.on_connect = self._on_connect
        client.on_message = lambda c, u, m: self.messages.put(m)
        client.on_subscribe = lambda *_: self._subscribed.set()
        self.client = client
        try:
            client.connect(options.host, options.broker_port, keepalive=30)
        except OSError as exc:
            raise Unavailable(
                f"cannot reach the MQTT broker {options.host}:{options.broker_port}: {exc}"
            ) from None
        client.loop_start()
        if not self._connected.wait(timeout) or self._refused:
            self.close()
            raise Unavailable(
                f"the MQTT broker {options.host}:{options.broker_port} "
                + (f"refused us: {self._refused}" if self._refused else "did not answer")
            )

    def _on_connect(self, client: Any, u: Any, f: Any, reason: Any, p: Any) -> None:
        if reason.is_failure:
            self._refused = str(reason)
        self._connected.set()

    def subscribe(self, *topics: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
        self._subscribed.clear()
        self.client.subscribe([(topic, 1) for topic in topics])
        if not self._subscribed.wait(timeout):
            raise Unavailable("the MQTT broker did not confirm the subscription")

    def next(self, timeout: float) -> Any:
        """The next message, or None after ``timeout``."""
        try:
            return self.messages.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def __enter__(self) -> MqttConnection:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _password(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DaemonError("bad_request", f"cannot read the password file {path}: {exc}") from None
    return text.splitlines()[0] if text else ""


class MqttAskClient:
    """What ``edge-agent ask`` needs of a client (``request("status")`` and ``run``), over MQTT
    to one node."""

    def __init__(
        self,
        options: BrokerOptions,
        node: str,
        *,
        timeout: float = 60.0,
        warn: Callable[[str], None] = log.warning,
    ) -> None:
        """``warn`` is told what went wrong on the way out (a cancel the broker did not take),
        while the caller reports why it left: the command prints it, a library logs it."""
        try:
            self.node = check_node_id(node)
        except ValueError as exc:
            raise DaemonError("bad_request", str(exc)) from None
        self.options = options
        self.timeout = timeout
        self.warn = warn
        self.topics = Topics(options.prefix, self.node)
        self._connection = MqttConnection(options)

    def request(self, op: str, *, timeout: float | None = None, **_: Any) -> dict[str, Any]:
        """Only ``status``: whether the node says it is online, from its retained status."""
        if op != "status":
            raise DaemonError("bad_request", f"{op!r} is not offered over MQTT")
        wait = self.timeout if timeout is None else timeout
        self._connection.subscribe(self.topics.status)
        until = time.monotonic() + wait
        while (message := self._connection.next(until - time.monotonic())) is not None:
            if message.topic == self.topics.status:
                state = message.payload.decode("utf-8", "replace")
                if state == ONLINE:
                    return {"state": state, "node": self.node}
                raise Unavailable(f"node {self.node} is {state or 'gone'}")
        raise Unavailable(f"no node {self.node} on {self.options.host} (no retained status)")

    def run(
        self,
        query: str,
        options: AskOptions = AS_THE_DAEMON_SAYS,
        *,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        on_accepted: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        from paho.mqtt.packettypes import PacketTypes  # noqa: PLC0415 - the optional extra
        from paho.mqtt.properties import Properties  # noqa: PLC0415

        wait = options.seconds(self.timeout)
        reply_topic = f"{self.options.prefix}/replies/{uuid.uuid4().hex}"
        correlation = uuid.uuid4().bytes
        self._connection.subscribe(reply_topic)
        # The id (with the reply topic) is what a cancel names: Ctrl-C and a timeout free the node.
        ask_id = uuid.uuid4().hex
        fields = options.fields(query, self.timeout)
        # The ask's keys in the order it has always been sent: query, id, deadline, the rest.
        ask: dict[str, Any] = {"query": fields.pop("query"), "id": ask_id}
        ask["deadline_ms"] = fields.pop("deadline_ms")
        ask.update(fields)
        if on_event is not None or on_accepted is not None:
            ask["stream"] = True
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.ResponseTopic = reply_topic
        props.CorrelationData = correlation
        info = self._connection.client.publish(
            self.topics.ask, json.dumps(ask), qos=1, properties=props
        )
        try:
            info.wait_for_publish(CONNECT_TIMEOUT_S)
            reply = self._await(reply_topic, correlation, wait + RUN_GRACE_S, on_event, on_accepted)
        except KeyboardInterrupt:
            self._cancel(reply_topic, ask_id)
            raise
        if reply is None:
            self._cancel(reply_topic, ask_id)
            raise Timeout(f"no result from node {self.node} within {wait:g} s")
        return reply

    def _await(
        self,
        reply_topic: str,
        correlation: bytes,
        wait: float,
        on_event: Callable[[dict[str, Any]], None] | None,
        on_accepted: Callable[[dict[str, Any]], None] | None,
    ) -> dict[str, Any] | None:
        """The run's result (an error reply raises DaemonError), or None after ``wait``."""
        until = time.monotonic() + wait
        while (message := self._connection.next(until - time.monotonic())) is not None:
            if message.topic != reply_topic:
                continue
            got = getattr(message.properties, "CorrelationData", None)
            if got is not None and got != correlation:
                continue
            try:
                reply = json.loads(message.payload)
            except ValueError:
                raise DaemonError("bad_reply", "the node's reply is not JSON") from None
            kind = reply.get("kind")
            if kind == "error":
                raise DaemonError(str(reply.get("code")), str(reply.get("message")), reply)
            if kind == "result":
                return dict(reply)
            if kind == "event" and on_event is not None:
                on_event(reply["event"])
            elif kind == "accepted" and on_accepted is not None:
                on_accepted(reply)
        return None

    def _cancel(self, reply_topic: str, ask_id: str) -> None:
        """Cancel our run on the node (the same reply topic and id make it ours), on the way out."""
        from paho.mqtt.packettypes import PacketTypes  # noqa: PLC0415 - the optional extra
        from paho.mqtt.properties import Properties  # noqa: PLC0415

        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.ResponseTopic = reply_topic
        props.CorrelationData = uuid.uuid4().bytes
        cancel = json.dumps({"op": "cancel", "target": ask_id})
        info = self._connection.client.publish(self.topics.ask, cancel, qos=1, properties=props)
        try:
            info.wait_for_publish(CANCEL_WAIT_S)
        except RuntimeError as exc:  # not queued: the caller is already reporting why it left
            self.warn(f"could not cancel the run on {self.node}: {exc}")

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> MqttAskClient:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = [
    "BrokerOptions",
    "MqttAskClient",
    "MqttConnection",
    "split_host",
]
