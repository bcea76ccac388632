"""A real ``edge-agent serve`` with ``[mcp]`` on a port the OS picks, and the real ``mcp`` client
used as Home Assistant uses it: a new session for every request, each within 10 s."""

from __future__ import annotations

import contextlib
import json
import textwrap
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from daemon_harness import start_daemon, stop_daemon, wait_ready, write_mock
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from edge_agentd.client.zmqclient import Client

HA_TIMEOUT_S = 10.0
"""Home Assistant's timeout for a whole tool call (session, initialize, call)."""
ANSWER = "I cannot tell: no skill reads the room."
T = TypeVar("T")

PLUGIN = '''
import time


def register(registry):
    @registry.skill(timeout=1.0, examples=["How heavy is the beehive?"])
    def beehive_weight(hive: int = 1) -> dict:
        """The weight of a beehive, in kilograms."""
        return {"quantity": "mass", "value": 41.5 + hive, "unit": "kg"}

    @registry.skill(timeout=0.5)
    def stuck_valve() -> str:
        """A valve that never answers."""
        time.sleep(30)
        return "never"

    @registry.skill
    def broken_gauge(zone: int) -> float:
        """A gauge whose driver fails."""
        raise OSError(f"zone {zone}: no such device")
'''


@contextlib.contextmanager
def mcp_daemon(
    tmp_path: Path,
    mcp: str = "port = 0\n",
    *,
    replies: list[Any] | None = None,
    plugin: str = PLUGIN,
    demo: bool = True,
) -> Iterator[tuple[str, str]]:
    """``edge-agent serve`` (on the demo device's sensors) with a plugin directory, a mock model
    and ``[mcp]`` (its body ``mcp``); yields its ZeroMQ endpoint and the MCP server's URL."""
    skills = tmp_path / "skills.d"
    skills.mkdir(mode=0o755, exist_ok=True)
    (skills / "hive.py").write_text(textwrap.dedent(plugin), encoding="utf-8")
    mock = write_mock(
        tmp_path / "mock.json",
        list(replies or [json.dumps({"final_answer": ANSWER})]),
    )
    config = tmp_path / "config.toml"
    config.write_text(
        f'[daemon]\nshutdown_grace_s = 0.05\n[skills]\ndirectories = ["{skills}"]\n[mcp]\n{mcp}',
        encoding="utf-8",
    )
    endpoint = f"ipc://{tmp_path}/agent.sock"
    process = start_daemon(
        ["--config", str(config), "--model", f"mock:{mock}", "--endpoint", endpoint]
        + (["--demo"] if demo else [])
    )
    try:
        wait_ready(endpoint, process)
        yield endpoint, status(endpoint)["mcp"]["url"]
    finally:
        output = stop_daemon(process)
        assert process.returncode == 0, output
        assert "Traceback" not in output, output


def status(endpoint: str) -> dict[str, Any]:
    with Client(endpoint, timeout=10) as client:
        return client.status()


def session(
    url: str,
    use: Callable[[ClientSession], Awaitable[T]],
    headers: dict[str, str] | None = None,
    *,
    unwrap: bool = False,
) -> T:
    """One request as Home Assistant makes it: a fresh session, initialized, used once, closed,
    the whole within :data:`HA_TIMEOUT_S`. With ``unwrap``, an error raised inside the session
    comes out alone, not in the task group's ExceptionGroup."""

    async def main() -> T:
        with anyio.fail_after(HA_TIMEOUT_S):
            async with (
                httpx2.AsyncClient(headers=headers or {}, timeout=HA_TIMEOUT_S) as http,
                streamable_http_client(url, http_client=http) as (read, write, *_),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return await use(client)

    if not unwrap:
        return anyio.run(main)
    try:
        return anyio.run(main)
    except BaseExceptionGroup as group:
        first = group.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None


def tools(url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The tool list, by name."""
    listed = session(url, lambda client: client.list_tools(), headers)
    return {tool.name: tool for tool in listed.tools}


def call(url: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
    return session(url, lambda client: client.call_tool(name, arguments or {}))


__all__ = ["ANSWER", "HA_TIMEOUT_S", "PLUGIN", "call", "mcp_daemon", "session", "status", "tools"]
