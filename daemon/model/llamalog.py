"""llama.cpp's own log, routed into the daemon's: its errors as errors, its warnings as warnings,
its chatter at debug, and the few warnings known to be harmless at debug too.

llama-cpp-python's hook (``llama_cpp._logger``, 0.3.36) reads ggml's log levels in an older order
than the vendored llama.cpp writes them (``ggml.h``: none 0, debug 1, info 2, warn 3, error 4,
continuation 5). Through it every start printed llama.cpp's warnings straight to stderr, past
the daemon's log format and its syslog priorities, while a real load error (level 4, read as
debug) was dropped: "could not load" came with no reason. :func:`install` replaces that hook.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any, Final

from edge_agentd.model.bindings import llama_cpp

log = logging.getLogger("edge_agentd.model.llama_cpp")

GGML_DEBUG: Final = 1
GGML_INFO: Final = 2
GGML_WARN: Final = 3
GGML_ERROR: Final = 4
GGML_CONT: Final = 5
"""ggml's ``enum ggml_log_level``, as the vendored llama.cpp's ``ggml.h`` numbers it."""

KNOWN_HARMLESS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (
        re.compile(r"control-looking token: .* was not control-type; this is probably a bug"),
        # The embedded Gemma 3 GGUF types '</s>' as a normal token; llama.cpp makes it a control
        # token itself, and the prompt writes every control token but the turn markers as plain
        # text anyway (docs/design.md, "Prompt hygiene"). Said at every start, it fixes nothing.
        "a control token typed as normal in the GGUF, which llama.cpp overrides itself",
    ),
    (
        re.compile(r"using full-size SWA cache"),
        # We ask for the full-size sliding-window cache (swa_full=True): only at full size can
        # the cache be cut back safely (docs/design.md, "Model formats").
        "the full-size sliding-window cache, which the daemon asks for",
    ),
)
"""llama.cpp warnings that every start of a good model gives, each with why it is harmless: they
are logged at debug, not as warnings. Nothing else is held back."""

STOPPED: Final = re.compile(r"(failed with error 1|compute status: 1|failed to decode, ret = 2)$")
"""What llama.cpp says, as errors, when the daemon stopped a decode on purpose (its run's
deadline or cancel): ``GGML_STATUS_ABORTED`` is 1, and ``llama_decode`` returns 2. Logged at
debug, with the line after it that says which cache cells it dropped."""
_DROPPED = "removing memory module entries"


class LlamaLog:
    """Whole lines of llama.cpp's log, each logged once at the level of the message it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = ""
        self._stopped = False
        self._level = GGML_INFO
        self.verbose = False
        """Log llama.cpp's info and debug lines at info, not debug (``LlamaModel(verbose=)``)."""
        self.first_error: str | None = None
        """The first error line llama.cpp logged since :meth:`forget_errors`: a failed load says
        why with it (the lines after it only say that the load failed)."""

    def write(self, level: int, text: str) -> None:
        with self._lock:
            if level != GGML_CONT:
                if self._pending:  # a message that never ended its line: ended by the next one
                    self._emit(self._level, self._pending)
                    self._pending = ""
                self._level = level
            *lines, self._pending = (self._pending + text).split("\n")
            for line in lines:
                self._emit(self._level, line)

    def forget_errors(self) -> None:
        with self._lock:
            self.first_error = None

    def _emit(self, level: int, line: str) -> None:
        line = line.rstrip()
        if not line:
            return
        stopped, self._stopped = self._stopped, False
        if STOPPED.search(line) or (stopped and _DROPPED in line):
            self._stopped = True
            log.debug("%s", line)
        elif level == GGML_ERROR:
            if self.first_error is None:
                self.first_error = line
            log.error("%s", line)
        elif level == GGML_WARN:
            log.log(logging.DEBUG if known_harmless(line) else logging.WARNING, "%s", line)
        else:
            log.log(logging.INFO if self.verbose else logging.DEBUG, "%s", line)


def known_harmless(line: str) -> bool:
    return any(pattern.search(line) for pattern, _ in KNOWN_HARMLESS)


LLAMA_LOG = LlamaLog()
"""The one log llama.cpp writes to: its logger is process-wide."""


def _on_log(level: int, text: bytes | None, user_data: Any) -> None:
    # Called by llama.cpp on whatever thread logs; an exception here could not reach anyone.
    try:
        LLAMA_LOG.write(level, (text or b"").decode("utf-8", "replace"))
    except Exception:
        log.exception("a llama.cpp log line could not be logged")


_CALLBACK = llama_cpp.llama_log_callback(_on_log)
"""Kept for the life of the process: llama.cpp holds a bare pointer to it."""
_installed = threading.Event()


def install() -> None:
    """Route llama.cpp's log here (once; every model load calls it)."""
    if _installed.is_set():
        return
    llama_cpp.llama_log_set(_CALLBACK, None)
    _installed.set()


__all__ = ["KNOWN_HARMLESS", "LLAMA_LOG", "LlamaLog", "install", "known_harmless"]
