"""When a schedule trigger is due: ``every`` in elapsed time, ``at`` in the local time zone.

``every = "15m"`` counts real seconds, so a DST change neither stretches nor shortens it. ``at``
times are local wall-clock times that follow the zone's DST rules (zoneinfo): on the night the
clock springs forward, a time in the skipped hour runs when the clock would have shown it (02:30
runs at 03:30 the new time); on the night it falls back, a time in the repeated hour runs once, at
its first occurrence. A time missed by more than :data:`LATE_GRACE_S` (the daemon was down, or
the clock jumped ahead when NTP set it) is not run late: the next one is waited for.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

log = logging.getLogger(__name__)

LATE_GRACE_S = 120.0
"""How late an ``at`` time (or an ``every`` tick) may still run."""


class Clock(Protocol):
    """Wall-clock seconds since the epoch, and the local time zone; tests pass their own."""

    def now(self) -> float: ...

    @property
    def zone(self) -> dt.tzinfo: ...


def local_zone() -> dt.tzinfo:
    """The system's time zone with its DST rules: ``$TZ``, else ``/etc/localtime``."""
    name = os.environ.get("TZ", "").lstrip(":")
    candidates = [name] if name else []
    try:
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for candidate in candidates:
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    try:
        with Path("/etc/localtime").open("rb") as file:
            return ZoneInfo.from_file(file, key="localtime")
    except (OSError, ValueError):
        log.warning("no local time zone found; `at` times are read as UTC")
        return dt.UTC


class SystemClock:
    """The real clock; the zone is read once, at start."""

    def __init__(self) -> None:
        self._zone = local_zone()

    def now(self) -> float:
        return time.time()

    @property
    def zone(self) -> dt.tzinfo:
        return self._zone


def next_at(times: Sequence[tuple[int, int]], after: float, zone: dt.tzinfo) -> float:
    """The first of ``times`` (local hour, minute) strictly after the instant ``after``.

    Each calendar day gives each time once: ``fold=0`` picks the first of a repeated hour, and
    a skipped one maps to the instant the clock would have shown it.
    """
    day = dt.datetime.fromtimestamp(after, zone).date() - dt.timedelta(days=1)
    best: float | None = None
    for offset in range(4):
        date = day + dt.timedelta(days=offset)
        for hour, minute in times:
            local = dt.datetime(date.year, date.month, date.day, hour, minute, tzinfo=zone)
            instant = local.timestamp()
            if instant > after and (best is None or instant < best):
                best = instant
        if best is not None:
            return best
    raise RuntimeError("no time of day within four days")  # times is never empty


def next_every(interval_s: float, last: float | None, now: float) -> float:
    """The next tick of an ``every`` trigger: one interval after the last, else from now; a
    tick missed by more than the grace (or a clock set back) starts over from now."""
    if last is None or last > now:
        return now + interval_s
    due = last + interval_s
    return due if due >= now - LATE_GRACE_S else now + interval_s


def describe(instant: float | None, zone: dt.tzinfo) -> str | None:
    """An instant as local ISO 8601 text with its offset (``2026-03-29T07:30:00+02:00``)."""
    if instant is None:
        return None
    return dt.datetime.fromtimestamp(instant, zone).isoformat(timespec="seconds")


__all__ = [
    "LATE_GRACE_S",
    "Clock",
    "SystemClock",
    "describe",
    "local_zone",
    "next_at",
    "next_every",
]
