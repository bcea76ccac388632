"""The paho connection: connecting with backoff, the link state, and publishing.

It owns the paho client and what is published but not yet acknowledged. Callbacks run in paho's
network thread and hand messages to the bridge's ``on_message``; a failure in one is logged and
counted, never raised into paho (which would end its thread).

paho's network thread is watched: one that ends unasked (an exception past a callback, a bug in
paho) is logged, counted and started again, so the link comes back and the replies held for the
broker still go out; without that, nothing would read the socket or reconnect again, and every
ask waiting then would be left without its reply.

A reply is published only on a topic the node does not own: never under ``<prefix>/<node>/``
(its status, info, busy light, sensors) nor under the Home Assistant discovery prefix, where a
message would be taken as a new entity config (docs/mqtt.md, *Security*).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from edge_agentd.protocol.mqttwire import OFFLINE, Topics, under
from edge_agentd.service.config.mqtt import MqttSettings
from edge_agentd.service.mqtt.state import BridgeState, log
from edge_agentd.service.threads.daemonthread import DaemonThread

WATCH_S = 2.0
"""How often the watch looks whether paho's network thread still runs."""


def reply_properties(correlation: bytes | None) -> Properties:
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.ContentType = "application/json"
    if correlation is not None:
        props.CorrelationData = correlation
    return props


