"""A demo device: the sysfs tree of a Raspberry Pi with three sensors, for a machine that has none.

``edge-agent serve --demo`` writes this tree into a directory of its own and points the sensor
skills at it, so a newcomer on a laptop or VM can ask what a Pi would answer. It is the kernel's
layout, linked as the kernel links it (``class/thermal/thermal_zoneN``, ``bus/iio/devices/
iio:deviceN`` and ``bus/w1/devices/28-...`` are relative symlinks into ``devices/``), so the same
readers that run on a Pi read it. The tests and the benchmarks (scripts/bench/device.py) build
their fake trees with the same :class:`SysfsTree`: the fake Pi is written here only.

Every result a sensor skill gives from it says so (:data:`DEMO_NOTE` under the key ``demo``): an
answer drawn from the demo device is never taken for this machine's own reading.
"""

from __future__ import annotations

import os
from pathlib import Path

from edge_agentd.skills.onewire import crc8

DEMO_NOTE = "simulated by the demo device (edge-agent serve --demo), not read from this machine"
"""What each sensor result from the demo device carries under ``demo``."""

DEMO_CPU_MILLI_C = 48312
"""The demo CPU's thermal zone: 48.312 °C."""
DEMO_BME280 = {
    "in_temp_input": "22700",  # milli-°C: 22.7 °C
    "in_humidityrelative_input": "41500",  # milli-percent: 41.5 %RH
    "in_pressure_input": "101.28",  # kPa: 1012.8 hPa
}
DEMO_PROBE = "28-0316a2791bff"
DEMO_PROBE_MILLI_C = 12437  # a DS18B20 reads in 1/16 °C steps


def link(link_path: Path, target: Path) -> None:
    """A relative symlink at ``link_path`` to ``target``, as sysfs's class and bus links are."""
    link_path.parent.mkdir(parents=True, exist_ok=True)
    link_path.symlink_to(os.path.relpath(target, link_path.parent))


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


class SysfsTree:
    """Writes sysfs-shaped sensors under ``root``: thermal zones, IIO devices, 1-Wire probes."""

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
        link(self.root / "class" / "thermal" / f"thermal_zone{n}", device)
        return device

    def iio_device(self, n: int, name: str | None, files: dict[str, str]) -> Path:
        device = self.root / "devices" / "platform" / "i2c" / f"iio:device{n}"
        device.mkdir(parents=True)
        if name is not None:
            (device / "name").write_text(name + "\n")
        for file, text in files.items():
            (device / file).write_text(text + "\n")
        link(self.root / "bus" / "iio" / "devices" / f"iio:device{n}", device)
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
        link(self.root / "bus" / "w1" / "devices" / probe, device)
        return device


def write_demo_device(root: Path) -> Path:
    """The demo Pi under ``root`` (which must not exist yet, or be empty): its CPU's thermal zone,
    a BME280 (temperature, humidity, pressure) and a DS18B20 probe. Returns ``root``."""
    tree = SysfsTree(root)
    tree.thermal_zone(0, "cpu-thermal", str(DEMO_CPU_MILLI_C))
    tree.iio_device(0, "bme280", DEMO_BME280)
    tree.w1_probe(DEMO_PROBE, w1_slave=w1_slave_text(DEMO_PROBE_MILLI_C))
    return root


__all__ = [
    "DEMO_NOTE",
    "DEMO_PROBE",
    "SysfsTree",
    "link",
    "scratchpad",
    "w1_slave_text",
    "write_demo_device",
]
