"""``[mcp]`` checked at start: loopback unless ``allow`` names who may connect, addresses and
networks that parse, a token file that can be read; each mistake a config error (exit 78) that
says what to fix. And the ``call`` op over ZeroMQ, which the server's skill tools use."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_harness import start_daemon, write_mock
from mcp_harness import mcp_daemon

from edge_agentd.cli.exits import EXIT_CONFIG, EXIT_UNAVAILABLE
from edge_agentd.client.errors import DaemonError
from edge_agentd.client.zmqclient import Client
from edge_agentd.service.config.mcp import McpSettings, read_token
from edge_agentd.service.config.settings import ConfigError, parse_settings


def test_a_lan_host_needs_an_allow_list() -> None:
    with pytest.raises(ConfigError, match="is not loopback: name who may connect in `allow`"):
        parse_settings('[mcp]\nhost = "0.0.0.0"\n')
    settings = parse_settings('[mcp]\nhost = "0.0.0.0"\nallow = ["192.168.1.0/24", "10.0.0.7"]\n')
    assert settings.mcp is not None
    assert [str(n) for n in settings.mcp.networks()][2:] == ["192.168.1.0/24", "10.0.0.7/32"]
    with pytest.raises(ConfigError, match="'kitchen' is not an address or network"):
        parse_settings('[mcp]\nallow = ["kitchen"]\n')
    with pytest.raises(ConfigError, match=r"unknown key `max_sesions` in \[mcp\] \(did you mean"):
        parse_settings("[mcp]\nmax_sesions = 3\n")


def test_the_token_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("abc\nignored\n", encoding="utf-8")
    assert read_token(McpSettings(token_file=str(token))) == "abc"
    assert read_token(McpSettings()) is None
    token.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must hold one token on its first line"):
        read_token(McpSettings(token_file=str(token)))
    with pytest.raises(ValueError, match="No such file"):
        read_token(McpSettings(token_file=str(tmp_path / "absent")))


def serve_exit(tmp_path: Path, mcp: str) -> tuple[int, str]:
    mock = write_mock(tmp_path / "mock.json", ['{"final_answer": "I cannot tell."}'])
    config = tmp_path / "config.toml"
    config.write_text(f"[mcp]\n{mcp}", encoding="utf-8")
    process = start_daemon(
        ["--config", str(config), "--model", f"mock:{mock}", "--endpoint", f"ipc://{tmp_path}/s"]
    )
    output, _ = process.communicate(timeout=60)
    return process.returncode, output


def test_serve_stops_on_a_bad_mcp_section_or_a_port_in_use(tmp_path: Path) -> None:
    code, output = serve_exit(tmp_path, f'port = 0\ntoken_file = "{tmp_path}/none"\n')
    assert code == EXIT_CONFIG
    assert "mcp: token_file" in output
    (tmp_path / "first").mkdir()
    with mcp_daemon(tmp_path / "first") as (_, url):
        port = url.rsplit(":", 1)[1].split("/")[0]
        code, output = serve_exit(tmp_path, f"port = {port}\n")
    assert code == EXIT_UNAVAILABLE
    assert f"mcp: cannot listen on 127.0.0.1:{port}" in output


def test_the_call_op_over_zeromq(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path) as (endpoint, _), Client(endpoint, timeout=10) as client:
        reply = client.request("call", skill="beehive_weight", arguments={"hive": 4})
        assert reply["ok"] is True
        assert reply["result"] == {"quantity": "mass", "value": 45.5, "unit": "kg"}
        assert reply["error"] is None
        record = client.result(reply["id"])
        assert record["source"] == "zmq"
        assert record["query"] == 'call beehive_weight {"hive": 4}'
        assert record["outcome"] == "answered"
        with pytest.raises(DaemonError) as unknown:
            client.request("call", skill="rain_gauge")
        assert unknown.value.code == "not_found"
        assert "beehive_weight" in unknown.value.message
        with pytest.raises(DaemonError) as bad:
            client.request("call", skill="beehive_weight", arguments={"hive": [1]})
        assert bad.value.code == "bad_request"
        assert "argument 'hive'" in bad.value.message
        with pytest.raises(DaemonError) as not_a_map:
            client.request("call", skill="beehive_weight", arguments=[1])
        assert not_a_map.value.code == "bad_request"
        failed = client.request("call", skill="broken_gauge", arguments={"zone": 1})
        assert failed["ok"] is False
        assert failed["error"] == "OSError: zone 1: no such device"


def test_result_by_key_over_zeromq(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path) as (endpoint, _), Client(endpoint, timeout=10) as client:
        ran = client.run("How warm is the hall?", key="hall-7")
        record = client.request("result", key="hall-7")
        assert record["run_id"] == ran["run_id"]
        assert record["key"] == "hall-7"
        assert record["state"] == "done"
        with pytest.raises(DaemonError) as unknown:
            client.request("result", key="no-such-key")
        assert unknown.value.code == "not_found"
        for fields in ({}, {"key": "hall-7", "target": ran["run_id"]}):
            with pytest.raises(DaemonError) as neither:
                client.request("result", **fields)
            assert neither.value.code == "bad_request"
            assert "`target` (a run's id) or `key`" in neither.value.message


def test_a_call_may_not_take_the_id_of_one_still_going(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path) as (endpoint, _), Client(endpoint, timeout=10) as client:
        client.send("call", {"skill": "stuck_valve"}, request_id="valve-1")
        client.send("call", {"skill": "beehive_weight"}, request_id="valve-1")
        replies = [client.receive(10), client.receive(10)]
        assert [reply and reply["kind"] for reply in replies] == ["error", "result"]
        assert replies[0] is not None
        assert replies[0]["code"] == "bad_request"
        assert "already going" in replies[0]["message"]
        assert replies[1] is not None
        assert "ran past its timeout" in replies[1]["error"]
