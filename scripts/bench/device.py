"""The fake Raspberry Pi the benchmarks ask about: the demo device's sysfs
(``edge_agentd.skills.demo``, the one writer of it, which ``edge-agent serve --demo`` and the tests
use too) and a /proc of the benchmarks' own, so that every figure of the system skills is fixed.

Its values are the demo's: the CPU's zone at 48.312 °C, a BME280 at 22.7 °C, 41.5 %RH and
1012.8 hPa, and a DS18B20 probe at 12.437 °C.
"""

from __future__ import annotations

from pathlib import Path

from edge_agentd.skills.demo import (
    DEMO_CPU_MILLI_C,
    DEMO_PROBE,
    SysfsTree,
    write_demo_device,
)

PROBE = DEMO_PROBE
"""The demo's DS18B20 probe, as the questions name it."""

LOADAVG = "0.42 0.37 0.31 1/187 4242\n"
MEMINFO = (
    "MemTotal:        3884328 kB\n"
    "MemFree:          512000 kB\n"
    "MemAvailable:    2423821 kB\n"  # 2367.0 MiB available, 37.6 % used
    "Buffers:           81232 kB\n"
)
UPTIME = "458000.42 901234.10\n"  # 5 d 7 h 13 min


def write_proc(proc: Path) -> Path:
    """The three files of /proc the system skills read, under ``proc``. Returns ``proc``."""
    proc.mkdir(parents=True)
    (proc / "loadavg").write_text(LOADAVG)
    (proc / "meminfo").write_text(MEMINFO)
    (proc / "uptime").write_text(UPTIME)
    return proc


def build_device(root: Path) -> tuple[Path, Path]:
    """The fake Pi's sysfs and /proc under ``root``: ``root/sys`` and ``root/proc``."""
    return write_demo_device(root / "sys"), write_proc(root / "proc")


def cpu_only(sysfs: Path) -> Path:
    """A sysfs with the Pi's CPU zone and no sensor besides. Returns ``sysfs``."""
    SysfsTree(sysfs).thermal_zone(0, "cpu-thermal", str(DEMO_CPU_MILLI_C))
    return sysfs


__all__ = ["LOADAVG", "MEMINFO", "PROBE", "UPTIME", "build_device", "cpu_only", "write_proc"]
