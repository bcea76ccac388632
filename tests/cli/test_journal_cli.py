"""``edge-agent ask --key``, ``result`` and ``runs`` against a real daemon, and a timed-out ask
that names its run so a script can fetch the result later."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from daemon_harness import answer, call, write_mock

DaemonProcess = Callable[..., AbstractContextManager[str]]  # conftest.py
EDGE_AGENT = str(Path(sys.executable).with_name("edge-agent"))


def edge_agentd(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EDGE_AGENT, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def journaled(tmp_path: Path, daemon_process: DaemonProcess) -> Iterator[str]:
    mock = write_mock(tmp_path / "mock.json", [call("now"), answer("It is noon.")])
    config = tmp_path / "edge.toml"
    config.write_text(f"[journal]\npath = '{tmp_path / 'journal.sqlite3'}'\n", encoding="utf-8")
    endpoint = f"ipc://{tmp_path / 'agent.sock'}"
    with daemon_process(["--config", str(config), "--model", f"mock:{mock}"], endpoint):
        yield endpoint


def test_ask_with_a_key_runs_once_and_result_and_runs_show_it(journaled: str) -> None:
    first = edge_agentd(
        "ask", "What time is it?", "--key", "noon-check", "--json", "--endpoint", journaled
    )
    assert first.returncode == 0, first.stderr
    asked = json.loads(first.stdout)
    assert len(asked["run_id"]) == 32 and asked["answer"] == "It is noon."
    again = json.loads(
        edge_agentd(
            "ask", "What time is it?", "--key", "noon-check", "--json", "--endpoint", journaled
        ).stdout
    )
    assert again["run_id"] == asked["run_id"]
    assert again["answer"] == asked["answer"]

    fetched = edge_agentd("result", asked["run_id"], "--json", "--endpoint", journaled)
    assert fetched.returncode == 0, fetched.stderr
    record = json.loads(fetched.stdout)
    assert record == {
        **{k: asked[k] for k in asked if k != "timing"},
        "timing": record["timing"],
        "state": "done",
        "reason": None,
    }
    assert (
        edge_agentd("result", asked["run_id"], "--endpoint", journaled).stdout.strip() == "It is noon."
    )
    waited = edge_agentd("result", asked["run_id"], "--wait", "5", "--endpoint", journaled)
    assert waited.returncode == 0

    listed = json.loads(edge_agentd("runs", "--json", "--endpoint", journaled).stdout)
    assert [run["run_id"] for run in listed] == [asked["run_id"]]  # one run, not two
    # The protocol's names for the protocol's fields (docs/protocol.md, "`runs`").
    assert list(listed[0]) == [
        "run_id",
        "source",
        "state",
        "outcome",
        "queued_at",
        "seconds",
        "query",
        "answer",
    ]
    assert isinstance(listed[0]["queued_at"], float)  # seconds since the epoch, as the wire
    table = edge_agentd("runs", "--limit", "5", "--endpoint", journaled).stdout
    assert asked["run_id"] in table and "What time is it?" in table

    missing = edge_agentd("result", "no-such-run", "--endpoint", journaled)
    assert missing.returncode == 1 and "no run with this id" in missing.stderr
    assert json.loads(
        edge_agentd("result", "no-such-run", "--json", "--endpoint", journaled).stdout
    )["error"]["code"] == "not_found"
    for bad in (["runs", "--limit", "0"], ["runs", "--limit", "1000000"], ["result", "x" * 129]):
        assert edge_agentd(*bad, "--endpoint", journaled).returncode == 65, bad
    assert edge_agentd("ask", "hi", "--key", "bad\nkey", "--endpoint", journaled).returncode == 65


def test_ask_with_a_key_another_question_holds_exits_65_and_names_its_run(
    journaled: str,
) -> None:
    asked = edge_agentd("ask", "What time is it?", "--key", "K1", "--json", "--endpoint", journaled)
    holder = json.loads(asked.stdout)["run_id"]
    other = edge_agentd("ask", "What is the load average?", "--key", "K1", "--endpoint", journaled)
    assert other.returncode == 65, other
    assert other.stdout == ""  # never the other question's answer
    assert "a new question needs a new key" in other.stderr and holder in other.stderr
    as_json = edge_agentd(
        "ask", "What is the load average?", "--key", "K1", "--json", "--endpoint", journaled
    )
    assert as_json.returncode == 65
    printed = json.loads(as_json.stdout)
    assert (printed["answer"], printed["error"]["code"]) == (None, "key_conflict")
    assert holder in printed["error"]["message"]


class StuckDaemon(threading.Thread):
    """A ROUTER that says ``ready`` to ``status`` and never answers a ``run``: a wedged daemon."""

    def __init__(self, context: zmq.Context[Any], endpoint: str) -> None:
        super().__init__(daemon=True)
        self.socket = context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind(endpoint)
        self.runs: list[dict[str, Any]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            if not self.socket.poll(50):
                continue
            routing, frame = self.socket.recv_multipart()
            request = msgpack.unpackb(frame)
            if request["op"] == "status":
                reply = {
                    "v": 1,
                    "id": request["id"],
                    "kind": "result",
                    "op": "status",
                    "state": "ready",
                }
                self.socket.send_multipart([routing, msgpack.packb(reply)])
            elif request["op"] == "run":
                self.runs.append(request)
        self.socket.close(linger=0)


def test_a_timed_out_ask_names_its_run(tmp_path: Path, context: zmq.Context[Any]) -> None:
    endpoint = f"ipc://{tmp_path / 'stuck.sock'}"
    stuck = StuckDaemon(context, endpoint)
    stuck.start()
    try:
        late = edge_agentd(
            "ask", "hi", "--timeout", "0.5", "--json", "--key", "k1", "--endpoint", endpoint
        )
    finally:
        stuck.done.set()
        stuck.join(5)
    assert late.returncode == 75, late.stderr
    (sent,) = stuck.runs
    assert json.loads(late.stdout)["run_id"] == sent["id"]
    assert sent["key"] == "k1"
    assert f"edge-agent result {sent['id']}" in late.stderr
    assert "--key" in late.stderr
