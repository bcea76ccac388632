"""What each thread's model calls cost, kept apart per thread (a step runs on one run thread)."""

from __future__ import annotations

import threading

from edge_agentd.agent.protocol import TokenCounts


class ThreadCounts:
    """Token counts per calling thread, taken (and reset) once per agent step."""

    def __init__(self) -> None:
        self._local = threading.local()

    def take(self) -> TokenCounts:
        """This thread's counts since it last took them; counting starts again."""
        counts: TokenCounts = getattr(self._local, "value", None) or TokenCounts()
        self._local.value = TokenCounts()
        return counts

    def add(self, *, prompt: int, **counts: int) -> None:
        """Record one call on this thread."""
        current: TokenCounts | None = getattr(self._local, "value", None)
        if current is None:
            current = self._local.value = TokenCounts()
        current.add(prompt=prompt, **counts)


__all__ = ["ThreadCounts"]
