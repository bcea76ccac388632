"""The journal file's bounds: runs past ``keep_runs`` pruned inside the very transaction that
wrote the batch, runs older than ``keep_days`` every PRUNE_EVERY_S (and at start), and the freed
pages given back before it commits, so no burst grows the file."""

from __future__ import annotations

import dataclasses
import time
from typing import Final

from edge_agentd.service.config.settings import JournalSettings
from edge_agentd.service.journal.store import JournalStore

PRUNE_EVERY_S: Final = 600.0
"""keep_days is enforced this often (and at start); keep_runs on every write that passes it."""


@dataclasses.dataclass(frozen=True)
class Pruned:
    """What one prune deleted: how many runs, and ``(id, key)`` of those that held a key."""

    count: int
    keyed: list[tuple[str, str]]


class Bounds:
    """How many runs the journal keeps, and when the next prune is due (the journal thread's)."""

    def __init__(self, settings: JournalSettings) -> None:
        self.settings = settings
        self.rows = 0
        """The runs in the file, counted as they are written and recounted at each prune."""
        self._next_prune = 0.0

    def prune_in(self, store: JournalStore, *, force: bool = False) -> Pruned | None:
        """Prune inside the caller's transaction when a bound is passed (``keep_runs``) or due
        (``keep_days``, every PRUNE_EVERY_S), and give the freed pages back; what went, or None
        when nothing was due."""
        now = time.monotonic()
        over = self.rows > self.settings.keep_runs
        if not (force or over or now >= self._next_prune):
            return None
        self._next_prune = now + PRUNE_EVERY_S
        # Past keep_runs, prune a tenth below it, so a full journal is not pruned on every write.
        keep = self.settings.keep_runs
        if over:
            keep = max(1, keep - keep // 10)
        count, keyed = store.prune(
            keep_runs=keep, older_than=time.time() - self.settings.keep_days * 86400
        )
        if count:
            store.give_back_pages()
        self.rows = store.count()
        return Pruned(count, keyed)


__all__ = ["PRUNE_EVERY_S", "Bounds", "Pruned"]
