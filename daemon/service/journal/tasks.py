"""The journal thread's work list (journal.py): writes wait a moment to share one commit;
anything else wakes the thread at once."""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable
from typing import Final

from edge_agentd.service.journal.store import JournalStore

FLUSH_S: Final = 0.2
"""A write waits at most this long for others to share its commit (a read or a flush does not
wait): a run's rows reach the file within about this long of its start and end. Each commit
costs the serving loop about the same however many runs it holds (GIL hand-overs with the
journal's thread), so this is what bounds the journal's cost to a burst of quick runs
(docs/performance.md, "What the code's choices rest on")."""


class Tasks:
    """The journal thread's work, in order. Writes wake the thread once per ``FLUSH_S`` at
    most, so a busy daemon commits many runs at once and the serving loop's side of a write is
    one append; a read, a flush or the end wakes it at once."""

    def __init__(self) -> None:
        self._items: collections.deque[Write | Callable[[], None] | None] = collections.deque()
        self._ready = threading.Event()
        self._hurry = threading.Event()
        self._armed = False

    def write(self, task: Write) -> None:
        self._items.append(task)
        if not self._armed:
            self._armed = True
            self._ready.set()

    def call(self, task: Callable[[], None] | None) -> None:
        self._items.append(task)
        self._hurry.set()
        self._ready.set()

    def take(self) -> list[Write | Callable[[], None] | None]:
        self._ready.wait()
        self._ready.clear()
        self._hurry.wait(FLUSH_S)
        self._hurry.clear()
        self._armed = False  # before taking: a write from now on wakes the thread again
        items = []
        while self._items:
            items.append(self._items.popleft())
        return items


@dataclasses.dataclass(frozen=True)
class Write:
    """A write for the journal's thread; writes in a row are committed together."""

    apply: Callable[[JournalStore], None]


__all__ = ["FLUSH_S", "Tasks", "Write"]
