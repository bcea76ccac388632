"""The run journal's SQLite file: its schema and migrations, and every statement run against it.

Only the journal's own thread (journal.py, this room's) calls into a :class:`JournalStore`;
the serving loop never waits on the disk. Opening never fails the daemon: a file that is corrupt
or was written by a newer edge-agent is moved aside (with a log line saying where) and a new one
is started, and a file that cannot be opened at all raises :class:`JournalUnavailable`, which the
journal turns into a degraded ``status``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Final

log = logging.getLogger(__name__)

SCHEMA_VERSION: Final = 1
MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    # version -> the statements that bring a file from version - 1 to it.
    1: (
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            key TEXT UNIQUE,
            query TEXT NOT NULL,
            workflow TEXT,
            state TEXT NOT NULL,
            outcome TEXT,
            answer TEXT,
            reason TEXT,
            result BLOB,
            queued_at REAL NOT NULL,
            started_at REAL,
            finished_at REAL
        )""",
        "CREATE INDEX runs_by_time ON runs (queued_at)",
    ),
}
COLUMNS: Final = (
    "id",
    "source",
    "key",
    "query",
    "workflow",
    "state",
    "outcome",
    "answer",
    "reason",
    "result",
    "queued_at",
    "started_at",
    "finished_at",
)
"""``result``: the run's ``result`` reply as it was sent (msgpack), with its whole event stream."""
LIST_COLUMNS: Final = tuple(c for c in COLUMNS if c != "result")
"""``runs`` lists every run but its result, which only ``result`` reads."""
UNFINISHED: Final = ("queued", "running")
BUSY_TIMEOUT_S: Final = 5.0
INCREMENTAL_VACUUM: Final = 2
"""``PRAGMA auto_vacuum``'s value for INCREMENTAL."""


class JournalUnavailable(Exception):
    """The journal file cannot be opened or created (a read-only or full disk, a bad path)."""


