"""The command-line options of ``ask --mqtt``, ``nodes`` and ``ha-discovery``.

Apart from the commands (:mod:`edge_agentd.cli.mqtt`), so that building the ``edge-agent`` parser
imports neither :mod:`edge_agentd.client.mqttclient` nor :mod:`edge_agentd.protocol.mqttwire` (and
their dataclasses): the client commands start faster (scripts/bench/bench_cli_start.py).
"""

from __future__ import annotations

import argparse
from typing import Any

DEFAULT_PREFIX = "edge-agent"
""":data:`edge_agentd.protocol.mqttwire.DEFAULT_PREFIX`, which a test holds equal."""
DEFAULT_DISCOVERY_PREFIX = "homeassistant"
""":data:`edge_agentd.protocol.mqttwire.DEFAULT_DISCOVERY_PREFIX`, which a test holds equal."""


def add_arguments(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """The broker options of ``nodes`` and ``ask``."""
    parser.add_argument(
        "--mqtt",
        metavar="HOST[:PORT]",
        required=required,
        help="ask through this MQTT broker instead of the daemon's socket",
    )
    parser.add_argument("--mqtt-prefix", default=DEFAULT_PREFIX, help="topic prefix")
    parser.add_argument("--mqtt-username", help="broker user name")
    parser.add_argument("--mqtt-password-file", help="file holding the broker password")
    parser.add_argument("--mqtt-ca", help="CA file: connect with TLS and check the broker")
    parser.add_argument("--mqtt-tls", action="store_true", help="TLS with the system's CAs")


def add_parsers(commands: Any) -> None:
    """``edge-agent nodes`` and ``edge-agent ha-discovery``."""
    nodes = commands.add_parser("nodes", help="list the edge-agent nodes on an MQTT broker")
    add_arguments(nodes, required=True)
    nodes.add_argument("--all", action="store_true", help="offline nodes too")
    nodes.add_argument(
        "--forget",
        metavar="NODE",
        help="clear what NODE left on the broker (status, info, Home Assistant device); "
        "for a node whose daemon is stopped or has no [mqtt] any more",
    )
    nodes.add_argument(
        "--force", action="store_true", help="with --forget: even if NODE's status says online"
    )
    nodes.add_argument(
        "--discovery-prefix",
        default=DEFAULT_DISCOVERY_PREFIX,
        help="with --forget: Home Assistant's discovery prefix (default %(default)s)",
    )
    nodes.add_argument("--json", action="store_true", help="print JSON")
    nodes.add_argument("--timeout", type=float, default=5.0, help="seconds (default 5)")
    discovery = commands.add_parser(
        "ha-discovery", help="show the Home Assistant discovery configs the daemon publishes"
    )
    discovery.add_argument("--print", action="store_true", required=True, help="print them")
    discovery.add_argument("--config", help="TOML config file (its [mqtt] section)")


def add_ask_arguments(ask: argparse.ArgumentParser) -> None:
    """``ask --mqtt HOST --node NAME``."""
    add_arguments(ask)
    ask.add_argument(
        "--node",
        help="with --mqtt: the node to ask (see `edge-agent nodes`); without it, the one node "
        "online",
    )


__all__ = ["add_arguments", "add_ask_arguments", "add_parsers"]
