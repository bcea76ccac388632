"""The MQTT commands: ``edge-agent nodes`` (the fleet on a broker, docs/mqtt.md, *A fleet*),
``edge-agent ha-discovery --print`` (what the daemon would publish to Home Assistant), and the
client of ``ask --mqtt``. Their options are :mod:`edge_agentd.cli.mqttargs`'; what they ask is
the client's (:mod:`edge_agentd.client.mqttnodes`) and the daemon's (``service/mqtt/``): here it
is read from the options and printed."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from edge_agentd.cli.exits import EXIT_BAD_INPUT, EXIT_CONFIG, EXIT_OK
from edge_agentd.client.mqttclient import (
    CONNECT_TIMEOUT_S,
    BrokerOptions,
    MqttAskClient,
    split_host,
)
from edge_agentd.client.mqttnodes import forget_node, list_nodes, only_node_online
from edge_agentd.client.zmqclient import DaemonError
from edge_agentd.protocol.mqttwire import ONLINE


def broker_options(args: argparse.Namespace) -> BrokerOptions:
    """The broker of ``--mqtt HOST[:PORT]`` and the ``--mqtt-*`` options."""
    host, port = split_host(args.mqtt)
    return BrokerOptions(
        host=host,
        port=port,
        prefix=args.mqtt_prefix,
        username=args.mqtt_username,
        password_file=args.mqtt_password_file,
        ca_file=args.mqtt_ca,
        tls=args.mqtt_tls,
    )


def _warn(message: str) -> None:
    print(f"edge-agent: {message}", file=sys.stderr)


def open_ask_client(args: argparse.Namespace) -> MqttAskClient:
    """The client of ``ask --mqtt``: to ``--node``, or without it to the one node online (named
    on a terminal's stderr, so a person sees who answers)."""
    options = broker_options(args)
    node = args.node
    if node is None:
        node = only_node_online(options, timeout=min(args.timeout, CONNECT_TIMEOUT_S))
        if sys.stderr.isatty():
            _warn(f"asking {node}, the one node online on {options.address}")
    return MqttAskClient(options, node, timeout=args.timeout, warn=_warn)


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
        options = broker_options(args)
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
        print(f"edge-agent: {exc.message}", file=sys.stderr)  # scripts read the exit code
        return NODES_EXITS.get(exc.code, EXIT_BAD_INPUT)
    if args.forget is None:
        print_nodes(nodes, args.json, args.all)
    elif args.json:
        print(json.dumps({"node": args.forget, "cleared": cleared}), flush=True)
    elif cleared:
        print(f"cleared {len(cleared)} retained topics of {args.forget}:")
        print("\n".join(f"  {topic}" for topic in cleared), flush=True)
    else:
        print(f"nothing retained for {args.forget} on {options.host}", flush=True)
    return EXIT_OK


def ha_discovery_command(args: argparse.Namespace) -> int:
    """``edge-agent ha-discovery --print [--config FILE]``: the configs, as one JSON object."""
    # The daemon's side (pydantic, the skills), which the other MQTT commands never load.
    from edge_agentd.service.config.settings import ConfigError, load_settings  # noqa: PLC0415
    from edge_agentd.service.mqtt.makebridge import discovery_preview, mqtt_settings  # noqa: PLC0415

    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        logging.getLogger("edge_agentd.cli").error("config error: %s", exc)
        return EXIT_CONFIG
    section = mqtt_settings(settings)
    if section is None or not section.discovery:
        print(
            "edge-agent: discovery is off in this config (no [mqtt] section, enabled = false or "
            "discovery = false); shown is what it would publish",
            file=sys.stderr,
        )
    print(json.dumps(discovery_preview(settings), ensure_ascii=False, indent=2, sort_keys=True))
    return EXIT_OK


__all__ = [
    "NODES_EXITS",
    "broker_options",
    "ha_discovery_command",
    "nodes_command",
    "open_ask_client",
    "print_nodes",
]
