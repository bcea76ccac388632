"""``edge-agent mcp``: the daemon's skills as Model Context Protocol tools over stdio, for desktop
clients and ``mcp-proxy`` (docs/mcp.md). stdout carries the protocol alone: every word for people
goes to stderr."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edge_agentd.cli.exits import EXIT_BAD_INPUT, EXIT_CONFIG, EXIT_OK


def add_parser(commands: Any, endpoint_help: str) -> None:
    mcp = commands.add_parser(
        "mcp", help="serve the daemon's skills as Model Context Protocol tools on stdin/stdout"
    )
    mcp.add_argument("--endpoint", help=endpoint_help)
    mcp.add_argument(
        "--config",
        help="read what to offer from this config's [mcp] (skills, ask, ask_wait_s, watch_s)",
    )
    mcp.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the least severe records logged on stderr (default WARNING)",
    )


def mcp_command(args: argparse.Namespace) -> int:
    from edge_agentd.cli.logs import configure  # noqa: PLC0415
    from edge_agentd.client.errors import BadEndpoint  # noqa: PLC0415
    from edge_agentd.client.zmqclient import checked_endpoint  # noqa: PLC0415
    from edge_agentd.protocol.version import package_version  # noqa: PLC0415
    from edge_agentd.service.config.mcp import McpSettings  # noqa: PLC0415
    from edge_agentd.service.config.settings import ConfigError, load_settings  # noqa: PLC0415
    from edge_agentd.service.mcp.makelistener import INSTALL_HINT  # noqa: PLC0415

    configure(args.log_level)
    try:
        endpoint = None if args.endpoint is None else checked_endpoint(args.endpoint)
    except BadEndpoint as exc:
        sys.stderr.write(f"edge-agent mcp: {exc.message}\n")
        return EXIT_BAD_INPUT
    section = McpSettings()
    if args.config is not None:
        try:
            section = load_settings(args.config).mcp or section
        except ConfigError as exc:
            sys.stderr.write(f"edge-agent mcp: config error: {exc}\n")
            return EXIT_CONFIG
    try:
        from edge_agentd.service.mcp.stdio import run_stdio  # noqa: PLC0415 - optional extra
    except ImportError as exc:
        sys.stderr.write(f"edge-agent mcp: needs the mcp extra: {INSTALL_HINT} ({exc})\n")
        return EXIT_CONFIG
    run_stdio(endpoint, section, package_version())
    return EXIT_OK


__all__ = ["add_parser", "mcp_command"]
