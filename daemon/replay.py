"""``--model mock:FILE``: scripted model replies, replayed from the start for every run.

FILE is a JSON list. Each item is a reply string, or ``{"text": "...", "delay_s": 0.5}`` to make
that reply take a while (for demos and tests of cancel and shutdown mid-run).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edge_agent.events import Usage
from edge_agent.model.mock import MockModelExhausted
from edge_agent.model.protocol import Completion

MAX_DELAY_S = 3600.0


class ReplayFileError(ValueError):
    """The mock file is missing or not a list of scripted replies."""


def _reply(item: Any, index: int, source: str) -> tuple[str, float]:
    if isinstance(item, str):
        return item, 0.0
    if (
        isinstance(item, dict)
        and isinstance(item.get("text"), str)
        and set(item)
        <= {
            "text",
            "delay_s",
        }
    ):
        delay = item.get("delay_s", 0.0)
        if (
            isinstance(delay, int | float)
            and not isinstance(delay, bool)
            and 0 <= delay <= MAX_DELAY_S
        ):
            return item["text"], float(delay)
    raise ReplayFileError(
        f'{source}: item {index} must be a string or {{"text": str, "delay_s": seconds}}'
    )


class ReplayModel:
    """A ModelHandle that answers each run with the same script, from its first reply."""

    def __init__(self, replies: list[tuple[str, float]], source: str = "<mock>") -> None:
        self.replies = replies
        self.source = source
        self._next = 0
        self._lock = threading.Lock()
        self.info: dict[str, Any] = {"kind": "mock", "file": source, "replies": len(replies)}

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayModel:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ReplayFileError(f"{path}: cannot read the mock replies: {exc}") from None
        if not isinstance(data, list):
            raise ReplayFileError(f"{path}: the mock file must hold a JSON list of replies")
        return cls([_reply(item, i, str(path)) for i, item in enumerate(data)], str(path))

    def reset(self) -> None:
        """Start the script over; the daemon calls this before each run."""
        with self._lock:
            self._next = 0

    def generate(self, prompt: str, **kwargs: Any) -> str:
        with self._lock:
            index = self._next
            self._next += 1
        if index >= len(self.replies):
            raise MockModelExhausted(
                f"the mock script {self.source} has {len(self.replies)} replies; call {index + 1} "
                "has none"
            )
        text, delay = self.replies[index]
        if delay and not _wait(delay, kwargs.get("deadline"), kwargs.get("should_stop")):
            # Like llama.cpp stopped mid-reply: no text, and the loop sees why at its next check.
            return Completion("", Usage(stop="interrupted"))
        return text


def _wait(delay: float, deadline: Any, should_stop: Callable[[], bool] | None) -> bool:
    """Sleep ``delay`` seconds like a slow model; False when the run was interrupted first."""
    until = time.monotonic() + delay
    while (left := until - time.monotonic()) > 0:
        if should_stop is not None and should_stop():
            return False
        if isinstance(deadline, int | float) and time.monotonic() >= deadline:
            return False
        time.sleep(min(left, 0.01))
    return True


__all__ = ["ReplayFileError", "ReplayModel"]
