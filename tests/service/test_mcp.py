"""The Model Context Protocol server on Home Assistant's path: the real ``mcp`` client against a
real ``edge-agent serve`` over streamable HTTP, a new session for every request, each within
Home Assistant's 10 s; every tool's schema converted as Home Assistant converts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import ANSWER, call, mcp_daemon, session, status, tools
from voluptuous_openapi import convert_to_voluptuous

from edge_agentd.client.zmqclient import Client

PLUGIN_SKILLS = {"beehive_weight", "stuck_valve", "broken_gauge"}


def arguments_for(name: str, sensors: list[str]) -> dict[str, Any]:
    """Arguments a person would pass each built-in skill that needs some (the demo device's)."""
    return {
        "read_sensor": {"name": sensors[0]},
        "compare_sensors": {"first": sensors[0], "second": sensors[-1]},
        "resolve_date": {"text": "25 December 2026"},
    }.get(name, {})


def test_home_assistants_path_lists_and_calls_every_skill(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path) as (endpoint, url):
        with Client(endpoint, timeout=10) as client:
            served = {skill["name"] for skill in client.skills()}
        listed = tools(url)
        assert set(listed) == served | {"ask", "result"}
        assert served >= PLUGIN_SKILLS
        for tool in listed.values():
            convert_to_voluptuous(tool.input_schema)  # what Home Assistant does to each
            assert tool.description
        sensors_result = call(url, "list_sensors")
        assert not sensors_result.is_error, sensors_result
        sensors = [s["name"] for s in sensors_result.structured_content["sensors"]]
        called = 0
        for name in sorted(served - {"stuck_valve", "broken_gauge"}):
            result = call(url, name, arguments_for(name, sensors))
            called += 1
            assert not result.is_error, (name, result)
            assert result.structured_content is not None, name
            assert result.content[0].text.startswith(f"{name}: "), name
        weight = call(url, "beehive_weight", {"hive": 2})
        assert weight.structured_content == {"quantity": "mass", "value": 43.5, "unit": "kg"}
        assert weight.content[0].text == "beehive_weight: value: 43.5 kg"
        with Client(endpoint, timeout=10) as client:
            runs = client.runs(limit=200)
        mcp_runs = [run for run in runs if run["source"] == "mcp"]
        assert len(mcp_runs) == called + 2  # list_sensors and the second beehive_weight
        assert all(run["query"].startswith("call ") for run in mcp_runs)
        counters = status(endpoint)
        assert counters["skill_calls"]["calls_ok"] == called + 2
        assert counters["mcp"]["counters"]["tool_calls"] == called + 2
        assert counters["mcp"]["counters"]["tools_listed"] >= 1  # the client lists to check


def test_a_skill_that_raises_or_hangs_is_a_tool_error_and_the_daemon_goes_on(
    tmp_path: Path,
) -> None:
    with mcp_daemon(tmp_path) as (endpoint, url):
        broken = call(url, "broken_gauge", {"zone": 3})
        assert broken.is_error
        assert broken.content[0].text == "broken_gauge failed: OSError: zone 3: no such device"
        stuck = call(url, "stuck_valve")
        assert stuck.is_error
        assert "ran past its timeout of 0.5 s" in stuck.content[0].text
        again = call(url, "stuck_valve")  # its first call still hangs: not started again
        assert again.is_error
        assert "still running from an earlier call that hung" in again.content[0].text
        assert not call(url, "beehive_weight").is_error
        with Client(endpoint, timeout=10) as client:
            assert client.run("how warm?")["answer"] == ANSWER  # ZeroMQ served throughout
        counters = status(endpoint)["skill_calls"]
        assert counters["calls_timed_out"] == 1
        assert counters["calls_failed"] == 3
        assert status(endpoint)["crashed_threads"] == {}


def test_ask_answers_within_the_wait_and_result_fetches_a_slow_one(tmp_path: Path) -> None:
    slow = [{"text": json.dumps({"final_answer": ANSWER}), "delay_s": 3.0}]
    with mcp_daemon(tmp_path, replies=slow) as (endpoint, url):
        first = call(url, "ask", {"question": "How warm is the kitchen?", "wait_s": 0.5})
        assert not first.is_error
        running = first.structured_content
        assert running["state"] == "running"
        assert running["run_id"] in first.content[0].text
        done = call(url, "result", {"run_id": running["run_id"], "wait_s": 8})
        assert done.structured_content["answer"] == ANSWER
        assert done.content[0].text == ANSWER
        # The default wait (8 s) outlasts this run: the answer comes in the one call.
        answered = call(url, "ask", {"question": "How warm is the hall?", "key": "hall-1"})
        assert answered.structured_content["answer"] == ANSWER
        assert answered.structured_content["state"] == "done"
        # The key asks once: the same key gives the same run, at once.
        again = call(url, "ask", {"question": "How warm is the hall?", "key": "hall-1"})
        assert again.structured_content["run_id"] == answered.structured_content["run_id"]
        by_key = call(url, "result", {"key": "hall-1"})
        assert by_key.structured_content["run_id"] == answered.structured_content["run_id"]
        assert by_key.content[0].text == ANSWER
        both = call(url, "result", {"key": "hall-1", "run_id": running["run_id"]})
        assert both.is_error
        assert "`run_id` (the id `ask` returned) or `key`, one" in both.content[0].text
        with Client(endpoint, timeout=10) as client:
            record = client.result(running["run_id"])
        assert record["source"] == "mcp"
        assert record["outcome"] == "answered"


def test_an_allow_list_of_skills_and_no_model_tools(tmp_path: Path) -> None:
    config = 'port = 0\nskills = ["beehive_weight", "now"]\nask = false\n'
    with mcp_daemon(tmp_path, config) as (_, url):
        assert set(tools(url)) == {"beehive_weight", "now"}
        assert not call(url, "now").is_error
        for hidden in ("ask", "read_sensor"):
            with pytest.raises(MCPError, match=f"no tool named '{hidden}'"):
                session(url, lambda client, name=hidden: client.call_tool(name, {}), unwrap=True)


def test_an_older_client_negotiates_its_own_protocol_version(tmp_path: Path) -> None:
    """Home Assistant releases ship older SDKs: their ``initialize`` (2025-03-26 and 2025-06-18,
    streamable HTTP) is answered in their version."""
    import httpx2

    with mcp_daemon(tmp_path) as (_, url):
        for version in ("2025-03-26", "2025-06-18"):
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "home-assistant", "version": "2025.6"},
                },
            }
            answer = httpx2.post(
                url,
                json=body,
                headers={"accept": "application/json, text/event-stream"},
                timeout=10,
            )
            assert answer.status_code == 200
            data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
            result = json.loads(data[0] if data else answer.text)["result"]
            assert result["protocolVersion"] == version
            assert "tools" in result["capabilities"]
            assert result["serverInfo"]["name"] == "edge-agent"
