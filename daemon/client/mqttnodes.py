"""The fleet on a broker: the nodes listed (``edge-agent nodes``), what one left behind cleared
(``--forget``), and the one node online found (``ask --mqtt`` without ``--node``) (docs/mqtt.md,
*A fleet* and *Home Assistant*). The commands themselves are :mod:`edge_agentd.cli.mqtt`'s. Needs
the ``mqtt`` extra."""

from __future__ import annotations

import json
import time
from typing import Any

from edge_agentd.client.mqttclient import (
    RETAINED_QUIET_S,
    BrokerOptions,
    MqttConnection,
)
from edge_agentd.client.zmqclient import DaemonError, Unavailable
from edge_agentd.protocol.mqttwire import (
    DEFAULT_DISCOVERY_PREFIX,
    ONLINE,
    Topics,
    check_node_id,
    check_prefix,
    node_of,
)


def list_nodes(options: BrokerOptions, *, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Every node with a retained status: ``{node, status, info}``, sorted by name."""
    found: dict[str, dict[str, Any]] = {}
    with MqttConnection(options, timeout) as connection:
        connection.subscribe(Topics.all_status(options.prefix), Topics.all_info(options.prefix))
        until = time.monotonic() + timeout
        while message := connection.next(min(RETAINED_QUIET_S, until - time.monotonic())):
            node = node_of(message.topic, options.prefix)
            if node is None or not message.payload:
                continue
            entry = found.setdefault(node, {"node": node, "status": None, "info": None})
            if message.topic.endswith("/status"):
                entry["status"] = message.payload.decode("utf-8", "replace")
            else:
                try:
                    entry["info"] = json.loads(message.payload)
                except ValueError:
                    entry["info"] = None
    return [found[name] for name in sorted(found) if found[name]["status"] is not None]


def forget_node(
    options: BrokerOptions,
    node: str,
    *,
    discovery_prefix: str = DEFAULT_DISCOVERY_PREFIX,
    force: bool = False,
    timeout: float = 5.0,
) -> list[str]:
    """Clear every retained message ``node`` left on the broker (its status, info, last answer,
    busy light, sensor readings and Home Assistant discovery configs) by publishing empty
    retained payloads; Home Assistant then removes the device. Returns the topics cleared.

    A node whose status is ``online`` is refused (``node_online``) unless ``force``: its daemon
    would publish them all again.
    """
    try:
        topics = Topics(options.prefix, check_node_id(node))
        discovery = check_prefix(discovery_prefix)
    except ValueError as exc:
        raise DaemonError("bad_request", str(exc)) from None
    retained: dict[str, bytes] = {}
    with MqttConnection(options, timeout) as connection:
        connection.subscribe(f"{topics.base}/#", f"{discovery}/+/{topics.node}/+/config")
        until = time.monotonic() + timeout
        while message := connection.next(min(RETAINED_QUIET_S, until - time.monotonic())):
            if message.retain and message.payload:  # not a live ask passing by
                retained[message.topic] = bytes(message.payload)
        if retained.get(topics.status) == ONLINE.encode() and not force:
            raise DaemonError(
                "node_online",
                f"node {topics.node} is online: stop its daemon (or remove [mqtt] from its "
                "config and restart it) first, or pass --force",
            )
        sent = [
            connection.client.publish(topic, b"", qos=1, retain=True) for topic in sorted(retained)
        ]
        for info in sent:
            try:
                info.wait_for_publish(timeout)
            except RuntimeError as exc:  # paho could not even queue it
                raise Unavailable(f"the MQTT broker lost a clearing message: {exc}") from None
            if not info.is_published():
                raise Unavailable("the MQTT broker did not take every clearing message in time")
    return sorted(retained)


def only_node_online(options: BrokerOptions, *, timeout: float) -> str:
    """The node to ask when none is named: the only one online. With none online, ``unavailable``
    (69); with several, ``bad_request`` (65): each names the nodes it found."""
    nodes = list_nodes(options, timeout=timeout)
    online = [str(entry["node"]) for entry in nodes if entry["status"] == ONLINE]
    where = options.address
    if len(online) == 1:
        return online[0]
    if not online:
        offline = [entry["node"] for entry in nodes]
        seen = f" (offline: {', '.join(offline)})" if offline else ""
        raise Unavailable(f"no edge-agent node is online on {where}{seen}")
    raise DaemonError(
        "bad_request",
        f"{len(online)} nodes are online on {where}: {', '.join(online)}; "
        "name one with --node NAME",
    )


__all__ = ["forget_node", "list_nodes", "only_node_online"]
