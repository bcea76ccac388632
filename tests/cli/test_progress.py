"""The live progress line of `edge-agent ask`: on a real terminal (a pty) it shows the step and the
skill, fed by the streamed events; stdout holds only the answer; a pipe gets nothing extra."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import answer, call, wait_for
from hypothesis import given
from hypothesis import strategies as st

from edge_agentd.cli.progress import CLEAR, ProgressLine, progress_line

ScriptedDaemon = Callable[..., tuple[Any, str]]  # conftest.py
EDGE_AGENT = str(Path(sys.executable).with_name("edge-agent"))
ANSWER = "I cannot tell how warm the kitchen is."
SCRIPT = [call("room_temperature", room="kitchen"), answer(ANSWER)]


def ask_on_a_terminal(
    *args: str, meanwhile: Callable[[subprocess.Popen[bytes]], None] | None = None
) -> tuple[subprocess.CompletedProcess[str], str]:
    """`edge-agent ask ARGS` with stderr on a pseudo-terminal and stdout on a pipe; returns the
    finished process (stdout) and everything the terminal received. ``meanwhile`` runs in a
    thread while the terminal is read (to send the process a signal)."""
    controller, terminal = os.openpty()
    try:
        process = subprocess.Popen(
            [EDGE_AGENT, "ask", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            env={**os.environ, "TERM": "xterm"},
        )
        os.close(terminal)
        terminal = -1
        helper = threading.Thread(target=meanwhile, args=(process,)) if meanwhile else None
        if helper is not None:
            helper.start()
        received = bytearray()
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed its end of the terminal
                break
            if not chunk:
                break
            received += chunk
        stdout, _ = process.communicate(timeout=60)
        if helper is not None:
            helper.join(60)
    finally:
        os.close(controller)
        if terminal != -1:
            os.close(terminal)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout.decode(), "")
    return done, received.decode("utf-8", "replace")


@pytest.mark.parametrize("mode", [[], ["--json"], ["--stream"]], ids=["plain", "json", "stream"])
def test_a_terminal_sees_the_step_and_the_skill_and_stdout_only_the_answer(
    scripted_daemon: ScriptedDaemon, mode: list[str]
) -> None:
    _, endpoint = scripted_daemon(SCRIPT)
    done, screen = ask_on_a_terminal("How warm is the kitchen?", *mode, "--endpoint", endpoint)
    assert done.returncode == 0, screen
    assert "step 1 of 12: running room_temperature" in screen
    assert "step 2 of 12: " in screen
    # The line is erased at the end, so the shell's prompt (or an error) starts a clean line.
    assert screen.endswith(CLEAR), screen
    lines = done.stdout.splitlines()
    if mode == ["--json"]:
        assert json.loads(done.stdout)["answer"] == ANSWER
    elif mode == ["--stream"]:
        types = [json.loads(line)["type"] for line in lines[:-1]]
        assert types == ["CallSkillAction", "SkillResultObservation", "FinalAnswerAction"]
        assert json.loads(lines[-1])["answer"] == ANSWER  # JSON lines to the last one
    else:
        assert done.stdout == f"{ANSWER}\n"
    assert "edge-agent:" not in done.stdout and "\r" not in done.stdout


def test_the_line_shows_the_daemons_step_limit(scripted_daemon: ScriptedDaemon) -> None:
    # The daemon caps --max-iterations; the line says the limit the run really has.
    _, endpoint = scripted_daemon(
        SCRIPT, config="[daemon]\nmax_iterations = 3\nmax_iterations_cap = 3\n"
    )
    done, screen = ask_on_a_terminal("hi", "--max-iterations", "9", "--endpoint", endpoint)
    assert done.returncode == 0, screen
    assert "step 1 of 3: running room_temperature" in screen and " of 9" not in screen


def test_a_pipe_gets_nothing_extra(scripted_daemon: ScriptedDaemon) -> None:
    _, endpoint = scripted_daemon(SCRIPT)
    done = subprocess.run(
        [EDGE_AGENT, "ask", "How warm is the kitchen?", "--endpoint", endpoint],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{ANSWER}\n", "")


def test_an_error_is_printed_on_a_clean_line(tmp_path: Path) -> None:
    done, screen = ask_on_a_terminal("hi", "--endpoint", f"ipc://{tmp_path / 'none.sock'}")
    assert done.returncode == 69 and done.stdout == ""
    # Whatever the line showed was erased before the message.
    message = screen[screen.rindex(CLEAR) + len(CLEAR) :] if CLEAR in screen else screen
    assert message.startswith("edge-agent: no daemon socket"), screen


def test_ctrl_c_erases_the_line_before_saying_interrupted(scripted_daemon: ScriptedDaemon) -> None:
    slow = [call("room_temperature", room="kitchen"), {"text": answer(ANSWER), "delay_s": 30}]
    server, endpoint = scripted_daemon(slow, config="[daemon]\nshutdown_grace_s = 0.05\n")

    def press_ctrl_c(process: subprocess.Popen[bytes]) -> None:
        wait_for(lambda: server.status()["running"] is not None, 20)
        process.send_signal(signal.SIGINT)

    done, screen = ask_on_a_terminal("hi", "--json", "--endpoint", endpoint, meanwhile=press_ctrl_c)
    assert done.returncode == 130, screen
    assert json.loads(done.stdout)["outcome"] == "interrupted"
    # The terminal turns the message's newline into \r\n.
    assert screen.startswith(CLEAR + "edge-agent: asking ("), screen
    assert screen.endswith(CLEAR + "edge-agent: interrupted\r\n"), screen
    wait_for(lambda: server.status()["running"] is None, 10)


# -- the line itself ----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_follows_a_run_step_by_step() -> None:
    clock = Clock()
    line = ProgressLine(io.StringIO(), max_iterations=5, clock=clock)
    assert line.text() == "edge-agent: asking (0 s)"
    line.daemon_state("loading")
    assert line.text() == "edge-agent: waiting for the daemon to load its model (0 s)"
    line.accepted({"kind": "accepted", "position": 2, "max_iterations": 4})
    assert line.text() == "edge-agent: queued, 2 ahead (0 s)"
    clock.now += 7
    line.event({"type": "ValidationErrorObservation", "feedback": "not JSON"})
    assert line.text() == "edge-agent: step 2 of 4: retrying (7 s)"
    line.event({"type": "CallSkillAction", "skill_name": "read_sensor", "arguments": {}})
    assert line.text() == "edge-agent: step 2 of 4: running read_sensor (7 s)"
    line.event({"type": "SkillResultObservation", "skill_name": "read_sensor", "result": 1})
    assert line.text() == "edge-agent: step 3 of 4: thinking (7 s)"
    line.event({"type": "FinalAnswerAction", "answer": "21 C"})
    assert line.text() == "edge-agent: step 3 of 4: answering (7 s)"
    line.event({"type": "InterruptedObservation", "reason": "deadline"})
    assert line.text() == "edge-agent: step 3 of 4: stopping (deadline) (7 s)"


def test_closing_erases_the_line_and_nothing_is_drawn_after() -> None:
    screen = io.StringIO()
    line = ProgressLine(screen, max_iterations=None)
    line.start()
    line.event({"type": "CallSkillAction", "skill_name": "clock"})
    line.close()
    line.event({"type": "SkillResultObservation"})
    written = screen.getvalue()
    assert "step 1: running clock" in written and written.endswith(CLEAR)
    assert progress_line(io.StringIO()) is None  # not a terminal: no line at all


@given(
    events=st.lists(
        st.one_of(st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=2))
        | st.dictionaries(
            st.sampled_from(["type", "skill_name", "reason", "position", "max_iterations"]),
            st.one_of(
                st.sampled_from(["CallSkillAction", "SkillResultObservation", "accepted"]),
                st.text(max_size=300),
                st.integers(),
                st.none(),
                st.booleans(),
                st.lists(st.integers(), max_size=3),
            ),
        ),
        max_size=12,
    ),
    columns=st.integers(min_value=0, max_value=300),
)
def test_any_reply_gives_one_printable_line_that_fits(events: list[Any], columns: int) -> None:
    # A daemon's strings (a skill's name, a reason) reach the terminal only as printable ASCII,
    # and the line never wraps, so the carriage return always redraws it in place.
    screen = io.StringIO()
    line = ProgressLine(screen, columns=columns)
    for event in events:
        if isinstance(event, dict) and event.get("type") == "accepted":
            line.accepted(event)
        else:
            line.event(event)
    width = max(columns, 20) - 1
    for drawn in screen.getvalue().split(CLEAR):
        assert len(drawn) <= width and drawn.isascii() and drawn.isprintable(), drawn