def _loopback(host: str) -> bool:
    """Whether ``host`` is this machine's loopback (which the systemd unit always allows)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: the unit's allow list holds addresses only


def _no_delay(client: mqtt.Client, userdata: Any, sock: Any) -> None:
    """Small packets leave at once: Nagle's algorithm against delayed ACKs costs a delayed ACK's
    wait a hop (docs/performance.md, the MQTT rows)."""
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class BrokerConnection:
    """One paho client on the broker. TLS files are read when it is made, so a bad one fails
    before the daemon serves."""

    def __init__(
        self,
        settings: MqttSettings,
        state: BridgeState,
        *,
        password: str | None,
        on_connected: Callable[[], None],
        on_message: Callable[[mqtt.MQTTMessage], None],
    ) -> None:
        self.settings = settings
        self.state = state
        self.topics = Topics(settings.topic_prefix, settings.node)
        self.stopping = False
        self._on_connected = on_connected
        self._on_message = on_message
        self._unacked: dict[int, tuple[str, str | None]] = {}
        """Published, not yet acknowledged: mid -> (topic, for a reply to someone what it is, as
        the log names it: "the result of ask 7"; None for the node's own topics)."""
        self._early_acks: set[int] = set()
        self.client = self._make_client(password)
        self._unwatch = threading.Event()
        self.watch = DaemonThread("mqtt-network", self._watch, ask_stop=self._unwatch.set)
        """Starts paho's network thread again when it ended unasked; its own crash shows in
        ``status``."""

    def _make_client(self, password: str | None) -> mqtt.Client:
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
        client.on_connect = self._connected
        client.on_subscribe = self._subscribed
        client.on_connect_fail = self._connect_failed
        client.on_disconnect = self._disconnected
        client.on_message = self._message
        client.on_publish = self._published
        client.on_socket_open = _no_delay
        return client

    def connect(self) -> None:
        """Reach the broker in paho's thread, in the background (the daemon never waits)."""
        s = self.settings
        self.client.connect_async(s.host, s.broker_port, keepalive=s.keepalive_s)
        self.client.loop_start()
        self.watch.start()

    def _watch(self) -> None:
        while not self._unwatch.wait(WATCH_S):
            # paho clears its thread when it ends, so loop_start() starts a new one only then:
            # it reads the socket where the old one stopped, or reconnects, and sends what the
            # old one held.
            if self.client.loop_start() == MQTTErrorCode.MQTT_ERR_SUCCESS:
                self.state.count("network_restarts")
                log.error(
                    "mqtt: paho's network thread ended unasked (its traceback, if any, is on "
                    "stderr); started again, and the replies it held go out once it reconnects"
                )

    def is_connected(self) -> bool:
        return self.client.is_connected()

    # -- paho's callbacks --------------------------------------------------------------------------

    def _connected(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if reason.is_failure:
            self.state.set_link("refused", f"the broker refused the connection: {reason}")
            return
        # The link reads "connected" once the broker has acknowledged the subscriptions: an ask
        # published before then would reach no subscriber, and be lost.
        self.state.count("connects")
        try:
            self._on_connected()
        except Exception:  # noqa: BLE001 - logged and counted; paho must not see it
            self.state.count("internal_errors")
            log.exception("mqtt: setting up after the connect failed")

    def _subscribed(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reasons: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        refused = [str(r) for r in reasons if r.is_failure]
        problem = f"the broker refused a subscription: {', '.join(refused)}" if refused else None
        self.state.set_link("connected", problem)

    def _connect_failed(self, client: mqtt.Client, userdata: Any) -> None:
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
        self.state.set_link("disconnected", f"{why}; retrying with backoff")

    def _disconnected(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if self.stopping:
            self.state.set_link("stopped")
        elif self.state.link == "refused":
            return  # the refusal is the news; paho retries with backoff
        else:
            self.state.set_link("disconnected", f"lost the broker: {reason}; reconnecting")

    def _published(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        with self.state.lock:
            if self._unacked.pop(mid, None) is None:
                self._early_acks.add(mid)

    def _message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        try:
            self._on_message(message)
        except Exception:  # noqa: BLE001 - logged and counted; paho must not see it
            self.state.count("internal_errors")
            log.exception("mqtt: handling a message on %s failed", message.topic[:200])

    # -- publishing (any thread: paho's publish is thread-safe) ------------------------------------

    def owns(self, topic: str) -> bool:
        """Whether ``topic`` is the node's own, or Home Assistant's discovery: never a reply's."""
        return self.topics.owns(topic) or under(topic, self.settings.discovery_prefix)

    def refuse_reply_topic(self, topic: str) -> bool:
        """True (counted, logged once) when a requester named a topic the node owns."""
        if not self.owns(topic):
            return False
        self.state.count("reply_topic_refused")
        if self.state.first_time("reply_topic_refused"):
            log.warning(
                "mqtt: refusing to reply on %s, a topic this node owns; such asks get no reply "
                "(counted in mqtt.counters.reply_topic_refused, logged once)",
                topic[:200],
            )
        return True

    def publish_reply(
        self, topic: str, payload: bytes, correlation: bytes | None, *, what: str
    ) -> bool:
        """A reply to a requester, QoS 1; never on a topic the node owns. ``what`` names it in
        the log if it is lost ("the result of ask 7")."""
        if self.refuse_reply_topic(topic):
            return False
        return self.publish(topic, payload, properties=reply_properties(correlation), reply=what)

    def publish(
        self,
        topic: str,
        payload: str | bytes,
        *,
        retain: bool = False,
        qos: int = 1,
        properties: Properties | None = None,
        reply: str | None = None,
    ) -> bool:
        """Publish; a reply (``reply`` names it) that cannot even be queued is counted and
        logged."""
        try:
            info = self.client.publish(
                topic, payload, qos=qos, retain=retain, properties=properties
            )
        except (ValueError, OSError) as exc:
            self._undeliverable(topic, reply, str(exc))
            return False
        if info.rc not in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN):
            if reply is not None or qos:
                self._undeliverable(topic, reply, mqtt.error_string(info.rc))
            return False
        if qos == 0 and info.rc == MQTTErrorCode.MQTT_ERR_NO_CONN:
            return False  # not sent, and never will be: no acknowledgement to wait for
        with self.state.lock:
            # paho may acknowledge before publish() has even returned here.
            if info.mid in self._early_acks:
                self._early_acks.discard(info.mid)
            else:
                self._unacked[info.mid] = (topic, reply)
        return True

    def _undeliverable(self, topic: str, what: str | None, why: str) -> None:
        self.state.count("undeliverable")
        log.warning(
            "mqtt: %s for %s could not be queued (%s); it is lost",
            what or "a message",
            topic[:200],
            why,
        )

    def unsent_replies(self) -> int:
        with self.state.lock:
            return sum(1 for _, reply in self._unacked.values() if reply is not None)

    def close(self, flush_s: float, *, poll_s: float = 0.02) -> None:
        """Wait up to ``flush_s`` for unsent replies, log each one still unsent (its ask is left
        unanswered), count them, and disconnect."""
        self.watch.stop(WATCH_S + 1.0)  # paho's thread is ended below, on purpose
        until = time.monotonic() + flush_s
        while time.monotonic() < until and self.client.is_connected():
            if not self.unsent_replies():
                break
            time.sleep(poll_s)
        with self.state.lock:
            unsent = [
                (topic, reply)
                for topic, reply in self._unacked.values()
                if reply is not None and topic != self.topics.status
            ]
            self._unacked.clear()
        for topic, reply in unsent:
            log.error(
                "mqtt: %s for %s could not be delivered before shutdown (the broker is away); "
                "it is lost",
                reply,
                topic[:200],
            )
        if unsent:
            self.state.count("undeliverable", len(unsent))
            log.warning(
                "mqtt: %d repl%s could not be delivered before shutdown (the broker is away): %s",
                len(unsent),
                "y" if len(unsent) == 1 else "ies",
                ", ".join(sorted({topic for topic, _ in unsent}))[:300],
            )
        self.client.disconnect()
        self.client.loop_stop()


__all__ = ["BrokerConnection", "reply_properties"]
