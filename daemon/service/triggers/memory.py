"""What the triggers remember across a restart, read from the run journal.

Every firing is a journaled run with the source ``trigger:NAME`` (docs/protocol.md, "The run
journal"), so the journal already knows when each trigger last fired. :class:`JournalMemory`
reads that once, at start, from the journal's SQLite file (read-only; the journal keeps writing
beside it in WAL mode). A ``when`` that fired starts ``fired``: it fires again only after its
reading has left the condition by ``hysteresis`` (whether it left while the daemon was down is not
known, so it is not fired twice for what may be one crossing); an ``at`` or ``every`` time that ran
is not run again.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from edge_agentd.service.triggers.firing import SOURCE_PREFIX, Remembered

log = logging.getLogger(__name__)


class JournalMemory:
    """The last firing of each trigger, as the journal kept it; ``remember`` is the journal's
    own work (the firing's run is journaled when it is queued)."""

    def __init__(self, path: Path) -> None:
        self._last: dict[str, float] = {}
        if not path.exists():
            return
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
            try:
                rows = db.execute(
                    "SELECT source, MAX(queued_at) FROM runs WHERE source LIKE ? GROUP BY source",
                    (SOURCE_PREFIX + "%",),
                ).fetchall()
            finally:
                db.close()
        except sqlite3.Error as exc:
            log.warning("triggers: the journal could not be read (%s); they start afresh", exc)
            return
        for source, queued_at in rows:
            if isinstance(source, str) and isinstance(queued_at, int | float):
                self._last[source[len(SOURCE_PREFIX) :]] = float(queued_at)

    def recall(self, trigger: str) -> Remembered | None:
        last = self._last.get(trigger)
        if last is None:
            return None
        return Remembered(last_fired=last, latched=True, last_due=last)

    def remember(self, trigger: str, remembered: Remembered) -> None:
        return None


__all__ = ["JournalMemory"]
