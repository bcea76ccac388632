"""The journal's file stays bounded by ``keep_runs`` whatever the burst: runs past it are pruned in
the batch that wrote them, their pages given back to the disk, every pruned run counted, and a
file written before pages were given back is switched over when it is opened."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path

from journal_harness import journal_at, payload, record

from edge_agentd.service.journal.keeper import Journal
from edge_agentd.service.journal.store import MIGRATIONS

BIG_QUERY = "how warm is it? " + "x" * 4000


def on_disk(path: Path) -> int:
    """The bytes the journal takes: its file and its WAL, as they are (nothing folded back)."""
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def big_run(journal: Journal, run_id: str) -> None:
    journal.queued(run_id, source="zmq", query=BIG_QUERY)
    journal.finished(run_id, payload(run_id), outcome="answered", answer="21 C")


def test_pruned_counts_every_pruned_run(tmp_path: Path) -> None:
    with journal_at(tmp_path / "j.sqlite3", keep_runs=10) as journal:
        for number in range(40):
            record(journal, f"r{number}")  # no keys: every pruned run counts all the same
            if number % 5 == 4:
                assert journal.flush()
        assert journal.flush()
        kept = journal.status()["runs"]
        assert kept <= 10
        assert journal.status()["counters"]["pruned"] == 40 - kept


def test_the_file_stays_within_keep_runs_whatever_the_burst(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path, keep_runs=5) as journal:
        for number in range(5):
            big_run(journal, f"first{number}")
        assert journal.flush()
        full = on_disk(path)
        for number in range(120):  # runs one by one, each its own commit
            big_run(journal, f"steady{number}")
            assert journal.flush()
        steady = on_disk(path)
        for number in range(400):  # a burst: all of it in one batch
            big_run(journal, f"burst{number}")
        assert journal.flush()
        burst = on_disk(path)
        assert journal.status()["runs"] <= 5
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0  # the pages went back
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] <= 5
    # Five runs of 4 KB take about 64 KB with their WAL; the burst used to leave 4.6 MB.
    assert steady <= 1.5 * full, (full, steady)
    assert burst <= 1.5 * full, (full, burst)


def test_a_file_from_before_is_switched_to_give_pages_back(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        for statement in MIGRATIONS[1]:
            db.execute(statement)
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (1)")
        for number in range(50):
            db.execute(
                "INSERT INTO runs (id, source, key, query, state, outcome, answer, queued_at)"
                " VALUES (?, 'zmq', ?, ?, 'done', 'answered', '21 C', ?)",
                (f"old{number}", f"k{number}", BIG_QUERY, time.time() - 1000 + number),
            )
        assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    with journal_at(path, keep_runs=10) as journal:
        assert journal.status()["state"] == "ok"
        assert journal.run_for_key("k49") == "old49"
        assert journal.status()["runs"] <= 10
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
        assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
