"""One daemon, one journal: two daemons of one user, side by side on two endpoints with the same
state directory and the same keys, never answer from each other's runs nor list them; and two
given one journal file anyway are kept apart by its lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from daemon_harness import answer, write_mock
from journal_harness import journal_at, record

DaemonProcess = Callable[..., AbstractContextManager[str]]  # conftest.py
EDGE_AGENT = str(Path(sys.executable).with_name("edge-agent"))


def edge_agent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EDGE_AGENT, *args], capture_output=True, text=True, timeout=60, check=False
    )


def ask_json(endpoint: str, query: str, key: str) -> dict[str, object]:
    asked = edge_agent("ask", query, "--key", key, "--json", "--endpoint", endpoint)
    assert asked.returncode == 0, asked.stderr
    reply: dict[str, object] = json.loads(asked.stdout)
    return reply


def run_ids(endpoint: str) -> set[str]:
    listed = edge_agent("runs", "--json", "--endpoint", endpoint)
    assert listed.returncode == 0, listed.stderr
    return {run["run_id"] for run in json.loads(listed.stdout)}


def test_two_daemons_with_the_same_keys_never_answer_from_each_other(
    tmp_path: Path, daemon_process: DaemonProcess
) -> None:
    # No [journal] path: each daemon's default one, in the one state directory of this user.
    assert os.environ["XDG_STATE_HOME"]
    warm = write_mock(tmp_path / "warm.json", [answer("I cannot tell: no skill reads the room.")] * 4)
    load = write_mock(tmp_path / "load.json", [answer("I cannot tell: no skill reads the load.")] * 4)
    first = f"ipc://{tmp_path / 'first.sock'}"
    second = f"ipc://{tmp_path / 'second.sock'}"
    with daemon_process(["--model", f"mock:{warm}"], first):
        mine = ask_json(first, "How warm is it?", "K1")
        assert mine["answer"] == "I cannot tell: no skill reads the room."
        with daemon_process(["--model", f"mock:{load}"], second):
            theirs = ask_json(second, "How warm is it?", "K1")
            assert theirs["answer"] == "I cannot tell: no skill reads the load."  # its own run, not the first's
            assert theirs["run_id"] != mine["run_id"]
            again = ask_json(first, "How warm is it?", "K1")
            assert (again["run_id"], again["answer"]) == (mine["run_id"], "I cannot tell: no skill reads the room.")
            assert run_ids(first) == {mine["run_id"]}
            assert run_ids(second) == {theirs["run_id"]}
            status = json.loads(edge_agent("status", "--json", "--endpoint", second).stdout)
            assert status["journal"]["state"] == "ok"
            assert (
                status["journal"]["path"]
                != json.loads(edge_agent("status", "--json", "--endpoint", first).stdout)[
                    "journal"
                ]["path"]
            )


def test_a_journal_file_another_daemon_holds_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path) as holder:
        record(holder, "theirs", key="K1")
        assert holder.flush()
        with journal_at(path) as intruder:
            status = intruder.status()
            assert status["state"] == "degraded"
            assert "in use by another edge-agent daemon" in status["problem"]
            assert f"pid {os.getpid()}" in status["problem"]
            assert intruder.run_for_key("K1") is None  # never the other daemon's keys
        assert holder.status()["state"] == "ok"
    with journal_at(path) as after:  # the lock went with its holder
        assert after.status()["state"] == "ok"
        assert after.run_for_key("K1") == "theirs"
