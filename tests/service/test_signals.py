"""A stop signal that lands while another one is being handled never wedges the daemon.

Python runs a signal's handler between two bytecodes of the main thread, and that includes the
bytecodes of another handler still running. A handler that takes a lock (``threading.Event.set``
does) deadlocks when a second SIGTERM interrupts it while it holds the lock: systemd's stop, or a
test's, sends SIGTERM and then another one moments later. CI saw the daemon hang so for a minute
and get killed (test_plugin_start). The stop request now takes no lock, and no handler logs: a
SIGHUP is counted, and the serving loop writes its line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import zmq
from daemon_harness import (
    Peer,
    answer,
    run_request,
    start_daemon,
    stop_daemon,
    wait_ready,
    write_mock,
)

from edge_agentd.service.lifecycle import Lifecycle

TESTS = Path(__file__).parents[1]

# Every line the first stop request runs (its callees' too) sends another SIGTERM, whose handler
# runs inside the first one, at that very point: wherever the first holds a lock, the second
# would wait on it for ever.
NESTED_STOP = textwrap.dedent(
    """
    import os, signal, sys
    from daemon_harness import running_server

    depth = 0

    def on_line(frame, event, arg):
        if event == "line" and depth == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return on_line

    def on_call(frame, event, arg):
        return on_line

    with running_server() as (server, endpoint):
        def stop(*_):
            global depth
            depth += 1
            try:
                server.stop()
            finally:
                depth -= 1

        signal.signal(signal.SIGTERM, stop)
        sys.settrace(on_call)
        os.kill(os.getpid(), signal.SIGTERM)
        sys.settrace(None)
        print("stopped:", server.lifecycle.stop_requested, flush=True)
    print("serving loop ended:", server.lifecycle.phase, flush=True)
    """
)


def test_a_stop_request_interrupted_at_any_point_by_another_signal_returns() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    # The timeout only bounds a deadlock; the script takes about a second.
    done = subprocess.run(
        [sys.executable, "-c", NESTED_STOP],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["stopped: True", "serving loop ended: stopped"]


def test_a_burst_of_stop_signals_ends_the_daemon_cleanly(tmp_path: Path) -> None:
    mock = write_mock(tmp_path / "mock.json", [answer("I cannot tell how warm the kitchen is.")])
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    daemon = start_daemon(["--model", f"mock:{mock}", "--endpoint", endpoint])
    context: zmq.Context[Any] = zmq.Context()
    try:
        wait_ready(endpoint, daemon)
        peer = Peer(context, endpoint)
        peer.send(run_request(id="before"))
        assert peer.recv(30)["outcome"] == "answered"
        peer.close()
        for signum in [signal.SIGTERM, signal.SIGINT, signal.SIGHUP] * 20:
            if daemon.poll() is not None:
                break
            daemon.send_signal(signum)
    finally:
        context.destroy(linger=0)
        output = stop_daemon(daemon, timeout=60)
    assert daemon.returncode == 0, output
    assert "edge-agent stopped" in output


def test_sighups_are_counted_by_the_handler_and_told_once_by_the_loop() -> None:
    # The handler only counts: the loop writes the log line, never the handler, which could
    # land inside the loop's own write to the same stream.
    lifecycle = Lifecycle()
    lifecycle.hang_up()
    lifecycle.hang_up()
    assert lifecycle.take_hangups() == 2
    assert lifecycle.take_hangups() == 0
    lifecycle.hang_up()
    assert lifecycle.take_hangups() == 1
