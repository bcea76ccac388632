"""The bridge: MQTT asks become protocol v1 runs on the daemon's own socket.

It is composed of four parts, each owning its state (docs/mqtt.md is the outside view):

- :class:`~edge_agentd.service.mqtt.broker.BrokerConnection`, the paho connection (its network
  thread runs the callbacks, reconnects with backoff, and holds unacknowledged publishes);
- :class:`~edge_agentd.service.mqtt.daemonlink.DaemonLink`, the link to the daemon: a ZeroMQ
  :class:`~edge_agentd.client.zmqclient.Client` in its own supervised thread, so an ask over MQTT
  meets the same queue, limits, ``busy``, deadlines and counters as one over ZeroMQ;
- :class:`~edge_agentd.service.mqtt.homeassistant.HomeAssistant`, the retained topics (info, the
  busy light, the answer sensor) and the discovery configs;
- :class:`~edge_agentd.service.mqtt.sensors.SensorPublisher`, the sensor readings in their own
  thread.

This module routes between them: a message from the broker becomes an ask for the link, and the
link's replies go back to the requester. No payload can stop it: a failure is contained to the
ask it came with, which gets an error reply. Every outgoing reply is QoS 1, held in paho's
bounded queue while the broker is away; one that cannot be queued, or is still unsent at
shutdown, is counted (``undeliverable``) and logged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.subscribeoptions import SubscribeOptions

from edge_agentd.agent.registry import Registry
from edge_agentd.protocol.mqttwire import (
    OFFLINE,
    Ask,
    AskError,
    error_payload,
    parse_ask,
    reply_payload,
)
from edge_agentd.protocol.wire import ErrorCode
from edge_agentd.service.config.mqtt import MqttSettings
from edge_agentd.service.mqtt.broker import BrokerConnection
from edge_agentd.service.mqtt.daemonlink import (
    DRAIN_S,
    WAITING_LIMIT,
    DaemonLink,
    Pending,
    error_reply,
)
from edge_agentd.service.mqtt.discovery import Reading
from edge_agentd.service.mqtt.homeassistant import HomeAssistant
from edge_agentd.service.mqtt.sensors import SensorPublisher
from edge_agentd.service.mqtt.state import BridgeState, log
from edge_agentd.service.threads.daemonthread import DaemonThread
from edge_agentd.service.triggers.mqttevents import TriggerPublisher

FLUSH_S = 5.0
"""At shutdown, how long unsent replies and the ``offline`` status may take to reach the broker."""
MAX_MESSAGE_CHARS = 300
"""An error reply's ``message`` is at most this long, as over ZeroMQ (docs/protocol.md)."""


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
        self.max_request_bytes = max_request_bytes
        self.state = BridgeState()
        self.broker = BrokerConnection(
            settings,
            self.state,
            password=password,
            on_connected=self._on_connected,
            on_message=self._on_message,
        )
        self.topics = self.broker.topics
        self.sensors = SensorPublisher(
            self.state,
            registry=registry,
            interval_s=settings.sensor_interval_s,
            on_readings=self._on_readings,
        )
        self.home = HomeAssistant(self.broker, registry=registry, readings=self.sensors.readings)
        self.link = DaemonLink(
            self.state,
            on_final=self._final,
            on_progress=self._progress,
            on_daemon_status=self.home.on_daemon_status,
            on_started=self._connect_when_ready,
        )

    def start(self, endpoint: str) -> None:
        """Start the parts, a client of the daemon at ``endpoint``; the broker is reached in the
        background (the daemon never waits for it)."""
        self.sensors.start()
        self.link.start(endpoint)
        s = self.settings
        log.info(
            "mqtt: node %s, broker %s:%d%s%s",
            self.topics.node,
            s.host,
            s.broker_port,
            " (TLS)" if s.use_tls else "",
            f" as {s.username}" if s.username else "",
        )

    @property
    def threads(self) -> list[DaemonThread]:
        """The bridge's own threads (the link's, the readings', and the watch on paho's): a
        crash of any shows in the daemon's ``status`` (``Server.attach``)."""
        return [self.link.thread, self.sensors.thread, self.broker.watch]

    def _connect_when_ready(self) -> None:
        """The link's first step: connect once the first readings are in (or a while has
        passed), so the first discovery configs name every sensor."""
        self.sensors.wait_first()
        self.broker.connect()

    def status(self) -> dict[str, Any]:
        """The links and the bridge's counters, for the daemon's ``status`` (any thread)."""
        s = self.settings
        snapshot = self.state.snapshot()
        return {
            "link": snapshot["link"],
            "daemon_link": snapshot["daemon_link"],
            "since": snapshot["since"],
            "last_problem": snapshot["last_problem"],
            "broker": f"{s.host}:{s.broker_port}",
            "tls": s.use_tls,
            "node": self.topics.node,
            "prefix": s.topic_prefix,
            "discovery": s.discovery,
            "pending": self.link.waiting(),
            "pending_limit": WAITING_LIMIT,
            "unsent": self.broker.unsent_replies(),
            "counters": snapshot["counters"],
        }

    # -- from the broker (paho's thread) -----------------------------------------------------------

    def _on_connected(self) -> None:
        options = SubscribeOptions(qos=1, noLocal=True)
        self.broker.client.subscribe(
            [
                (self.topics.ask, options),
                (self.topics.question, options),
                (f"{self.settings.discovery_prefix}/status", options),
                (self.home.discovery().config_subscription, options),
            ]
        )
        self.home.on_connected()

    def _on_message(self, message: mqtt.MQTTMessage) -> None:
        topic = message.topic
        if topic == self.topics.ask:
            self._on_ask(message)
        elif topic == self.topics.question:
            self._on_question(message)
        elif topic == f"{self.settings.discovery_prefix}/status":
            if message.payload.strip() == b"online":
                self.home.on_birth()
        elif topic.endswith("/config"):
            self.home.on_retained_config(topic, bytes(message.payload))

    def _on_ask(self, message: mqtt.MQTTMessage) -> None:
        self.state.count("asks")
        props = message.properties
        response_topic = getattr(props, "ResponseTopic", None) if props is not None else None
        correlation = getattr(props, "CorrelationData", None) if props is not None else None
        pending: Pending | None = None
        try:
            ask = parse_ask(
                bytes(message.payload),
                response_topic=response_topic,
                max_bytes=self.max_request_bytes,
                hard_max_bytes=4 * self.max_request_bytes,
            )
        except AskError as exc:
            self._refuse(exc, correlation)
            return
        except Exception:  # noqa: BLE001 - a v5 requester still hears of it, below
            log.exception("mqtt: reading an ask failed")
            self.state.count("internal_errors")
            ask = None
        if ask is None:
            if isinstance(response_topic, str) and not self.broker.refuse_reply_topic(
                response_topic
            ):
                self._send_error(response_topic, correlation, None, "internal", "unreadable ask")
            return
        if self.broker.refuse_reply_topic(ask.reply_to):
            return
        try:
            pending = Pending(ask.reply_to, ask.request_id, correlation)
            self._enqueue(ask, pending)
        except Exception:  # noqa: BLE001 - contained to this ask, which is answered
            log.exception("mqtt: taking an ask failed; it is answered 'internal'")
            self.state.count("internal_errors")
            self._send_error(ask.reply_to, correlation, ask.request_id, "internal", "ask again")

    def _refuse(self, exc: AskError, correlation: bytes | None) -> None:
        if exc.reply_to is None:
            self.state.count("unanswerable")
            log.info(
                "mqtt: an ask on %s cannot be answered (%s: %s); ignored",
                self.topics.ask,
                exc.code,
                exc.message[:200],
            )
            return
        if self.broker.refuse_reply_topic(exc.reply_to):
            return
        self._send_error(exc.reply_to, correlation, exc.request_id, exc.code, exc.message)

    def _on_question(self, message: mqtt.MQTTMessage) -> None:
        """Home Assistant's text entity publishes the bare text."""
        self.state.count("questions")
        try:
            text = message.payload.decode("utf-8").strip()
        except UnicodeDecodeError:
            text = ""
        if not text or len(message.payload) > self.max_request_bytes:
            self.state.count("unanswerable")
            log.info("mqtt: an empty, oversized or non-UTF-8 question was ignored")
            return
        self.home.publish_question(text)
        ask = Ask(reply_to=self.topics.answer, request_id=None, fields={"query": text})
        self._enqueue(ask, Pending(self.topics.answer, None, None, question=True))

    def _enqueue(self, ask: Ask, pending: Pending) -> None:
        if not self.link.enqueue(ask, pending):
            self.state.count("busy_at_bridge")
            self._final(pending, error_reply("busy", "too many asks are waiting; try again later"))

    def _on_readings(self, readings: list[Reading], before: set[str]) -> None:
        if not self.broker.is_connected():
            return
        after = {r.key for r in readings}
        if after != before:
            discovery = self.home.discovery()
            removed = [discovery.config_topic("sensor", f"sensor_{key}") for key in before - after]
            self.home.publish_discovery(removed)
        else:
            self.home.publish_readings(readings)

    # -- to the requester (the link's thread, or paho's) -------------------------------------------

    def _send_error(
        self,
        reply_to: str,
        correlation: bytes | None,
        request_id: Any,
        code: ErrorCode,
        message: str,
    ) -> None:
        self.state.count(f"error_{code}")
        payload = error_payload(request_id, code, message[:MAX_MESSAGE_CHARS], self.topics.node)
        what = f"the error reply to {ask_name(request_id, correlation)}"
        self.broker.publish_reply(reply_to, payload, correlation, what=what)

    def _progress(self, pending: Pending, reply: dict[str, Any]) -> None:
        if pending.reply_to is not None:
            payload = reply_payload(reply, pending.request_id, self.topics.node)
            what = f"a progress reply to {ask_name(pending.request_id, pending.correlation)}"
            self.broker.publish_reply(pending.reply_to, payload, pending.correlation, what=what)

    def _final(self, pending: Pending, reply: dict[str, Any]) -> None:
        """The final reply of one ask: to the requester, or to the answer sensor."""
        if reply.get("kind") == "error":
            reply = {**reply, "message": str(reply.get("message", ""))[:MAX_MESSAGE_CHARS]}
        if pending.question:
            self.home.publish_answer(pending, reply)
            return
        if pending.reply_to is None:
            return
        if reply.get("kind") == "error":
            self.state.count(f"error_{reply.get('code')}")
        elif pending.target is not None:
            # The daemon names the run by the bridge's id; the requester knows its own.
            reply = {**reply, "target": pending.target}
            self.state.count("cancels")
        else:
            self.state.count("results")
        payload = reply_payload(reply, pending.request_id, self.topics.node)
        name = ask_name(pending.request_id, pending.correlation)
        what = (
            f"the error reply to {name}"
            if reply.get("kind") == "error"
            else f"the result of {name}"
        )
        self.broker.publish_reply(pending.reply_to, payload, pending.correlation, what=what)

    def follow_triggers(self, names: Iterable[str]) -> Callable[[dict[str, Any]], None]:
        """One Home Assistant ``event`` entity per trigger named, and the listener that publishes
        each trigger run's result, QoS 1, not retained, on ``<prefix>/<node>/trigger/<name>``
        (docs/mqtt.md, "Triggers"): give it to the daemon's trigger runner before :meth:`start`."""
        self.home.triggers = tuple(names)

        def publish(topic: str, payload: bytes) -> None:
            self.state.count("trigger_results")
            self.broker.publish(topic, payload, qos=1)

        return TriggerPublisher(self.topics.base, publish)

    # -- shutdown ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """After the daemon stopped: pass on its last replies, say ``offline``, disconnect."""
        self.link.stop(DRAIN_S + 3.0)
        self.sensors.stop()
        self.broker.stopping = True
        if self.broker.is_connected():
            self.home.take_back()
            self.broker.publish(
                self.topics.status, OFFLINE, retain=True, reply="the offline status"
            )
        self.broker.close(FLUSH_S)
        log.info("mqtt: closed; counters %s", json.dumps(self.state.counters(), sort_keys=True))


def ask_name(request_id: Any, correlation: bytes | None) -> str:
    """How the log names an ask: by the requester's id, else its correlation data."""
    if request_id is not None:
        return f"ask {request_id!r}"[:100]
    if correlation is not None:
        return f"the ask with correlation data {correlation[:32].hex()}"
    return "an ask without an id"


__all__ = ["MqttBridge", "ask_name"]
