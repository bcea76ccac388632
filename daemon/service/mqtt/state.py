"""What the bridge's parts share: its counters, the broker link's state, and the daemon link's.

Every part writes here from its own thread; ``status`` reads it from the daemon's. One lock, held
only for a few assignments.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Literal

log = logging.getLogger("edge_agentd.service.mqtt")

BrokerLinkState = Literal["connecting", "connected", "disconnected", "refused", "stopped", "failed"]
DaemonLinkState = Literal["starting", "up", "restarting", "failed", "stopped"]


class BridgeState:
    """Counters, and where each link stands (with when that last changed, and why)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._counters: collections.Counter[str] = collections.Counter()
        self._link: BrokerLinkState = "connecting"
        self._daemon_link: DaemonLinkState = "starting"
        self._since = time.time()
        self._last_problem: str | None = None
        self._said: set[str] = set()

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self._counters[name] += n

    def counters(self) -> dict[str, int]:
        with self.lock:
            return dict(self._counters)

    @property
    def link(self) -> BrokerLinkState:
        with self.lock:
            return self._link

    def set_link(self, link: BrokerLinkState, problem: str | None = None) -> None:
        """The broker link's state; a change is logged (a warning when it comes with a problem)."""
        with self.lock:
            if self._link == "failed" and link != "stopped":
                return  # a dead part stays reported as dead
            changed = link != self._link or problem != self._last_problem
            self._link = link
            if changed:
                self._since = time.time()
            if problem is not None:
                self._last_problem = problem
        if changed:
            level = logging.INFO if problem is None else logging.WARNING
            log.log(level, "mqtt: %s%s", link, f" ({problem})" if problem else "")

    def set_daemon_link(self, state: DaemonLinkState, problem: str | None = None) -> None:
        with self.lock:
            self._daemon_link = state
            if problem is not None:
                self._last_problem = problem
                self._since = time.time()

    def first_time(self, what: str) -> bool:
        """True once per ``what``: for news worth one log line, not one per message."""
        with self.lock:
            if what in self._said:
                return False
            self._said.add(what)
            return True

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "link": self._link,
                "daemon_link": self._daemon_link,
                "since": round(self._since, 3),
                "last_problem": self._last_problem,
                "counters": dict(self._counters),
            }


__all__ = ["BridgeState", "BrokerLinkState", "DaemonLinkState"]
