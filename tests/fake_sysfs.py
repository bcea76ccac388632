"""Sysfs-shaped trees for the tests: the demo device's own writer (edge_agentd.skills.demo).

As on a real system, ``class/thermal/thermal_zoneN``, ``bus/iio/devices/iio:deviceN`` and
``bus/w1/devices/28-...`` are relative symlinks into ``devices/``, so the readers' symlink handling
is exercised on every test.
"""

from __future__ import annotations

from edge_agentd.skills.demo import SysfsTree as FakeSysfs
from edge_agentd.skills.demo import scratchpad, w1_slave_text

__all__ = ["FakeSysfs", "scratchpad", "w1_slave_text"]
