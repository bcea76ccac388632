"""Every `edge-agent` command that prints ends quietly when its reader has gone (`edge-agent
status | head -4`): exit 141, as a Unix tool killed by SIGPIPE reports, and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import ANSWER, QUICK_STOP, call, sample_registry, wait_for, write_mock

from edge_agentd.cli.exits import EXIT_BROKEN_PIPE

DaemonProcess = Callable[..., AbstractContextManager[str]]  # conftest.py
ScriptedDaemon = Callable[..., tuple[Any, str]]  # conftest.py
EDGE_AGENT = str(Path(sys.executable).with_name("edge-agent"))


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory, daemon_process: DaemonProcess) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("daemon")
    mock = write_mock(directory / "mock.json", ['{"final_answer": "I cannot tell: no skill reads the room."}'])
    socket = f"ipc://{directory / 'agent.sock'}"
    with daemon_process(["--model", f"mock:{mock}"], socket, clean_exit=True):
        yield socket


def run_into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The command with its stdout a real pipe whose reader has already closed it."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [EDGE_AGENT, *args], stdout=writer, stderr=subprocess.PIPE, timeout=60, check=False
        )
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["status", "--json"],
        ["skills"],
        ["skills", "--json"],
        ["ask", "How warm is it?"],
        ["ask", "How warm is it?", "--json"],
        ["ask", "How warm is it?", "--stream"],
        ["runs", "--json"],
        ["--help"],
    ],
    ids=" ".join,
)
def test_a_closed_stdout_ends_the_command_quietly(endpoint: str, args: list[str]) -> None:
    extra = [] if args == ["--help"] else ["--endpoint", endpoint]
    done = run_into_a_closed_pipe(*args, *extra)
    stderr = done.stderr.decode(errors="replace")
    # argparse writes --help itself and lets a failed write pass: its 0 is quiet as well.
    expected = (0, EXIT_BROKEN_PIPE) if args == ["--help"] else (EXIT_BROKEN_PIPE,)
    assert done.returncode in expected, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr


def test_head_of_status_reads_its_lines_and_nothing_else_is_said(endpoint: str) -> None:
    # The newcomer's own pipe: head reads four lines and leaves.
    shell = subprocess.run(
        f"{EDGE_AGENT} status --endpoint {endpoint} | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=60, check=False,
    )
    assert shell.stdout.startswith("state:"), shell.stderr
    assert shell.returncode in (0, EXIT_BROKEN_PIPE)  # whether head left before the write
    assert "Traceback" not in shell.stderr and "BrokenPipe" not in shell.stderr, shell.stderr


def test_a_streamed_ask_whose_reader_left_cancels_its_run(scripted_daemon: ScriptedDaemon) -> None:
    # The first event is printed at once; the reply after it would take 30 s of the model.
    replies = [call("add", a=1, b=2), {"text": ANSWER, "delay_s": 30}]
    server, endpoint = scripted_daemon(replies, config=QUICK_STOP, registry=sample_registry())
    done = run_into_a_closed_pipe("ask", "hi", "--stream", "--endpoint", endpoint)
    assert done.returncode == EXIT_BROKEN_PIPE, done.stderr
    # Nobody will read the answer: the model is freed, as after Ctrl-C.
    wait_for(lambda: server.status()["counters"]["runs_cancelled"] == 1, 20)
    wait_for(lambda: server.status()["running"] is None, 20)
