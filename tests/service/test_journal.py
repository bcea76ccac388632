"""The run journal on real SQLite files: what it keeps, its bounds, restarts, and every way its
file can be bad (corrupt, newer, read-only, full) without a run ever failing for it."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from journal_harness import journal_at, record

from edge_agentd.protocol.endpoints import default_endpoint
from edge_agentd.service.journal.path import default_path
from edge_agentd.service.journal.store import SCHEMA_VERSION, JournalStore

ROOT = pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
    reason="mounting a tmpfs needs root",
)


def rows(path: Path) -> dict[str, dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.row_factory = sqlite3.Row
        return {row["id"]: dict(row) for row in db.execute("SELECT * FROM runs")}


def test_the_default_path_follows_systemd_then_xdg(tmp_path: Path) -> None:
    assert default_path(None, {"STATE_DIRECTORY": "/var/lib/edge-agent"}) == Path(
        "/var/lib/edge-agent/journal.sqlite3"
    )
    assert default_path(None, {"XDG_STATE_HOME": str(tmp_path)}) == (
        tmp_path / "edge-agent" / "journal.sqlite3"
    )
    assert default_path(None, {"XDG_STATE_HOME": "relative"}) == (
        Path.home() / ".local/state/edge-agent/journal.sqlite3"
    )


def test_the_default_path_says_which_daemon_it_belongs_to(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    state = tmp_path / "edge-agent"
    # The daemon on the default endpoint keeps the file it always had.
    assert default_path(default_endpoint(env), env) == state / "journal.sqlite3"
    # The service's state directory is its unit's own: its file, whatever its endpoints.
    service = {"STATE_DIRECTORY": "/var/lib/edge-agent", "RUNTIME_DIRECTORY": str(tmp_path)}
    for endpoint in (default_endpoint(service), "tcp://127.0.0.1:5555"):
        assert default_path(endpoint, service) == Path("/var/lib/edge-agent/journal.sqlite3")
    # Any other endpoint has a file of its own, named after it, and never another's.
    endpoints = [
        "tcp://127.0.0.1:5555",
        "tcp://127.0.0.1:5556",
        "tcp://[::1]:5555",
        f"ipc://{tmp_path}/other.sock",
        f"ipc://{tmp_path}/other/sock",
        "ipc:///" + "x" * 300,
        "ipc://../../../etc/passwd",
    ]
    paths = [default_path(endpoint, env) for endpoint in endpoints]
    assert len(set(paths)) == len(endpoints)
    assert all(path.parent == state and path.name.startswith("journal-") for path in paths)
    assert all(len(path.name) <= 80 and "/" not in path.name for path in paths)
    assert "127.0.0.1-5555" in paths[0].name


def test_a_run_is_kept_with_its_result_and_times(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path) as journal:
        record(journal, "r1", key="k1")
        assert journal.flush()
        assert journal.status()["state"] == "ok"
    row = rows(path)["r1"]
    assert (row["state"], row["outcome"], row["answer"], row["key"]) == (
        "done",
        "answered",
        "21 C",
        "k1",
    )
    assert row["queued_at"] <= row["started_at"] <= row["finished_at"]
    assert msgpack.unpackb(row["result"])["state"]["events"][0]["answer"] == "21 C"
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION


def test_runs_left_going_by_a_dead_daemon_are_interrupted_at_start(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path) as journal:
        record(journal, "done", key="kept")
        journal.queued("waiting", source="zmq", query="q", key="k-waiting")
        journal.queued("running", source="mqtt", query="q")
        journal.started("running")
        assert journal.flush()
        journal._store = None  # the daemon "dies": nothing more reaches the file
    with journal_at(path) as journal:
        assert journal.counts["recovered"] == 2
        assert journal.run_for_key("kept") == "done"
        assert journal.run_for_key("k-waiting") is None  # it never had a result
    kept = rows(path)
    assert kept["done"]["state"] == "done"
    for run_id in ("waiting", "running"):
        assert (kept[run_id]["state"], kept[run_id]["reason"]) == ("interrupted", "daemon_restart")
        assert kept[run_id]["finished_at"] is not None


def test_a_run_that_ended_without_a_result_lets_its_key_go(tmp_path: Path) -> None:
    with journal_at(tmp_path / "j.sqlite3") as journal:
        journal.queued("r1", source="zmq", query="q", key="k")
        assert journal.run_for_key("k") == "r1"
        journal.ended("r1", "shutting_down", "the run did not start")
        assert journal.run_for_key("k") is None
        assert journal.flush()
    row = rows(tmp_path / "j.sqlite3")["r1"]
    assert (row["state"], row["reason"]) == ("interrupted", "shutting_down")


def test_a_flood_of_distinct_keys_stays_within_keep_runs(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path, keep_runs=50) as journal:
        for number in range(600):
            record(journal, f"run-{number}", key=f"key-{number}")
            if number % 100 == 0:
                assert journal.flush()
        assert journal.flush()
        assert journal.status()["runs"] <= 50
        assert len(journal._keys) <= 50
        assert journal.run_for_key("key-599") == "run-599"  # the newest are the ones kept
        assert journal.run_for_key("key-0") is None
    kept = rows(path)
    assert len(kept) <= 50
    assert "run-599" in kept


def test_runs_older_than_keep_days_are_pruned_at_start(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path) as journal:
        record(journal, "old", key="old-key")
        record(journal, "new")
        assert journal.flush()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE runs SET queued_at = ? WHERE id = 'old'", (time.time() - 40 * 86400,))
        db.commit()
    with journal_at(path, keep_days=30) as journal:
        assert journal.run_for_key("old-key") is None
        assert journal.counts["pruned"] == 1
    assert set(rows(path)) == {"new"}


def test_a_corrupt_file_is_moved_aside_and_a_new_one_started(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.sqlite3"
    path.write_bytes(b"this is not a database " * 400)
    with caplog.at_level(logging.ERROR), journal_at(path) as journal:
        assert journal.status()["state"] == "ok"
        record(journal, "r1")
        assert journal.flush()
    aside = list(tmp_path.glob("j.sqlite3.corrupt-*"))
    assert len(aside) == 1
    assert aside[0].read_bytes().startswith(b"this is not a database")
    assert any(str(aside[0]) in line and str(path) in line for line in caplog.messages)
    assert set(rows(path)) == {"r1"}


def test_a_damaged_database_page_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path) as journal:
        for number in range(200):
            record(journal, f"r{number}", answer="x" * 500)
        assert journal.flush()
    data = bytearray(path.read_bytes())
    for offset in range(4096 * 2, len(data), 4096):  # scribble over every page but the first
        data[offset + 8 : offset + 64] = b"\xff" * 56
    path.write_bytes(bytes(data))
    with journal_at(path) as journal:
        assert journal.status()["state"] == "ok"
    assert len(list(tmp_path.glob("j.sqlite3.corrupt-*"))) == 1


def test_a_file_from_a_newer_release_is_moved_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
        db.execute("CREATE TABLE runs_v2 (x)")
        db.commit()
    with caplog.at_level(logging.ERROR), journal_at(path) as journal:
        assert journal.status()["state"] == "ok"
    aside = list(tmp_path.glob(f"j.sqlite3.schema{SCHEMA_VERSION + 1}-*"))
    assert len(aside) == 1
    with contextlib.closing(sqlite3.connect(aside[0])) as db:
        assert db.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION + 1
    assert any("newer" in line for line in caplog.messages)
    assert JournalStore(path).count() == 0


def test_disabled_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path, enabled=False) as journal:
        record(journal, "r1", key="k")
        assert journal.run_for_key("k") is None
        assert journal.status()["state"] == "off"
    assert not path.exists()


# -- disks that refuse: read-only and full ------------------------------------------------------


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@ROOT
def test_a_read_only_directory_degrades_the_journal_and_no_run_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with tmpfs(tmp_path / "ro", "1m") as mount:
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        with caplog.at_level(logging.ERROR), journal_at(mount / "j.sqlite3") as journal:
            status = journal.status()
            assert status["state"] == "degraded"
            assert "cannot open" in status["problem"]
            for number in range(20):
                record(journal, f"r{number}", key=f"k{number}")
            assert journal.flush()
            assert journal.status()["state"] == "degraded"
        degraded = [line for line in caplog.messages if "journal degraded" in line]
        assert len(degraded) == 1  # said once, not once a run


@ROOT
def test_a_full_disk_degrades_the_journal_until_there_is_room_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with tmpfs(tmp_path / "small", "512k") as mount:
        filler = mount / "filler"
        with caplog.at_level(logging.WARNING), journal_at(mount / "j.sqlite3") as journal:
            assert journal.status()["state"] == "ok"
            with contextlib.suppress(OSError):
                filler.write_bytes(b"\0" * (1024 * 1024))  # the disk is full now
            for number in range(300):
                record(journal, f"r{number}", answer="x" * 2000)
                if number % 20 == 0:
                    assert journal.flush()
            assert journal.flush()
            assert journal.status()["state"] == "degraded"
            assert journal.counts["write_errors"] > 0
            filler.unlink()
            record(journal, "after", answer="room again")
            assert journal.flush()
            assert journal.status()["state"] == "ok"
            assert journal.status()["problem"] is None
        assert sum("journal degraded" in line for line in caplog.messages) == 1
        assert any("work again" in line for line in caplog.messages)
        with contextlib.closing(sqlite3.connect(mount / "j.sqlite3")) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert db.execute("SELECT answer FROM runs WHERE id = 'after'").fetchone() == (
                "room again",
            )
