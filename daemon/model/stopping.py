"""Stopping the model inside a call: a run's deadline or cancel reaches llama.cpp's decode.

llama.cpp asks an abort callback after each node of its graph (hundreds a token) whether to stop.
:class:`AbortFlag` is that callback and the flag it reads. :class:`StopWatch` holds the check of
the call in progress (its run's deadline and cancel) and, on a thread of its own, raises the flag
once the check says stop; the decode then returns at its next node, and what it was evaluating is
dropped from the cache (:meth:`~edge_agentd.model.runtime.LlamaRuntime.decode_runs`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from edge_agentd.agent.protocol import ModelError
from edge_agentd.model.bindings import llama_cpp

log = logging.getLogger(__name__)

POLL_S = 0.02
"""How often the watch asks a call's check while the call runs."""

StopCheck = Callable[[], bool]


class Interrupted(ModelError):
    """The call was stopped inside llama.cpp (its run's deadline passed or it was cancelled);
    the cache holds nothing of the batch it stopped in."""

    code = "interrupted"


def _find_flag_reader() -> Any:
    """An abort callback that runs no Python: libc's ``strlen`` on a two-byte flag reads 1
    while it is raised and 0 otherwise, the ``bool`` llama.cpp asks for (the result register's
    low byte on every ABI the daemon runs on). llama.cpp calls it from its compute thread after
    every node: a Python callback would take the GIL there each time, and wait for it whenever
    another thread holds it, while the other compute threads spin at their barrier."""
    try:
        strlen = ctypes.CDLL(None).strlen
    except (OSError, AttributeError):
        return None
    return ctypes.cast(strlen, llama_cpp.ggml_abort_callback)


_FLAG_READER = _find_flag_reader()


class AbortFlag:
    """The flag llama.cpp's abort callback reads on one context; any thread may raise it."""

    def __init__(self, context: Any) -> None:
        self._flag = ctypes.create_string_buffer(2)
        # Kept here: llama.cpp holds only the pointers.
        self._callback: Any = _FLAG_READER or llama_cpp.ggml_abort_callback(self._read)
        llama_cpp.llama_set_abort_callback(context, self._callback, ctypes.addressof(self._flag))

    @property
    def raised(self) -> bool:
        return self._flag.raw[0] != 0

    def set(self, raised: bool) -> None:
        """Raise the flag (every decode stops until it is lowered), or lower it."""
        self._flag[0] = b"\x01" if raised else b"\x00"

    def _read(self, _data: Any) -> bool:
        return self.raised


def stop_check(deadline: float | None, should_stop: StopCheck | None) -> StopCheck | None:
    """One check of a run's deadline (a ``time.monotonic()`` instant) and cancel, or None."""
    if deadline is None and should_stop is None:
        return None

    def check() -> bool:
        if should_stop is not None and should_stop():
            return True
        return deadline is not None and time.monotonic() >= deadline

    return check


class StopWatch:
    """Raises a flag when the check of the model call in progress says stop.

    The model holds one for its life and wraps each call in :meth:`watching` (one call at a
    time); its thread starts with the first watched call, waits while no call is watched and ends
    with :meth:`close`.
    """

    def __init__(self, flag: AbortFlag) -> None:
        self._flag = flag
        self._cond = threading.Condition()
        self._check: StopCheck | None = None
        self._serial = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, check: StopCheck | None) -> Iterator[None]:
        """Watch ``check`` while the block runs; the flag is lowered before and after it."""
        if check is None:
            yield
            return
        with self._cond:
            self._check = check
            self._serial += 1
            self._flag.set(False)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._watch, name="edge-agent-model-stop", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._check = None
                self._serial += 1
                self._flag.set(False)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                check, serial = self._check, self._serial
                if check is None:
                    self._cond.wait()
                    continue
                try:
                    stop = check()
                except Exception:
                    # The run's own check at its next step raises the same and ends it.
                    log.exception("a model call's stop check raised; the call is not stopped")
                    stop = False
                    self._wait_past(serial)
                    continue
                if stop:
                    self._flag.set(True)
                    self._wait_past(serial)
                else:
                    self._cond.wait(POLL_S)

    def _wait_past(self, serial: int) -> None:
        while not self._closed and self._serial == serial:
            self._cond.wait()


class CallStops:
    """A model's way of stopping its calls: each thread's check of the run it carries (for the
    calls given none, such as a guidance engine's scoring), and the watch that stops a call
    inside llama.cpp."""

    def __init__(self, flag: AbortFlag) -> None:
        self.watch = StopWatch(flag)
        self._local = threading.local()

    @property
    def current(self) -> StopCheck | None:
        """The calling thread's run check."""
        check: StopCheck | None = getattr(self._local, "check", None)
        return check

    @contextlib.contextmanager
    def during(self, check: StopCheck | None) -> Iterator[None]:
        """``check`` is this thread's run check in the block."""
        before, self._local.check = self.current, check
        try:
            yield
        finally:
            self._local.check = before

    def watching(self, check: StopCheck | None) -> contextlib.AbstractContextManager[None]:
        """A call watched with ``check``, else this thread's run check (if any)."""
        return self.watch.watching(check or self.current)


__all__ = [
    "AbortFlag",
    "CallStops",
    "Interrupted",
    "StopCheck",
    "StopWatch",
    "stop_check",
]
