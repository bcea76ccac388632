"""Where the daemon is in its life: loading the model, ready, stopping, stopped.

The serving loop's thread moves the phase, and only along :data:`TRANSITIONS`; any thread (or a
signal handler) may ask it to stop.
"""

from __future__ import annotations

import time
from typing import Final, Literal

Phase = Literal["loading", "ready", "stopping", "stopped"]
"""What ``status`` reports as ``state``, except that a ready daemon with a run in flight says
``busy``."""

TRANSITIONS: Final[dict[Phase, frozenset[Phase]]] = {
    # A model that fails to load sends the daemon from loading straight to stopping. The loop
    # ends in stopped: normally through stopping, from anywhere when it broke.
    "loading": frozenset({"ready", "stopping", "stopped"}),
    "ready": frozenset({"stopping", "stopped"}),
    "stopping": frozenset({"stopped"}),
    "stopped": frozenset(),
}


class Lifecycle:
    """The phase, when it began, and the exit code the daemon will leave with."""

    def __init__(self) -> None:
        self.phase: Phase = "loading"
        self.started = time.monotonic()
        self.exit_code = 0
        self.stop_requested = False
        """A plain flag, not a ``threading.Event``: a signal handler may run inside another
        (a second SIGTERM while the first is handled), and ``Event.set`` holds a lock that the
        inner one would wait on for ever. Setting an attribute is atomic under the GIL."""
        self.hangups = 0
        """SIGHUPs received; the loop logs them (:meth:`take_hangups`): a handler that wrote
        the log line itself could land inside the loop's own write to the same stream."""
        self._hangups_told = 0
        self.stopping_since: float | None = None
        """When shutdown began; None until then."""
        self.interrupted_at: float | None = None
        """When shutdown interrupted the run in flight, past its grace."""

    def move(self, to: Phase) -> None:
        if to not in TRANSITIONS[self.phase]:
            raise RuntimeError(f"the daemon cannot go from {self.phase} to {to}")
        self.phase = to

    def request_stop(self) -> None:
        """Safe from any thread and from a signal handler: the loop begins stopping next turn."""
        self.stop_requested = True

    def hang_up(self) -> None:
        """A SIGHUP's handler: counted, nothing else (safe inside another handler)."""
        self.hangups += 1

    def take_hangups(self) -> int:
        """SIGHUPs received since the last call; the loop's thread only."""
        new, self._hangups_told = self.hangups - self._hangups_told, self.hangups
        return new

    def begin_stopping(self, now: float) -> None:
        self.move("stopping")
        self.stopping_since = now

    @property
    def stopping(self) -> bool:
        """True from the moment shutdown began: no run is accepted or started after it."""
        return self.stopping_since is not None

    def uptime_s(self) -> float:
        return round(time.monotonic() - self.started, 3)


__all__ = ["TRANSITIONS", "Lifecycle", "Phase"]
