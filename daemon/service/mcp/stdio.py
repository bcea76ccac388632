"""``edge-agent mcp``: the same server over stdio, for desktop clients and ``mcp-proxy``, with
the daemon reached over ZeroMQ as every client command reaches it."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from edge_agentd.service.config.mcp import McpSettings
from edge_agentd.service.mcp.backend import DaemonBackend
from edge_agentd.service.mcp.server import Tools, build, init_options


async def serve_stdio(tools: Tools, version: str) -> None:
    """Serve one client on stdin/stdout until it closes them; the tool list is watched."""
    server = build(tools, version)
    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as group:
        group.start_soon(tools.watch)
        await server.run(read_stream, write_stream, init_options(server))
        group.cancel_scope.cancel()


def run_stdio(endpoint: str | None, settings: McpSettings, version: str) -> None:
    """Block serving stdio (``endpoint``: the daemon's; None where every client looks)."""
    tools = Tools(DaemonBackend(endpoint), settings, notify=True)
    anyio.run(serve_stdio, tools, version)


__all__ = ["run_stdio", "serve_stdio"]
