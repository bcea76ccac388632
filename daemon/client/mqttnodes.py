"""The fleet on a broker: ``edge-agent nodes`` lists the nodes, ``--forget`` clears what one left
behind, and ``ask --mqtt`` without ``--node`` asks the one node online (docs/mqtt.md, *A fleet*
and *Home Assistant*). Needs the ``mqtt`` extra."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from edge_agentd.client.mqttclient import (
    CONNECT_TIMEOUT_S,
    RETAINED_QUIET_S,
    BrokerOptions,
    MqttAskClient,
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


def open_ask_client(args: argparse.Namespace) -> MqttAskClient:
    """The client of ``ask --mqtt``: to ``--node``, or without it to the one node online."""
    options = BrokerOptions.from_args(args)
    node = args.node or only_node_online(options, timeout=min(args.timeout, CONNECT_TIMEOUT_S))
    return MqttAskClient(options, node, timeout=args.timeout)


def only_node_online(options: BrokerOptions, *, timeout: float) -> str:
    """The node to ask when none is named: the only one online. With none online, ``unavailable``
    (69); with several, ``bad_request`` (65): each names the nodes it found."""
    nodes = list_nodes(options, timeout=timeout)
    online = [str(entry["node"]) for entry in nodes if entry["status"] == ONLINE]
    where = options.host if options.port is None else f"{options.host}:{options.port}"
    if len(online) == 1:
        if sys.stderr.isatty():
            said = f"edge-agent: asking {online[0]}, the one node online on {where}"
            print(said, file=sys.stderr)
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


def print_nodes(nodes: list[dict[str, Any]], as_json: bool, show_all: bool) -> None:
    shown = [n for n in nodes if show_all or n["status"] == ONLINE]
    if as_json:
        print(json.dumps(shown, ensure_ascii=False), flush=True)
        return
    for entry in shown:
        info = entry.get("info") or {}
        model = info.get("model") or {}
        print(
            f"{entry['node']:<24} {entry['status']:<8} "
            f"{model.get('name') or model.get('spec') or '?':<24} "
            f"{len(info.get('skills') or [])} skills, edge-agent {info.get('version', '?')}"
        )


NODES_EXITS = {"unavailable": 69, "node_online": 75}
"""``nodes``' exit codes by error code; any other error is bad input, 65."""


def nodes_command(args: argparse.Namespace) -> int:
    """``edge-agent nodes --mqtt HOST [--forget NODE]``: 0 listed (maybe none) or forgotten, 65
    bad input, 69 broker unreachable, 75 the node to forget is online."""
    try:
        options = BrokerOptions.from_args(args)
        if args.forget is not None:
            cleared = forget_node(
                options,
                args.forget,
                discovery_prefix=args.discovery_prefix,
                force=args.force,
                timeout=args.timeout,
            )
        else:
            nodes = list_nodes(options, timeout=args.timeout)
    except DaemonError as exc:
        print(f"edge-agent: {exc.code}: {exc.message}", file=sys.stderr)
        return NODES_EXITS.get(exc.code, 65)
    if args.forget is None:
        print_nodes(nodes, args.json, args.all)
    elif args.json:
        print(json.dumps({"node": args.forget, "cleared": cleared}), flush=True)
    elif cleared:
        print(f"cleared {len(cleared)} retained topics of {args.forget}:")
        print("\n".join(f"  {topic}" for topic in cleared), flush=True)
    else:
        print(f"nothing retained for {args.forget} on {options.host}", flush=True)
    return 0


__all__ = [
    "NODES_EXITS",
    "forget_node",
    "list_nodes",
    "nodes_command",
    "only_node_online",
    "open_ask_client",
    "print_nodes",
]
