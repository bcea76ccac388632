"""The daemon's one thread pattern (service/threads): start once, stop within a deadline, crash
kept; and the one wake-up pipe a thread's poll is woken by.

Real threads; no timing is asserted, only what the thread says about itself.
"""

from __future__ import annotations

import logging
import select
import threading

import pytest
from daemon_harness import running_server, wait_for

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.service.threads.daemonthread import DaemonThread, crashes
from edge_agentd.service.threads.wakeup import WakeUp


def test_the_loop_runs_on_a_named_daemon_thread_once_however_often_started() -> None:
    ran: list[str] = []
    done = threading.Event()

    def loop() -> None:
        ran.append(threading.current_thread().name)
        done.set()

    thread = DaemonThread("edge-agent-test", loop)
    assert not thread.started
    thread.start()
    thread.start()
    assert done.wait(10)
    assert thread.join(10)
    assert ran == ["edge-agent-test"]
    assert thread.crash is None


def test_stop_asks_the_loop_to_end_and_says_it_ended() -> None:
    stopped = threading.Event()
    thread = DaemonThread("edge-agent-test", stopped.wait, ask_stop=stopped.set)
    thread.start()
    assert thread.stop(10) is True
    assert not thread.is_alive()


def test_a_thread_never_started_counts_as_stopped() -> None:
    asked: list[bool] = []
    assert DaemonThread("idle", lambda: None, ask_stop=lambda: asked.append(True)).stop(0) is True
    assert asked == [True]


def test_a_stop_past_its_deadline_is_reported_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    thread = DaemonThread("edge-agent-stuck", release.wait)  # deaf to stop requests
    thread.start()
    with caplog.at_level(logging.WARNING):
        assert thread.stop(0.01) is False
    assert thread.is_alive()
    assert "edge-agent-stuck did not stop" in caplog.text
    release.set()
    assert thread.join(10) is True


@pytest.mark.parametrize("error", [RuntimeError("broken"), SystemExit(3), KeyboardInterrupt()])
def test_a_crash_is_logged_and_kept_whatever_escapes(
    error: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    def loop() -> None:
        raise error

    thread = DaemonThread("edge-agent-crashy", loop)
    with caplog.at_level(logging.ERROR):
        thread.start()
        assert thread.join(10)
    assert thread.crash is not None
    assert thread.crash.startswith(type(error).__name__)
    assert "edge-agent-crashy crashed" in caplog.text
    assert caplog.records[-1].exc_info is not None
    well = DaemonThread("edge-agent-well", lambda: None)
    assert crashes([thread, well]) == {"edge-agent-crashy": thread.crash}


def test_a_daemon_thread_that_crashed_is_shown_in_status() -> None:
    """The model's load raising past the loader's own handling (it catches Exception) ends its
    thread: ``status`` names it, says what ended it, and the daemon is ``degraded``."""
    def load() -> ModelHandle:
        raise KeyboardInterrupt("the load was interrupted")

    with running_server(load=load, wait_ready=False) as (server, _):
        wait_for(lambda: bool(server.status()["crashed_threads"]), 30)
        assert server.status()["crashed_threads"] == {
            "edge-agent-load": "KeyboardInterrupt: the load was interrupted"
        }
        assert server.status()["journal"]["state"] != "degraded"
        assert server.status()["state"] == "degraded"


def test_a_wake_up_from_another_thread_ends_a_poll_until_drained() -> None:
    wakeup = WakeUp()
    try:
        poller = select.poll()
        poller.register(wakeup.fileno(), select.POLLIN)
        assert poller.poll(0) == []
        waker = threading.Thread(target=lambda: [wakeup.wake() for _ in range(10_000)])
        waker.start()
        waker.join(30)
        assert poller.poll(10_000) != []  # woken, however full the pipe got
        wakeup.drain()
        assert poller.poll(0) == []  # every wake-up read: the next poll waits for a new one
    finally:
        wakeup.close()
    wakeup.wake()  # a closed pipe belongs to a poll that has ended: waking it is no error
