"""``edge-agent mcp`` over stdio with the real ``mcp`` client, against a real daemon found by
``--endpoint``; and a daemon without the ``mcp`` extra: it starts as before, and with ``[mcp]``
set it stops with exit 78 naming what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from daemon_harness import start_daemon, stop_daemon, wait_ready, write_mock
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_harness import ANSWER, mcp_daemon
from voluptuous_openapi import convert_to_voluptuous

from edge_agentd.cli.exits import EXIT_CONFIG
from scripts.testbed.serve_command import edge_agent_command


def over_stdio(endpoint: str, *extra: str) -> dict[str, Any]:
    command = edge_agent_command("mcp", "--endpoint", endpoint, *extra)
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))

    async def main() -> dict[str, Any]:
        with anyio.fail_after(30):
            async with (
                stdio_client(parameters) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                listed = await client.list_tools()
                weight = await client.call_tool("beehive_weight", {"hive": 3})
                now = await client.call_tool("now", {})
                asked = await client.call_tool("ask", {"question": "How warm is it?"})
                return {"tools": listed.tools, "weight": weight, "now": now, "asked": asked}

    return anyio.run(main)


def test_edge_agent_mcp_speaks_stdio_to_a_local_daemon(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path) as (endpoint, _):
        got = over_stdio(endpoint)
    names = {tool.name for tool in got["tools"]}
    assert {"beehive_weight", "read_sensor", "now", "ask", "result"} <= names
    for tool in got["tools"]:
        convert_to_voluptuous(tool.input_schema)
    assert got["weight"].structured_content == {"quantity": "mass", "value": 44.5, "unit": "kg"}
    assert not got["now"].is_error
    assert got["asked"].structured_content["answer"] == ANSWER


def test_a_bad_endpoint_is_refused_at_once() -> None:
    done = subprocess.run(
        edge_agent_command("mcp", "--endpoint", "/not/a/url"),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 65
    assert done.stdout == ""  # stdout is the protocol's alone
    assert "did you mean ipc:///not/a/url" in done.stderr


def without_the_sdk(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import mcp`` fails as it does where the extra is not installed."""
    shim = tmp_path / "no-mcp" / "mcp"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n", encoding="utf-8"
    )
    return {"PYTHONPATH": os.pathsep.join([str(shim.parent), *sys.path])}


def test_without_the_extra_the_daemon_starts_as_before_and_mcp_says_what_to_install(
    tmp_path: Path,
) -> None:
    env = without_the_sdk(tmp_path)
    mock = write_mock(tmp_path / "mock.json", ['{"final_answer": "I cannot tell."}'])
    endpoint = f"ipc://{tmp_path}/agent.sock"
    process = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint], env=env)
    try:
        wait_ready(endpoint, process)
    finally:
        output = stop_daemon(process)
    assert process.returncode == 0, output
    config = tmp_path / "config.toml"
    config.write_text("[mcp]\nport = 0\n", encoding="utf-8")
    process = start_daemon(
        ["--config", str(config), "--model", f"mock:{mock}", "--endpoint", endpoint], env=env
    )
    output, _ = process.communicate(timeout=60)
    assert process.returncode == EXIT_CONFIG, output
    assert "[mcp] needs the mcp extra: pip install 'mcp>=2.3,<3'" in output
    stdio = subprocess.run(
        edge_agent_command("mcp", "--endpoint", endpoint),
        capture_output=True, text=True, timeout=60, env={**os.environ, **env},
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert stdio.returncode == EXIT_CONFIG
    assert "needs the mcp extra: pip install 'mcp>=2.3,<3'" in stdio.stderr


RAIN_PLUGIN = '''
def register(registry):
    @registry.skill(timeout=1.0)
    def rain_barrel_level() -> dict:
        """Water left in the rain barrel, in litres."""
        return {"quantity": "volume", "value": 112.0, "unit": "L"}
'''


def test_a_client_that_listens_is_told_when_the_tool_list_changes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    endpoint = f"ipc://{tmp_path}/agent.sock"
    config = tmp_path / "mcp.toml"
    config.write_text("[mcp]\nwatch_s = 0.2\n", encoding="utf-8")
    command = edge_agent_command("mcp", "--endpoint", endpoint, "--config", str(config))
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))

    def serve(place: Path, plugin: str | None) -> Any:
        args = ["--endpoint", endpoint]
        if plugin is not None:
            skills = place / "skills.d"
            skills.mkdir(mode=0o755)
            (skills / "plugin.py").write_text(plugin, encoding="utf-8")
            (place / "config.toml").write_text(
                f'[daemon]\nshutdown_grace_s = 0.05\n[skills]\ndirectories = ["{skills}"]\n',
                encoding="utf-8",
            )
            args += ["--config", str(place / "config.toml")]
        mock = write_mock(place / "mock.json", [f'{{"final_answer": "{ANSWER}"}}'])
        process = start_daemon([*args, "--model", f"mock:{mock}"])
        wait_ready(endpoint, process)
        return process

    async def main() -> tuple[set[str], set[str]]:
        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if "tools/list_changed" in repr(message) or "ToolListChanged" in repr(message):
                changed.set()

        first = await anyio.to_thread.run_sync(serve, tmp_path / "a", None)
        try:
            with anyio.fail_after(60):
                async with (
                    stdio_client(parameters) as (read, write),
                    ClientSession(read, write, message_handler=on_message) as client,
                ):
                    await client.initialize()
                    before = {tool.name for tool in (await client.list_tools()).tools}
                    await anyio.to_thread.run_sync(stop_daemon, first)
                    second = await anyio.to_thread.run_sync(serve, tmp_path / "b", RAIN_PLUGIN)
                    try:
                        await changed.wait()
                        after = {tool.name for tool in (await client.list_tools()).tools}
                    finally:
                        await anyio.to_thread.run_sync(stop_daemon, second)
        finally:
            await anyio.to_thread.run_sync(stop_daemon, first)
        return before, after

    before, after = anyio.run(main)
    assert "rain_barrel_level" not in before
    assert after - before == {"rain_barrel_level"}
