"""The run journal: every run the daemon accepts, kept in SQLite (journal.store) by its own thread.

The serving loop tells the journal what happens to each run (:meth:`Journal.queued`,
:meth:`Journal.started`, :meth:`Journal.finished`, :meth:`Journal.ended`); each call only puts a
task on the journal thread's queue, so the loop never waits on the disk. A write that fails
(disk full, read-only) never fails the run: the journal is ``degraded`` in ``status``, the log
says why once, and the next write that works clears it.

The journal also holds, in memory, which run each idempotency key belongs to and what that run
asked (journal.keys; bounded like the file: a key goes when its run is pruned, or ends
``interrupted``), and the requests waiting on a keyed run that is still going: they are answered
from the run's own final reply, not from the disk.

The file is bounded by ``keep_runs`` whatever the burst: runs past it are pruned inside the very
transaction that wrote the batch, and their pages are given back to the disk before it commits.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import msgpack

from edge_agentd.protocol.framing import unpack_frame
from edge_agentd.protocol.wire import ErrorCode, ErrorReply, encode
from edge_agentd.service.config.settings import JournalSettings
from edge_agentd.service.journal.bounds import Bounds, Pruned
from edge_agentd.service.journal.keys import KeyHolder, Keys
from edge_agentd.service.journal.path import JournalLock, default_path, demo_path
from edge_agentd.service.journal.store import JournalStore, JournalUnavailable
from edge_agentd.service.journal.tasks import Tasks, Write
from edge_agentd.service.threads.daemonthread import DaemonThread

log = logging.getLogger(__name__)

REOPEN_EVERY_S: Final = 30.0
"""A journal that could not be opened is tried again at most this often, when a write comes."""

T = TypeVar("T")
LoopCall = Callable[[], None]
Send = Callable[[list[bytes], bytes, "tuple[int, int] | None"], None]


@dataclasses.dataclass(frozen=True)
class Waiter:
    """A keyed ``run`` request answered by another run's final reply."""

    envelope: list[bytes]
    request_id: str
    connection: tuple[int, int] | None


