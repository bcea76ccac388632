"""The other threads' only way to the serving loop: a queue, and a byte on the wake-up pipe.

The loading thread, the runs, the triggers and the journal never touch a socket: what they have to
say is posted here, and the loop takes it on its own thread (docs/design.md, "Threads").
"""

from __future__ import annotations

import queue
from collections.abc import Iterator

from edge_agentd.service.journal.journal import LoopCall
from edge_agentd.service.router import WakeUpPipe
from edge_agentd.service.runs.jobs import Message
from edge_agentd.service.triggers.firing import Firing

Posted = Message | Firing | LoopCall


class Outbox:
    """Any thread may :meth:`post`; the serving loop alone :meth:`take` s."""

    def __init__(self, wakeup: WakeUpPipe) -> None:
        self._queue: queue.SimpleQueue[Posted] = queue.SimpleQueue()
        self._wakeup = wakeup

    def post(self, message: Posted) -> None:
        self._queue.put(message)
        self._wakeup.wake()

    def take(self) -> Iterator[Posted]:
        """Everything posted so far, oldest first, without waiting."""
        while True:
            try:
                yield self._queue.get_nowait()
            except queue.Empty:
                return


__all__ = ["Outbox", "Posted"]
