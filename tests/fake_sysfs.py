"""Builds sysfs-shaped trees in a temporary directory, linked the way the kernel links them.

As on a real system, ``class/thermal/thermal_zoneN``, ``bus/iio/devices/iio:deviceN`` and
``bus/w1/devices/28-...`` are relative symlinks into ``devices/``, so the readers' symlink handling
is exercised on every test.
"""

from __future__ import annotations

import os
from pathlib import Path

from edge_agentd.skills.onewire import crc8


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))


class FakeSysfs:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def thermal_zone(
        self, n: int, zone_type: str | None = "cpu-thermal", temp: str | None = "48312"
    ) -> Path:
        device = self.root / "devices" / "virtual" / "thermal" / f"thermal_zone{n}"
        device.mkdir(parents=True)
        if zone_type is not None:
            (device / "type").write_text(zone_type + "\n")
        if temp is not None:
            (device / "temp").write_text(temp + "\n")
        _link(self.root / "class" / "thermal" / f"thermal_zone{n}", device)
        return device

    def iio_device(self, n: int, name: str | None, files: dict[str, str]) -> Path:
        device = self.root / "devices" / "platform" / "i2c" / f"iio:device{n}"
        device.mkdir(parents=True)
        if name is not None:
            (device / "name").write_text(name + "\n")
        for file, text in files.items():
            (device / file).write_text(text + "\n")
        _link(self.root / "bus" / "iio" / "devices" / f"iio:device{n}", device)
        return device

    def w1_probe(
        self, probe: str, w1_slave: str | None = None, temperature: str | None = None
    ) -> Path:
        device = self.root / "devices" / "w1_bus_master1" / probe
        device.mkdir(parents=True)
        if w1_slave is not None:
            (device / "w1_slave").write_text(w1_slave)
        if temperature is not None:
            (device / "temperature").write_text(temperature + "\n")
        _link(self.root / "bus" / "w1" / "devices" / probe, device)
        return device


def scratchpad(milli_celsius: int) -> bytes:
    """A DS18B20 scratchpad holding ``milli_celsius`` (in its 1/16 °C steps), with a valid CRC."""
    raw = round(milli_celsius / 62.5) & 0xFFFF
    body = bytes([raw & 0xFF, raw >> 8, 0x4B, 0x46, 0x7F, 0xFF, 0x0C, 0x10])
    return body + bytes([crc8(body)])


def w1_slave_text(milli_celsius: int, verdict: str = "YES", pad: bytes | None = None) -> str:
    """The two lines the kernel's w1_therm driver writes for one conversion."""
    pad = scratchpad(milli_celsius) if pad is None else pad
    hexes = "".join(f"{b:02x} " for b in pad)
    raw = int.from_bytes(pad[:2], "little", signed=True)
    return f"{hexes}: crc={pad[8]:02x} {verdict}\n{hexes}t={int(raw * 62.5)}\n"
