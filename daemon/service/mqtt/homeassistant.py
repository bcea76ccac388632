"""What the node tells the broker about itself: ``info``, the busy light, the answer sensor, and
Home Assistant's discovery configs (built by :mod:`edge_agentd.service.mqtt.discovery`).

It owns what it has learnt of the daemon (its last ``status``, busy or not) and publishes on a
change, on each connect, and when Home Assistant announces itself.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

from edge_agentd.agent.registry import Registry
from edge_agentd.protocol.mqttwire import ONLINE
from edge_agentd.protocol.version import package_version
from edge_agentd.protocol.wire import PROTOCOL_VERSION
from edge_agentd.service.mqtt.broker import BrokerConnection
from edge_agentd.service.mqtt.daemonlink import Pending
from edge_agentd.service.mqtt.discovery import (
    ANSWER_STATE_MAX_CHARS,
    QUESTION_MAX_CHARS,
    Discovery,
    Reading,
    device_model,
    encode_config,
)
from edge_agentd.service.mqtt.state import log


class HomeAssistant:
    """The node's retained topics: status, info, busy, answer, discovery."""

    def __init__(
        self,
        broker: BrokerConnection,
        *,
        registry: Registry | None,
        readings: Callable[[], list[Reading]],
    ) -> None:
        self.broker = broker
        self.settings = broker.settings
        self.topics = broker.topics
        self.registry = registry
        self.version = package_version()
        self._readings = readings
        self._daemon_status: dict[str, Any] = {}
        self._busy: bool | None = None
        self.triggers: tuple[str, ...] = ()
        """The daemon's enabled triggers, for their event entities (set before the start)."""

    def discovery(self) -> Discovery:
        with self.broker.state.lock:
            model = self._daemon_status.get("model") or {}
        return Discovery(
            topics=self.topics,
            discovery_prefix=self.settings.discovery_prefix,
            version=self.version,
            model=device_model(model),
            sensor_interval_s=self.settings.sensor_interval_s,
            triggers=self.triggers,
        )

    # -- events ------------------------------------------------------------------------------------

    def on_connected(self) -> None:
        """Subscribed by the bridge; now say who we are (the daemon's first status may not have
        come yet: then its reply publishes info and discovery)."""
        self.broker.publish(self.topics.status, ONLINE, retain=True)
        with self.broker.state.lock:
            known = bool(self._daemon_status)
            busy = self._busy
        if known:
            self.publish_info()
            self.publish_discovery()
        if busy is not None:
            self.broker.publish(self.topics.busy, "ON" if busy else "OFF", retain=True)

    def on_daemon_status(self, reply: dict[str, Any]) -> None:
        busy = reply.get("state") == "busy"
        with self.broker.state.lock:
            before = self._daemon_status
            self._daemon_status = reply
            changed_busy = busy != self._busy
            self._busy = busy
        if changed_busy:
            self.broker.publish(self.topics.busy, "ON" if busy else "OFF", retain=True)
        if (before.get("state"), before.get("model")) != (reply.get("state"), reply.get("model")):
            self.publish_info()
            # The configs name the model, not its cache: published with the first status, again
            # when the name changes (the load), not at every run's change of the model's counters.
            named = device_model(before.get("model") or {}), device_model(reply.get("model") or {})
            if not before or named[0] != named[1]:
                self.publish_discovery()

    def on_birth(self) -> None:
        log.info("mqtt: Home Assistant came online; publishing discovery again")
        self.broker.state.count("ha_births")
        self.publish_discovery()

    def on_retained_config(self, topic: str, payload: bytes) -> None:
        """A retained discovery config of this node: clear it when it is no longer wanted."""
        if not payload:
            return
        wanted = self.discovery().configs(self._readings()) if self.settings.discovery else {}
        if topic not in wanted:
            log.info("mqtt: clearing the stale discovery config %s", topic)
            self.broker.state.count("configs_cleared")
            self.broker.publish(topic, b"", retain=True)

    # -- publishing --------------------------------------------------------------------------------

    def publish_discovery(self, removed: list[str] | None = None) -> None:
        if not self.broker.is_connected():
            return
        readings = self._readings()
        configs = self.discovery().configs(readings)
        if not self.settings.discovery:
            # Discovery is off: take back every config this node may have published.
            for topic in configs:
                self.broker.publish(topic, b"", retain=True)
            return
        for topic in removed or ():
            self.broker.publish(topic, b"", retain=True)
        for topic, config in configs.items():
            self.broker.publish(topic, encode_config(config), retain=True)
        self.publish_readings(readings)

    def publish_readings(self, readings: list[Reading]) -> None:
        for reading in readings:
            self.broker.publish(
                self.topics.sensor(reading.key), f"{reading.value:g}", retain=True, qos=0
            )

    def publish_info(self) -> None:
        with self.broker.state.lock:
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
        self.broker.publish(self.topics.info, json.dumps(info, ensure_ascii=False), retain=True)

    def publish_question(self, text: str) -> None:
        self.broker.publish(f"{self.topics.question}/state", text[:QUESTION_MAX_CHARS], retain=True)

    def publish_answer(self, pending: Pending, reply: dict[str, Any]) -> None:
        """A question's final reply, on the answer sensor (whole in its attributes)."""
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
        self.broker.state.count("answers")
        what = "the answer to a question from Home Assistant"
        self.broker.publish(self.topics.answer, state, retain=True, reply=what)
        self.broker.publish(
            self.topics.answer_attributes,
            json.dumps(attributes, ensure_ascii=False, default=str),
            retain=True,
            reply=f"{what} (its attributes)",
        )

    def take_back(self) -> None:
        """At shutdown with discovery off: clear the configs once more."""
        if self.broker.is_connected() and not self.settings.discovery:
            self.publish_discovery()


__all__ = ["HomeAssistant"]
