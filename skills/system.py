"""The ``system_status`` skill: load, memory, disk and uptime, from ``/proc`` and ``statvfs``.

Each part is read on its own, so one unreadable file costs only its part of the answer, which then
says what went wrong.
"""

from __future__ import annotations

import os
from typing import Any

from edge_agentd.skills.readings import SensorError, parse_number
from edge_agentd.skills.sysfs import Root, SysfsError

PROC_MAX_BYTES = 16384  # /proc/meminfo runs past one page on some kernels
_MIB = 1024 * 1024
_GIB = 1024 * _MIB


class System:
    """System state read under a proc root, with disk usage of one path."""

    def __init__(self, proc: Root, disk_path: str | os.PathLike[str] = "/") -> None:
        self.proc = proc
        self.disk_path = os.fspath(disk_path)

    def load_average(self) -> dict[str, float]:
        fields = self.proc.read_text("loadavg").split()
        if len(fields) < 3:
            raise SensorError(f"{self.proc.path}/loadavg holds too few fields")
        where = f"{self.proc.path}/loadavg"
        one, five, fifteen = (round(parse_number(f, where), 2) for f in fields[:3])
        return {"1min": one, "5min": five, "15min": fifteen}

    def memory(self) -> dict[str, float]:
        where = f"{self.proc.path}/meminfo"
        kib: dict[str, float] = {}
        for line in self.proc.read_text("meminfo").splitlines():
            key, _, rest = line.partition(":")
            if key in ("MemTotal", "MemAvailable", "MemFree", "SwapTotal", "SwapFree"):
                kib[key] = parse_number(rest.split()[0] if rest.split() else "", where)
        if "MemTotal" not in kib or kib["MemTotal"] <= 0:
            raise SensorError(f"{where} has no MemTotal")
        available = kib.get("MemAvailable", kib.get("MemFree"))
        if available is None:
            raise SensorError(f"{where} has neither MemAvailable nor MemFree")
        total = kib["MemTotal"]
        out = {
            "total_mib": round(total / 1024, 1),
            "available_mib": round(available / 1024, 1),
            "used_percent": round(100 * (total - available) / total, 1),
        }
        if kib.get("SwapTotal"):
            out["swap_used_mib"] = round((kib["SwapTotal"] - kib.get("SwapFree", 0.0)) / 1024, 1)
        return out

    def disk(self) -> dict[str, Any]:
        try:
            st = os.statvfs(self.disk_path)
        except OSError as exc:
            raise SensorError(f"cannot stat {self.disk_path}: {exc.strerror or exc}") from exc
        total = st.f_blocks * st.f_frsize
        free = st.f_bavail * st.f_frsize
        used = total - st.f_bfree * st.f_frsize
        return {
            "path": self.disk_path,
            "total_gib": round(total / _GIB, 2),
            "free_gib": round(free / _GIB, 2),
            # As df counts it: used over what non-root users could ever have.
            "used_percent": round(100 * used / (used + free), 1) if used + free else 0.0,
        }

    def uptime(self) -> dict[str, Any]:
        fields = self.proc.read_text("uptime").split()
        seconds = parse_number(fields[0] if fields else "", f"{self.proc.path}/uptime")
        if seconds < 0:
            raise SensorError(f"{self.proc.path}/uptime is negative")
        # In the units people ask in, so that no model has to convert (docs/skills.md).
        return {
            "seconds": round(seconds),
            "hours": round(seconds / 3600, 1),
            "days": round(seconds / 86400, 2),
            "text": _duration(seconds),
        }

    def system_status(self) -> dict[str, Any]:
        """Load averages, memory, disk usage of / and uptime of this device."""
        status: dict[str, Any] = {}
        parts = (
            ("load_average", self.load_average),
            ("memory", self.memory),
            ("disk", self.disk),
            ("uptime", self.uptime),
        )
        for key, part in parts:
            try:
                status[key] = part()
            except (SensorError, SysfsError) as exc:
                status[key] = {"error": str(exc)}
        return status


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days} d"] if days else []
    if days or hours:
        parts.append(f"{hours} h")
    parts.append(f"{minutes} min")
    return " ".join(parts)


__all__ = ["PROC_MAX_BYTES", "System"]
