"""Hostile input to the Model Context Protocol server: malformed JSON-RPC, huge bodies, unknown
tools and methods, a flood of sessions, a client from a refused address, no token, a web page;
and fuzzed arguments. Each gets a clear error, and loses nothing: the daemon answers ZeroMQ and
MCP clients as before, and no skill runs for a refused request."""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError
from mcp_harness import ANSWER, call, mcp_daemon, session, status, tools

from edge_agentd.client.zmqclient import Client
from edge_agentd.service.config.mcp import McpSettings
from edge_agentd.service.mcp.http import Guard

JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"},
    },
}


def post(
    url: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None
) -> httpx2.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(
        url, content=content, headers={**JSON_HEADERS, **(headers or {})}, timeout=10
    )


def still_serving(endpoint: str, url: str) -> None:
    """Nothing was lost: ZeroMQ answers a run, and MCP lists and calls a skill."""
    with Client(endpoint, timeout=10) as client:
        assert client.run("how warm?")["answer"] == ANSWER
    assert "beehive_weight" in tools(url)
    assert call(url, "beehive_weight").structured_content["value"] == 42.5
    assert status(endpoint)["crashed_threads"] == {}


def test_malformed_json_rpc_and_huge_bodies_get_clear_errors(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path, "port = 0\nmax_body_bytes = 65536\n") as (endpoint, url):
        not_json = post(url, b"{this is not json")
        assert not_json.status_code == 400
        assert not_json.json()["error"]["code"] == -32700  # JSON-RPC's parse error
        not_rpc = post(url, {"hello": "there"})
        assert not_rpc.status_code == 400
        assert not_rpc.json()["error"]["code"] in (-32600, -32602)  # an invalid request
        huge = post(url, b'{"jsonrpc": "2.0", "pad": "' + b"x" * 1_000_000 + b'"}')
        assert huge.status_code == 413
        wrong_type = httpx2.post(
            url, content=b"x", headers={"content-type": "text/plain"}, timeout=10
        )
        assert wrong_type.status_code in (400, 406, 415)
        still_serving(endpoint, url)


def test_unknown_tools_and_methods_are_json_rpc_errors(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path) as (endpoint, url):
        with pytest.raises(
            MCPError, match=r"no tool named 'rain_gauge'; the tools: .*beehive_weight"
        ):
            session(url, lambda client: client.call_tool("rain_gauge", {}), unwrap=True)
        with pytest.raises(MCPError, match="Method not found"):
            session(url, lambda client: client.list_prompts(), unwrap=True)
        bad = call(url, "beehive_weight", {"hive": "second"})
        assert bad.is_error
        assert "argument 'hive'" in bad.content[0].text
        extra = call(url, "beehive_weight", {"colour": "red"})
        assert extra.is_error
        assert "unexpected argument 'colour'" in extra.content[0].text
        no_question = call(url, "ask", {})
        assert no_question.is_error
        assert "needs `question`" in no_question.content[0].text
        unknown_run = session(url, lambda c: c.call_tool("result", {"run_id": "nope"}), unwrap=True)
        assert unknown_run.is_error
        assert "not_found" in unknown_run.content[0].text
        assert status(endpoint)["skill_calls"].get("calls_ok", 0) == 0
        still_serving(endpoint, url)


def test_a_flood_of_sessions_is_bounded_and_others_are_served(tmp_path: Path) -> None:
    config = "port = 0\nmax_sessions = 4\nsession_idle_s = 1\n"
    with mcp_daemon(tmp_path, config) as (endpoint, url):
        answers = [post(url, INITIALIZE) for _ in range(10)]  # never closed: left to idle out
        codes = [answer.status_code for answer in answers]
        assert codes.count(200) == 4
        assert codes.count(503) == 6
        with Client(endpoint, timeout=10) as client:  # ZeroMQ throughout
            assert client.status()["state"] == "ready"
        until = time.monotonic() + 30
        while post(url, INITIALIZE).status_code == 503:  # the idle ones are closed
            assert time.monotonic() < until, "the idle sessions were never closed"
            time.sleep(0.2)
        still_serving(endpoint, url)


