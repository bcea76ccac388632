"""sd_notify: the datagrams a real daemon process sends to a real AF_UNIX socket, in order."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from daemon_harness import ANSWER, start_daemon, stop_daemon, wait_ready, write_mock

from edge_agentd.service.systemd import Notifier


def bound_datagram_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(10)
    return sock


def test_notifier_does_nothing_outside_systemd() -> None:
    notifier = Notifier({})
    assert not notifier.enabled and notifier.watchdog_interval_s is None
    assert notifier.ready("ready") is False and notifier.watchdog() is False


def test_notifier_sends_assignments_and_reads_the_watchdog(tmp_path: Path) -> None:
    sock = bound_datagram_socket(tmp_path / "notify")
    try:
        env = {"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "4000000"}
        notifier = Notifier(env)
        assert notifier.watchdog_interval_s == 2.0
        assert notifier.ready("ready; 0 queued")
        assert sock.recv(4096) == b"READY=1\nSTATUS=ready; 0 queued"
        assert notifier.extend_timeout(30)
        assert sock.recv(4096) == b"EXTEND_TIMEOUT_USEC=30000000"
        notifier.close()
    finally:
        sock.close()
    other_pid = {"NOTIFY_SOCKET": "x", "WATCHDOG_USEC": "100", "WATCHDOG_PID": str(os.getpid() + 1)}
    assert Notifier(other_pid).watchdog_interval_s is None
    # A socket that went away is logged once and never raises.
    assert Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")}).status("x") is False


def test_the_daemon_reports_ready_status_watchdog_and_stopping_in_order(tmp_path: Path) -> None:
    notify = bound_datagram_socket(tmp_path / "notify")
    mock = write_mock(tmp_path / "mock.json", [ANSWER])
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    env = {"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "200000"}
    daemon = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint], env=env)
    try:
        wait_ready(endpoint, daemon)
        time.sleep(0.35)  # long enough for a few watchdog pings at 0.1 s
        daemon.send_signal(15)
        daemon.wait(15)
        messages: list[str] = []
        notify.settimeout(0.5)
        while True:
            try:
                messages.append(notify.recv(4096).decode())
            except TimeoutError:
                break
    finally:
        notify.close()
        output = stop_daemon(daemon)
    assert daemon.returncode == 0, output
    lines = [line for message in messages for line in message.split("\n")]
    ready = lines.index("READY=1")
    stopping = lines.index("STOPPING=1")
    watchdogs = [i for i, line in enumerate(lines) if line == "WATCHDOG=1"]
    assert any(line.startswith("EXTEND_TIMEOUT_USEC=") for line in lines[:ready])
    assert lines[ready + 1].startswith("STATUS=ready")
    assert sum(ready < i < stopping for i in watchdogs) >= 2, lines
    assert ready < stopping and lines[stopping + 1].startswith("STATUS=")
    assert lines[-1] == "STATUS=stopped"
