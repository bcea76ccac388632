"""The live line ``edge-agent ask`` keeps on a terminal: queued, step N of M, the skill running,
and the time so far.

It is drawn on stderr only, and only when stderr is a terminal (:func:`progress_line`), so stdout
holds the answer alone and scripts, pipes and Home Assistant see exactly what they saw before.
It is fed by the run's streamed replies (docs/protocol.md, "Replies"): ``accepted`` gives the
queue position and the steps allowed, each ``event`` the step and the skill. A ticker thread
redraws it twice a second so the time moves while the model thinks. It imports nothing beyond
the standard library: the client starts without pydantic (scripts/bench/bench_cli_start.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

CLEAR = "\r\x1b[K"
"""Back to the start of the line and erase it: how the line is redrawn and, at the end, removed."""

TICK_S = 0.5

# The events that close a step (docs/protocol.md, "Events"): a skill's result or error, or a reply
# the daemon refused (it retries in the next step). A FinalAnswerAction ends the run instead, or
# is followed by the ValidationErrorObservation that refused it, which closes its step.
_STEP_CLOSERS = frozenset(
    {
        "SkillResultObservation",
        "ToolErrorObservation",
        "ValidationErrorObservation",
        "ModelErrorObservation",
    }
)


def _printable(value: Any, limit: int = 60) -> str:
    """``value`` as text any terminal shows as is: a daemon's string cannot move the cursor."""
    text = value if isinstance(value, str) else repr(value)
    # ASCII too: a terminal whose encoding cannot show a character would refuse the whole line.
    return "".join(c if c.isprintable() and c.isascii() else "?" for c in text[:limit])


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class ProgressLine:
    """One status line on ``stream``, redrawn in place until :meth:`close` erases it.

    ``max_iterations`` is the step limit the user asked for, shown until the daemon's ``accepted``
    reply says the limit it applied. Every method may be called from any thread.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        max_iterations: int | None = None,
        columns: int = 80,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._columns = max(columns, 20)
        self._clock = clock
        self._started = clock()
        # Reentrant: paused() holds it while its caller prints, and the caller may update the line.
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._shown = False
        self._last = ""
        self._closed = False
        self._max = max_iterations
        self._phase = "connecting"
        self._ahead: int | None = None
        self._completed = 0  # steps closed so far; the step under way is the next one
        self._skill: str | None = None

    # -- what the daemon said -----------------------------------------------------------------

    def daemon_state(self, state: Any) -> None:
        """The daemon's ``status`` state, asked before the run: ``loading`` is worth saying."""
        with self._lock:
            self._phase = "loading" if state == "loading" else "sending"
        self._draw()

    def accepted(self, reply: dict[str, Any]) -> None:
        """The run entered the queue: ``position`` runs ahead, ``max_iterations`` steps allowed
        (either may be missing, from an older daemon)."""
        ahead = _count(reply.get("position"))
        limit = _count(reply.get("max_iterations"))
        with self._lock:
            if limit:
                self._max = limit
            self._ahead = ahead
            if self._phase != "loading" or ahead:
                self._phase = "queued" if ahead else "thinking"
        self._draw()

    def event(self, event: Any) -> None:
        """The run appended ``event``; unknown or malformed events only move the clock."""
        if not isinstance(event, dict):
            event = {}
        kind = event.get("type") if isinstance(event.get("type"), str) else None
        with self._lock:
            self._ahead = None
            if kind == "CallSkillAction":
                self._phase, self._skill = "running", _printable(event.get("skill_name"))
            elif kind == "FinalAnswerAction":
                self._phase = "answering"
            elif kind in _STEP_CLOSERS:
                self._completed += 1
                self._phase = (
                    "retrying"
                    if kind in ("ValidationErrorObservation", "ModelErrorObservation")
                    else "thinking"
                )
            elif kind == "InterruptedObservation":
                self._phase = f"stopping ({_printable(event.get('reason'), 20)})"
            elif kind == "MaxIterationsObservation":
                self._phase = "out of steps"
            else:
                self._phase = "thinking" if self._phase in ("queued", "loading") else self._phase
        self._draw()

    # -- the line -----------------------------------------------------------------------------

    def text(self) -> str:
        """The line as it reads now, without the control characters that draw it."""
        with self._lock:
            return self._text()

    def _text(self) -> str:
        elapsed = f"{self._clock() - self._started:.0f} s"
        step = f"step {min(self._completed + 1, self._max or self._completed + 1)}"
        if self._max:
            step += f" of {self._max}"
        phase = self._phase
        if phase == "queued":
            what = f"queued, {self._ahead} ahead" if self._ahead else "queued"
        elif phase == "loading":
            what = "waiting for the daemon to load its model"
        elif phase in ("connecting", "sending"):
            what = "asking"
        elif phase == "running":
            what = f"{step}: running {self._skill}"
        else:
            what = f"{step}: {phase}"
        line = f"edge-agent: {what} ({elapsed})"
        return line[: self._columns - 1]  # never wrap: \r returns to the start of one line only

    def _draw(self) -> None:
        with self._lock:
            if self._closed:
                return
            text = self._text()
            if self._shown and text == self._last:
                return  # the ticker's redraw of an unchanged line would only flicker
            self._write(CLEAR + text)
            self._shown, self._last = True, text

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):
            # The terminal went away (or stderr was closed): the line is only a courtesy, and the
            # answer still goes to stdout; stop drawing.
            self._closed = True
            self._stop.set()

    # -- its life -----------------------------------------------------------------------------

    def start(self) -> None:
        """Draw the line and keep its clock moving until :meth:`close`."""
        self._draw()
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            self._draw()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Erase the line while something else is printed (``--stream``), then draw it again."""
        with self._lock:
            if self._shown and not self._closed:
                self._write(CLEAR)
                self._shown = False
            yield
        self._draw()

    def close(self) -> None:
        """Stop the clock and erase the line, so what is printed next starts a clean line."""
        self._stop.set()
        with self._lock:
            if self._closed:
                return
            if self._shown:
                self._write(CLEAR)
            self._closed = True
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(1.0)


def progress_line(stream: TextIO, max_iterations: int | None = None) -> ProgressLine | None:
    """A ProgressLine on ``stream`` when it is a terminal that can erase a line, else None."""
    try:
        if not stream.isatty() or os.environ.get("TERM") == "dumb":
            return None
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        return None
    # A new pseudo-terminal reports 0 columns until someone sets its size.
    return ProgressLine(stream, max_iterations=max_iterations, columns=columns or 80)


__all__ = ["CLEAR", "ProgressLine", "progress_line"]
