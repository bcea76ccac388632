"""kill -9 at random moments of runs, again and again: after each restart the journal's file is
whole (``PRAGMA integrity_check``), every run that had finished is there with its answer, and no
run is left queued or running: those the kill cut short are ``interrupted`` (``daemon_restart``).

A run's rows are written off the serving loop, so "had finished" is made exact without timing:
a ``runs`` read is answered only after every write queued before it, so every result received
before that read was sent must be in the file, whenever the kill comes after its reply.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import sqlite3
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import msgpack
import zmq
from daemon_harness import Peer, answer, call, wait_ready, write_mock

from scripts.testbed.serve_command import serve_command

KILLS = 30
PLUGIN = '''
import random
import time


def register(registry):
    @registry.skill(timeout=None)
    def pause() -> str:
        """Take a little while, as a sensor read does."""
        time.sleep(random.uniform(0.002, 0.03))
        return "paused"
'''


class Asker(threading.Thread):
    """Sends runs one after another until stopped; keeps what came back, in order."""

    def __init__(self, context: zmq.Context[Any], endpoint: str) -> None:
        super().__init__(daemon=True)
        self.peer = Peer(context, endpoint)
        self.stop = threading.Event()
        self.sent: list[str] = []
        self.answered: dict[str, str] = {}
        self.lock = threading.Lock()

    def run(self) -> None:
        while not self.stop.is_set():
            run_id = uuid.uuid4().hex
            self.peer.send({"v": 1, "id": run_id, "op": "run", "query": f"q {run_id[:6]}"})
            with self.lock:
                self.sent.append(run_id)
            while not self.stop.is_set():
                if not self.peer.socket.poll(50):
                    continue
                reply = msgpack.unpackb(self.peer.socket.recv())
                if reply.get("id") == run_id and reply.get("kind") == "result":
                    with self.lock:
                        self.answered[run_id] = reply["answer"]
                    break

    def received(self) -> set[str]:
        with self.lock:
            return set(self.answered)


def barrier(context: zmq.Context[Any], endpoint: str) -> None:
    """Return once every journal write queued so far is in the file."""
    peer = Peer(context, endpoint)
    try:
        peer.send({"v": 1, "id": "barrier", "op": "runs", "limit": 1})
        assert peer.recv(30)["kind"] == "result"
    finally:
        peer.close()


def start(tmp_path: Path, config: Path, mock: Path, endpoint: str) -> subprocess.Popen[str]:
    log = (tmp_path / "daemon.log").open("a")
    try:
        return subprocess.Popen(
            serve_command(config=config, mock=mock, endpoint=endpoint),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
    finally:
        log.close()


def journal_rows(path: Path) -> tuple[str, dict[str, tuple[str, str | None, str | None]]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        check = db.execute("PRAGMA integrity_check").fetchone()[0]
        rows = {
            row[0]: (row[1], row[2], row[3])
            for row in db.execute("SELECT id, state, answer, reason FROM runs")
        }
    return check, rows


def test_kill_9_at_random_moments_loses_no_finished_run(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "pause.py").write_text(PLUGIN)
    mock = write_mock(tmp_path / "mock.json", [call("pause"), answer("paused")])
    journal = tmp_path / "journal.sqlite3"
    config = tmp_path / "edge.toml"
    config.write_text(
        "[skills]\nbuiltins = false\nentry_points = false\n"
        f"directories = [{json.dumps(str(plugins))}]\n"
        f"[journal]\npath = {json.dumps(str(journal))}\n"
    )
    endpoint = f"ipc://{tmp_path}/agent.sock"
    chance = random.Random()
    context: zmq.Context[Any] = zmq.Context()
    finished: dict[str, str] = {}  # every run known to have finished and been written
    cut_short: set[str] = set()  # sent, and maybe never written
    survived = 0
    try:
        for _ in range(KILLS + 1):
            process = start(tmp_path, config, mock, endpoint)
            try:
                wait_ready(endpoint, process)
                check, rows = journal_rows(journal) if journal.exists() else ("ok", {})
                assert check == "ok"
                for run_id, text in finished.items():
                    assert rows.get(run_id) == ("done", text, None), run_id
                for run_id, (state, _, reason) in rows.items():
                    assert state in ("done", "interrupted"), run_id
                    if state == "interrupted":
                        assert reason == "daemon_restart", run_id
                        assert run_id in cut_short, run_id
                if survived == KILLS:
                    break
                asker = Asker(context, endpoint)
                asker.start()
                time.sleep(chance.uniform(0.05, 0.4))
                before = asker.received()
                barrier(context, endpoint)
                time.sleep(chance.uniform(0.0, 0.15))
                process.send_signal(signal.SIGKILL)
                process.wait(30)
                asker.stop.set()
                asker.join(10)
                asker.peer.close()
                finished.update({run_id: asker.answered[run_id] for run_id in before})
                cut_short.update(set(asker.sent) - before)
                survived += 1
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(30)
    finally:
        context.destroy(linger=0)
    assert survived == KILLS
    assert len(finished) >= KILLS  # each round finished runs before its kill
