"""Every Ctrl-C of ``edge-agent ask`` cancels its run (issue 44), round after round, with runs
queued behind each other: the running one, one that waits, and one just leaving the queue as the
run before it is cancelled. None of them runs on, none is answered, and the model is free after."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from conftest import ScriptedDaemon
from daemon_harness import ANSWER, wait_for

EDGE_AGENT = str(Path(sys.executable).with_name("edge-agent"))
ROUNDS = 4
ASKS = 3


def test_every_ctrl_c_of_ask_cancels_its_run_whether_it_runs_or_waits(
    scripted_daemon: ScriptedDaemon,
) -> None:
    slow = [{"text": ANSWER, "delay_s": 60}]
    server, endpoint = scripted_daemon(slow, config="[daemon]\nqueue_per_client = 8\n")
    cancelled = 0
    for round_ in range(ROUNDS):
        asking = [
            subprocess.Popen(
                [EDGE_AGENT, "ask", f"question {round_}.{n}", "--endpoint", endpoint],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(ASKS)
        ]
        try:
            # One runs, the others wait behind it.
            wait_for(
                lambda: server.status()["running"] is not None
                and server.status()["queue_depth"] == ASKS - 1,
                60,
            )
            # In turns: the running one first (the next leaves the queue as it is cancelled),
            # or the last queued first, or the middle one.
            order = [list(range(ASKS)), list(reversed(range(ASKS))), [1, 0, 2], [0, 2, 1]][round_]
            for index in order:
                asking[index].send_signal(signal.SIGINT)
            for process in asking:
                _, stderr = process.communicate(timeout=60)
                assert process.returncode == 130, stderr
        finally:
            for process in asking:
                if process.poll() is None:
                    process.kill()
                    process.communicate()
        cancelled += ASKS
        wait_for(lambda n=cancelled: server.status()["counters"]["runs_cancelled"] >= n, 60)
        wait_for(
            lambda: server.status()["running"] is None and server.status()["queue_depth"] == 0,
            60,
        )
        counters = server.status()["counters"]
        assert counters["runs_cancelled"] == cancelled, counters
    # The runs that had started ended interrupted; none ran on to an answer.
    counters = server.status()["counters"]
    assert set(counters["outcomes"]) == {"interrupted"}, counters
    assert counters["outcomes"]["interrupted"] == counters["runs_finished"] >= ROUNDS
