"""One of the daemon's own threads: started once, stopped within a deadline, its crash kept.

The model's loading, the journal's writer, the connection watcher and the triggers' runner each run
their loop on a :class:`DaemonThread`. The owner keeps its loop and says how the loop is asked to
end; the thread does the rest the same way for all of them: a second :meth:`~DaemonThread.start`
does nothing, :meth:`~DaemonThread.stop` waits at most its deadline and says whether the loop
ended (a loop that did not is logged), and whatever escapes the loop, ``BaseException`` included,
is logged with its traceback and kept in :attr:`~DaemonThread.crash`, which ``status`` shows
(docs/design.md, "Threads"). A crash is never silent, and never takes the process down.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class DaemonThread:
    """Runs ``loop`` on a daemon thread named ``name``; ``ask_stop`` (any thread) asks it to end.

    Daemonic, so a loop that overran its deadline at shutdown does not keep the process alive.
    """

    def __init__(
        self, name: str, loop: Callable[[], None], *, ask_stop: Callable[[], None] | None = None
    ) -> None:
        self.name = name
        self._loop = loop
        self._ask_stop = ask_stop
        self._thread: threading.Thread | None = None
        self.crash: str | None = None
        """What ended the loop by escaping it (``Type: message``), or None."""

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Run the loop from now on; a second call does nothing."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float | None) -> bool:
        """Ask the loop to end and wait ``timeout`` seconds (None: as long as it takes) for it.

        True when it ended, or never started; False, logged, when it is still running.
        """
        if self._ask_stop is not None:
            self._ask_stop()
        return self.join(timeout)

    def join(self, timeout: float | None) -> bool:
        """Wait for a loop that was asked to end some other way; True when it ended."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return thread is None
        thread.join(timeout)
        if thread.is_alive():
            log.warning("thread %s did not stop within %s s", self.name, timeout)
            return False
        return True

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # logged and kept below, never silent
            self.crash = f"{type(exc).__name__}: {exc}"
            log.error("thread %s crashed: %s", self.name, self.crash, exc_info=exc)


def crashes(threads: list[DaemonThread]) -> dict[str, str]:
    """The threads whose loop crashed, by name: what ``status`` shows of them."""
    return {thread.name: thread.crash for thread in threads if thread.crash is not None}


__all__ = ["DaemonThread", "crashes"]