class Journal:
    """The journal of one daemon. ``post`` puts a call on the serving loop's thread (any thread
    may call it); ``send`` (called there) sends a packed reply on a connection."""

    def __init__(
        self,
        settings: JournalSettings,
        *,
        post: Callable[[LoopCall], None],
        send: Send,
        path: Path | None = None,
        endpoint: str | None = None,
        demo: bool = False,
        open_now: bool = True,
    ) -> None:
        self.settings = settings
        self.enabled = settings.enabled
        path = path or (Path(settings.path) if settings.path else default_path(endpoint))
        self.path = demo_path(path) if demo else path
        """``[journal] path``, else the default for the daemon on ``endpoint`` (journal.path);
        beside it, a daemon serving the demo device's own (``demo``)."""
        self._lock = JournalLock(self.path)
        self._post = post
        self._send = send
        self._tasks = Tasks()
        self._keys = Keys()
        self._waiters: dict[str, list[Waiter]] = {}
        """Loop thread only: run id -> the keyed requests waiting on it."""
        self._live_keys: dict[str, str] = {}
        """Loop thread only: run id -> key, for the keyed runs still queued or running."""
        self._started: dict[str, float] = {}
        """Run id -> when it started, while it runs (set on the loop's thread, read on the
        journal's): a start is not written on its own, its end writes it."""
        self._store: JournalStore | None = None
        self._next_open = 0.0
        self._bounds = Bounds(settings)
        """How many runs the file keeps, and when the next prune is due."""
        self._closed = False
        self.problem: str | None = None
        """Why the journal is degraded, or None."""
        self.counts: collections.Counter[str] = collections.Counter()
        """``writes``, ``write_errors``, ``recovered``, ``pruned``, ``deduplicated``,
        ``key_conflicts``."""
        self.thread = DaemonThread(
            "edge-agent-journal", self._work, ask_stop=lambda: self._tasks.call(None)
        )
        if open_now:
            self.start()

    def start(self) -> None:
        """Open the file and start the thread (once). The daemon does it once its endpoints are
        bound, so that a second daemon on a taken endpoint is told that, and not first that the
        journal is in use."""
        if self.enabled and not self.thread.started:
            self._open()  # here, not on the thread: the keys must be known before any request
            self.thread.start()

    # -- the serving loop's side (each call only queues work) ---------------------------------

    def queued(
        self,
        run_id: str,
        *,
        source: str,
        query: str,
        key: str | None = None,
        workflow: str | None = None,
    ) -> None:
        """A run was accepted, from ``source`` (``zmq``, ``mqtt``, ``trigger:NAME``...)."""
        if not self.enabled:
            return
        if key is not None:
            self._keys.hold(key, run_id, query, workflow)
            self._live_keys[run_id] = key
        else:
            self._keys.release_run(run_id)  # its row replaces a used id's, and the key it held
        row = {
            "id": run_id,
            "source": source,
            "key": key,
            "query": query,
            "workflow": workflow,
            "queued_at": time.time(),
        }
        self._tasks.write(Write(lambda store: self._insert(store, row)))

    def started(self, run_id: str) -> None:
        if self.enabled:
            self._started[run_id] = time.time()

    def started_at(self, run_id: str) -> float | None:
        """When ``run_id`` started, while it runs (any thread)."""
        return self._started.get(run_id)

    def finished(
        self, run_id: str, payload: bytes, *, outcome: str | None, answer: str | None
    ) -> None:
        """The run's final ``result`` reply, as packed and sent: it is kept as it is. A run
        that ended ``interrupted`` (cancelled, out of time, stopped) never got to its answer, so
        it lets its key go: the next ``run`` with the key is run."""
        key = self._live_keys.pop(run_id, None)
        if key is not None and outcome == "interrupted":
            self._keys.release(key, run_id)
        self._answer_waiters(run_id, payload)
        if self.enabled:
            fields = {
                "state": "done",
                "outcome": outcome,
                "answer": answer,
                "result": payload,
                "started_at": self._started.pop(run_id, None),
                "finished_at": time.time(),
            }
            self._tasks.write(Write(lambda store: store.finished(run_id, fields)))

    def ended(
        self, run_id: str, code: ErrorCode, message: str, *, reason: str | None = None
    ) -> None:
        """The run ended without a result, answered with the error ``code``: kept as
        ``interrupted``, ``reason`` (else ``code``) why. Its key is let go for a new run."""
        key = self._live_keys.pop(run_id, None)
        if key is not None:
            self._keys.release(key, run_id)
        if run_id in self._waiters:
            self._answer_waiters(run_id, encode(ErrorReply(id=None, code=code, message=message)))
        if self.enabled:
            fields = {
                "state": "interrupted",
                "outcome": "interrupted",
                "reason": reason or code,
                "started_at": self._started.pop(run_id, None),
                "finished_at": time.time(),
            }
            self._tasks.write(Write(lambda store: store.finished(run_id, fields)))

    def run_for_key(self, key: str) -> str | None:
        """The retained run that holds ``key``, if any."""
        holder = self._keys.get(key)
        return None if holder is None else holder.run_id

    def key_holder(self, key: str) -> KeyHolder | None:
        """The retained run that holds ``key`` and what it asked, if any (any thread)."""
        return self._keys.get(key)

    def wait_on(self, run_id: str, waiter: Waiter) -> None:
        """Answer ``waiter`` with the final reply of ``run_id`` (still queued or running)."""
        self.counts["deduplicated"] += 1
        self._waiters.setdefault(run_id, []).append(waiter)

    def read(self, query: Callable[[JournalStore | None], T], then: Callable[[T], None]) -> None:
        """Run ``query`` on the journal's thread (with None when there is no usable file), then
        ``then`` with its value on the loop's thread, after every write queued before it."""

        def task() -> None:
            store = self._usable_store()
            try:
                value = query(store)
            except sqlite3.Error as exc:
                self._degrade(f"a read failed: {exc}")
                value = query(None)
            self._post(lambda: then(value))

        if not self.enabled:
            value = query(None)
            then(value)
            return
        self._tasks.call(task)

    def status(self) -> dict[str, Any]:
        """The ``journal`` map of ``status`` (any thread)."""
        crash = self.thread.crash
        problem = self.problem or (f"its thread crashed: {crash}" if crash else None)
        state = "off" if not self.enabled else ("degraded" if problem else "ok")
        return {
            "state": state,
            "path": str(self.path) if self.enabled else None,
            "runs": self._bounds.rows,
            "problem": problem,
            "keep_runs": self.settings.keep_runs,
            "keep_days": self.settings.keep_days,
            "counters": dict(self.counts),
        }

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every task queued so far is done (tests, benchmarks, shutdown)."""
        if not self.enabled:
            return True
        done = threading.Event()
        self._tasks.call(done.set)
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        if not self.thread.started or self._closed:
            return
        if not self.thread.stop(timeout):
            log.warning("journal: writes still pending after %.0f s at shutdown", timeout)
            return
        self._closed = True
        if self._store is not None:
            self._store.close()
            self._store = None
        self._lock.release()

    def _answer_waiters(self, run_id: str, payload: bytes) -> None:
        waiters = self._waiters.pop(run_id, None)
        if not waiters:
            return
        reply = unpack_frame(payload)
        for waiter in waiters:
            reply["id"] = waiter.request_id
            packed = msgpack.packb(reply, use_bin_type=True, datetime=False)
            self._send(waiter.envelope, packed, waiter.connection)

    # -- the journal's thread -----------------------------------------------------------------

    def _work(self) -> None:
        while True:
            tasks = self._tasks.take()
            writes: list[Write] = []
            for task in tasks:
                if isinstance(task, Write):
                    writes.append(task)
                    continue
                self._write(writes)
                writes = []
                if task is None:
                    return
                try:
                    task()
                except Exception:
                    log.exception("journal: a task failed")
            self._write(writes)

    def _open(self) -> None:
        self._next_open = time.monotonic() + REOPEN_EVERY_S
        try:
            self._lock.acquire()  # before the file is read: its keys and runs are one daemon's
            store = JournalStore(self.path)
            recovered = store.recover(time.time())
            keys = store.keys()
            self._bounds.rows = store.count()
        except (JournalUnavailable, sqlite3.Error) as exc:
            self._degrade(f"cannot open the journal: {exc}")
            return
        self._store = store
        self._keys.load(keys)
        if recovered:
            self.counts["recovered"] += recovered
            log.warning(
                "journal: %d runs left queued or running by a daemon that stopped are marked "
                "interrupted (daemon_restart)",
                recovered,
            )
        log.info("journal: %s (%d runs kept)", self.path, self._bounds.rows)
        self._recovered()
        self._prune_at_open()

    def _usable_store(self) -> JournalStore | None:
        if self._store is None and time.monotonic() >= self._next_open:
            self._open()
        return self._store

    def _write(self, writes: list[Write]) -> None:
        if not writes:
            return
        store = self._usable_store()
        if store is None:
            self.counts["write_errors"] += len(writes)
            return
        try:
            with store.batch():
                for write in writes:
                    write.apply(store)
                # In this transaction, before it commits: a burst never reaches the file.
                gone = self._bounds.prune_in(store)
        except sqlite3.Error as exc:
            self.counts["write_errors"] += len(writes)
            self._degrade(f"a write failed: {exc}")
            return
        self.counts["writes"] += len(writes)
        self._recovered()
        self._pruned(store, gone)

    def _insert(self, store: JournalStore, row: dict[str, Any]) -> None:
        store.queued(row)
        self._bounds.rows += 1

    def _prune_at_open(self) -> None:
        store = self._store
        if store is None:
            return
        try:
            with store.batch():
                gone = self._bounds.prune_in(store, force=True)
        except sqlite3.Error as exc:
            self._degrade(f"pruning failed: {exc}")
            return
        self._pruned(store, gone)

    def _pruned(self, store: JournalStore, gone: Pruned | None) -> None:
        """After the commit: count what was pruned, let its keys go, and fold the WAL back."""
        if gone is None or not gone.count:
            return
        self.counts["pruned"] += gone.count
        for run_id, key in gone.keyed:
            self._keys.release(key, run_id)
        try:
            store.checkpoint()
        except sqlite3.Error as exc:
            log.warning("journal: a checkpoint after pruning failed: %s", exc)

    def _degrade(self, problem: str) -> None:
        if self.problem is None:
            log.error("journal degraded, runs go on unrecorded: %s", problem)
        self.problem = problem

    def _recovered(self) -> None:
        if self.problem is not None:
            log.warning("journal: writes work again (was: %s)", self.problem)
            self.problem = None


__all__ = ["Journal", "Waiter"]