def local_address() -> str | None:
    """This machine's address on its way out, if it has one besides loopback (no packet is
    sent: a UDP socket only picks its route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe, contextlib.suppress(OSError):
        probe.connect(("192.0.2.1", 9))
        address: str = probe.getsockname()[0]
        return None if address.startswith("127.") else address
    return None


def test_an_address_the_config_does_not_name_is_refused_before_any_skill_runs(
    tmp_path: Path,
) -> None:
    config = 'host = "0.0.0.0"\nport = 0\nallow = ["198.51.100.0/24"]\n'
    with mcp_daemon(tmp_path, config) as (endpoint, url):
        port = url.rsplit(":", 1)[1].split("/")[0]
        address = local_address()
        refused_urls = [f"http://{address}:{port}/mcp"] if address else []
        for refused in refused_urls:
            answer = post(refused, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "beehive_weight", "arguments": {}}})  # fmt: skip
            assert answer.status_code == 403
            assert "see [mcp] allow" in answer.text
        # The guard itself, for an address no interface of this machine has.

        reached: list[str] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            reached.append(scope["path"])

        async def from_outside() -> int:
            section = McpSettings(host="0.0.0.0", allow=["198.51.100.0/24"])
            guard = Guard(app, section.networks(), None, collections.Counter(), threading.Lock())
            transport = httpx2.ASGITransport(app=guard, client=("192.0.2.77", 40000))
            async with httpx2.AsyncClient(transport=transport) as client:
                return (await client.post("http://pi/mcp", content=b"{}")).status_code

        assert anyio.run(from_outside) == 403
        assert reached == []
        counters = status(endpoint)
        assert counters["mcp"]["counters"].get("refused_address", 0) == len(refused_urls)
        assert counters["skill_calls"] == {}  # no skill ran
        still_serving(endpoint, url)  # loopback is always allowed


def test_a_bearer_token_and_web_pages(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n", encoding="utf-8")
    with mcp_daemon(tmp_path, f'port = 0\ntoken_file = "{token}"\n') as (endpoint, url):
        missing = post(url, INITIALIZE)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert post(url, INITIALIZE, {"authorization": "Bearer wrong"}).status_code == 401
        page = post(url, INITIALIZE, {"authorization": "Bearer s3cret-token",
                                      "origin": "http://evil.example"})  # fmt: skip
        assert page.status_code == 403
        listed = tools(url, {"authorization": "Bearer s3cret-token"})
        assert "beehive_weight" in listed
        counters = status(endpoint)["mcp"]["counters"]
        assert counters["refused_token"] == 2
        assert counters["refused_origin"] == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


def test_fuzzed_arguments_get_a_result_or_a_tool_error(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path) as (endpoint, url):

        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
        @given(
            name=st.sampled_from(["beehive_weight", "read_sensor", "resolve_date", "ask", "result"]),
            arguments=st.dictionaries(
                st.sampled_from(["hive", "name", "text", "question", "run_id", "wait_s", "key", "x"]),
                json_values, max_size=4,
            ),
        )  # fmt: skip
        def fuzz(name: str, arguments: dict[str, Any]) -> None:
            arguments = {k: v for k, v in arguments.items() if not (k == "wait_s" and v)}
            result = call(url, name, arguments)
            assert result.content and result.content[0].text
            if not result.is_error:
                assert result.structured_content is not None

        fuzz()
        still_serving(endpoint, url)


def test_clients_that_never_finish_their_request_hold_nothing_else_up(tmp_path: Path) -> None:
    """Slow clients (a request's headers half sent, then nothing) cost the HTTP server at most
    its connections: ZeroMQ is served throughout, and MCP again once they go."""
    with mcp_daemon(tmp_path, "port = 0\nmax_connections = 8\n") as (endpoint, url):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        slow = []
        try:
            for _ in range(40):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99\r\n")
                slow.append(sock)
            with Client(endpoint, timeout=10) as client:
                assert client.run("how warm?")["answer"] == ANSWER
                assert client.request("call", skill="beehive_weight")["ok"] is True
        finally:
            for sock in slow:
                sock.close()
        still_serving(endpoint, url)