class JournalStore:
    """One SQLite connection in WAL mode, used by one thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.moved_aside: Path | None = None
        """Where a corrupt or newer file was moved at open, if one was."""
        self._db = self._open()

    # -- opening ------------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise JournalUnavailable(f"cannot create {self.path.parent}: {exc}") from None
        try:
            return self._connect()
        except _Unusable as problem:
            self._move_aside(problem.why, problem.tag)
        try:
            return self._connect()
        except _Unusable as problem:
            raise JournalUnavailable(f"{self.path}: {problem.why}") from None

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise JournalUnavailable(f"cannot open {self.path}: {exc}") from None
        try:
            self._prepare(db)
        except _Unusable:
            db.close()
            raise
        except sqlite3.DatabaseError as exc:
            db.close()
            if _is_io_problem(exc):
                raise JournalUnavailable(f"cannot open {self.path}: {exc}") from None
            raise _Unusable(
                f"the file is not a usable SQLite database ({exc})", "corrupt"
            ) from None
        return db

    @staticmethod
    def _prepare(db: sqlite3.Connection) -> None:
        if db.execute("PRAGMA quick_check").fetchone() != ("ok",):
            raise _Unusable("the database failed SQLite's quick_check", "corrupt")
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if not tables:
            # Before the first table, or it cannot be set without rewriting the file: pruned
            # runs' pages can then go back to the disk (give_back_pages).
            db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a power cut may lose the last few writes, never the file itself.
        db.execute("PRAGMA synchronous=NORMAL")
        version = 0
        if "schema_version" in tables:
            row = db.execute("SELECT version FROM schema_version").fetchone()
            version = row[0] if row and isinstance(row[0], int) else -1
        elif tables:
            raise _Unusable("the database has tables but no schema_version", "corrupt")
        if version > SCHEMA_VERSION:
            raise _Unusable(
                f"the database has schema version {version}, newer than this edge-agent's "
                f"{SCHEMA_VERSION} (written by a newer release?)",
                f"schema{version}",
            )
        if version < 0:
            raise _Unusable("the schema_version table is damaged", "corrupt")
        for step in range(version + 1, SCHEMA_VERSION + 1):
            db.execute("BEGIN IMMEDIATE")
            try:
                for statement in MIGRATIONS[step]:
                    db.execute(statement)
                if step == 1:
                    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                    db.execute("INSERT INTO schema_version VALUES (1)")
                else:
                    db.execute("UPDATE schema_version SET version = ?", (step,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        if db.execute("PRAGMA auto_vacuum").fetchone() != (INCREMENTAL_VACUUM,):
            _switch_to_incremental_vacuum(db)

    def _move_aside(self, why: str, tag: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.{tag}-{stamp}-{os.getpid()}")
        try:
            os.replace(self.path, target)
        except OSError as exc:
            raise JournalUnavailable(f"{self.path}: {why}, and it cannot be moved: {exc}") from None
        for suffix in ("-wal", "-shm"):
            sidecar = Path(f"{self.path}{suffix}")
            if sidecar.exists():
                try:
                    os.replace(sidecar, Path(f"{target}{suffix}"))
                except OSError as exc:
                    log.warning("journal: could not move %s aside: %s", sidecar, exc)
        self.moved_aside = target
        log.error("journal: %s: %s; moved it to %s and started a new one", self.path, why, target)

    # -- writes -------------------------------------------------------------------------------

    def recover(self, now: float) -> int:
        """Mark the runs a dead daemon left queued or running ``interrupted``; how many."""
        cursor = self._db.execute(
            "UPDATE runs SET state = 'interrupted', outcome = 'interrupted',"
            " reason = 'daemon_restart', finished_at = ? WHERE state IN (?, ?)",
            (now, *UNFINISHED),
        )
        return cursor.rowcount

    def queued(self, row: dict[str, Any]) -> None:
        """A new run. A run id or key that an older run still holds passes to the new one.
        Like every write, it runs inside the caller's :meth:`batch`."""
        if row.get("key") is not None:
            self._db.execute("UPDATE runs SET key = NULL WHERE key = ?", (row["key"],))
        self._db.execute(
            "INSERT OR REPLACE INTO runs (id, source, key, query, workflow, state, queued_at)"
            " VALUES (?, ?, ?, ?, ?, 'queued', ?)",
            (
                row["id"],
                row["source"],
                row.get("key"),
                row["query"],
                row.get("workflow"),
                row["queued_at"],
            ),
        )

    def finished(self, run_id: str, fields: dict[str, Any]) -> None:
        """``fields``: state, outcome, answer, reason, result (msgpack), started_at,
        finished_at."""
        self._db.execute(
            "UPDATE runs SET state = ?, outcome = ?, answer = ?, reason = ?, result = ?,"
            " started_at = ?, finished_at = ? WHERE id = ?",
            (
                fields["state"],
                fields.get("outcome"),
                fields.get("answer"),
                fields.get("reason"),
                fields.get("result"),
                fields.get("started_at"),
                fields["finished_at"],
                run_id,
            ),
        )

    def batch(self) -> _Transaction:
        """One transaction for the writes inside it: one commit for all of them."""
        return _Transaction(self._db)

    def prune(self, *, keep_runs: int, older_than: float) -> tuple[int, list[tuple[str, str]]]:
        """Delete finished runs past the bounds, inside the caller's :meth:`batch`; returns how
        many, and ``(id, key)`` of those that held a key."""
        doomed = self._db.execute(
            "SELECT id, key FROM runs WHERE state NOT IN (?, ?) AND (queued_at < ? OR id NOT IN"
            " (SELECT id FROM runs ORDER BY queued_at DESC LIMIT ?))",
            (*UNFINISHED, older_than, keep_runs),
        ).fetchall()
        self._db.executemany("DELETE FROM runs WHERE id = ?", [(row[0],) for row in doomed])
        return len(doomed), [(run_id, key) for run_id, key in doomed if key is not None]

    def give_back_pages(self) -> None:
        """Hand the free pages back to the disk (the file shrinks), inside the caller's
        transaction, so they are never written out at all."""
        free = self._free_pages()
        while free > 0:
            # Python's sqlite3 steps a PRAGMA that returns no rows once, and each step of
            # incremental_vacuum frees one page: so one call per page.
            for _ in range(free):
                self._db.execute("PRAGMA incremental_vacuum")
            left = self._free_pages()
            if left >= free:
                return  # nothing more to give (auto_vacuum is off on this file)
            free = left

    def _free_pages(self) -> int:
        row = self._db.execute("PRAGMA freelist_count").fetchone()
        return int(row[0])

    def checkpoint(self) -> None:
        """Fold the WAL back into the file, so it does not grow between SQLite's own checkpoints."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- reads --------------------------------------------------------------------------------

    def get(self, run_id: str) -> dict[str, Any] | None:
        cursor = self._db.execute(f"SELECT {', '.join(COLUMNS)} FROM runs WHERE id = ?", (run_id,))
        row = cursor.fetchone()
        return dict(zip(COLUMNS, row, strict=True)) if row else None

    def latest(self, limit: int) -> list[dict[str, Any]]:
        cursor = self._db.execute(
            f"SELECT {', '.join(LIST_COLUMNS)} FROM runs ORDER BY queued_at DESC, rowid DESC"
            " LIMIT ?",
            (limit,),
        )
        return [dict(zip(LIST_COLUMNS, row, strict=True)) for row in cursor]

    def keys(self) -> list[tuple[str, str, str, str | None]]:
        """``(key, id, query, workflow)`` of every retained run with a key, except runs that
        ended ``interrupted`` (a restart, a shutdown, a failure, a cancel, the deadline): they
        never got to their answer, so their key is free for a new run."""
        cursor = self._db.execute(
            "SELECT key, id, query, workflow FROM runs WHERE key IS NOT NULL"
            " AND state != 'interrupted' AND coalesce(outcome, '') != 'interrupted'"
        )
        return list(cursor)

    def count(self) -> int:
        row = self._db.execute("SELECT count(*) FROM runs").fetchone()
        return int(row[0])

    def close(self) -> None:
        try:
            self.checkpoint()
        except sqlite3.Error as exc:
            log.warning("journal: the last checkpoint failed: %s", exc)
        self._db.close()


def _switch_to_incremental_vacuum(db: sqlite3.Connection) -> None:
    """A file written before pruned pages were given back: rewrite it once (VACUUM) so they can
    be. A file that cannot be rewritten now (a full disk) is used as it is, and tried next open."""
    started = time.monotonic()
    try:
        db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        db.execute("VACUUM")
    except sqlite3.Error as exc:
        log.warning("journal: could not switch the file to give pruned pages back: %s", exc)
        return
    log.info(
        "journal: the file now gives pruned runs' pages back (rewritten in %.1f s)",
        time.monotonic() - started,
    )


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:
            self._db.execute("ROLLBACK")


class _Unusable(Exception):
    """The file is there but cannot be used as this version's journal."""

    def __init__(self, why: str, tag: str) -> None:
        super().__init__(why)
        self.why = why
        self.tag = tag


_IO_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
    }
)


def _is_io_problem(exc: sqlite3.DatabaseError) -> bool:
    """A disk that is full, read-only or failing: not the file's fault, so it is not moved."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _IO_CODES


__all__ = [
    "COLUMNS",
    "LIST_COLUMNS",
    "SCHEMA_VERSION",
    "JournalStore",
    "JournalUnavailable",
]
