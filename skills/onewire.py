"""1-Wire temperature probes (DS18B20 and kin): ``<sysfs>/bus/w1/devices/28-xxxxxxxxxxxx``.

The kernel's ``w1_slave`` file holds the probe's nine scratchpad bytes twice: the first line ends in
``crc=XX YES`` or ``crc=XX NO``, the second in ``t=<milli-°C>``. A NO line is rejected, and so is a
scratchpad whose CRC does not check out here, an all-zero one (a probe that did not answer) and
the DS18B20's power-on value of 85 °C (read before any conversion finished). Newer kernels also
offer a ``temperature`` file in milli-°C; it is used when ``w1_slave`` is absent.
"""

from __future__ import annotations

import functools
import re

from edge_agentd.skills.readings import Reading, Sensor, SensorError, parse_number, reading
from edge_agentd.skills.sysfs import Root, SysfsError

W1_DIR = ("bus", "w1", "devices")
# w1_therm family codes: DS18S20, DS1822, DS18B20, MAX31850, DS28EA00.
FAMILIES = {"10": "DS18S20", "22": "DS1822", "28": "DS18B20", "3b": "MAX31850", "42": "DS28EA00"}
_PROBE = re.compile(r"(10|22|28|3b|42)-[0-9a-f]{12}")
_CRC_LINE = re.compile(r"((?:[0-9a-fA-F]{2} ){9}): crc=([0-9a-fA-F]{2}) (YES|NO)")
_DATA_LINE = re.compile(r"((?:[0-9a-fA-F]{2} ){9})t=(-?[0-9]{1,7})")
_POWER_ON_RAW = 0x0550  # 85 °C in the DS18B20's 1/16 °C steps


def crc8(data: bytes) -> int:
    """Dallas/Maxim 1-Wire CRC-8 (polynomial x^8 + x^5 + x^4 + 1, reflected)."""
    crc = 0
    for byte in data:
        bits = byte
        for _ in range(8):
            mix = (crc ^ bits) & 1
            crc >>= 1
            if mix:
                crc ^= 0x8C
            bits >>= 1
    return crc


def parse_w1_slave(text: str, probe: str, where: str) -> float:
    """The temperature in °C from a ``w1_slave`` file's two lines; SensorError saying why not."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise SensorError(
            f"probe {probe}: {where} is incomplete ({len(lines)} line(s), expected 2)"
        )
    crc_line = _CRC_LINE.fullmatch(lines[0].strip())
    if crc_line is None:
        raise SensorError(f"probe {probe}: {where} has an unreadable first line {lines[0][:80]!r}")
    if crc_line.group(3) != "YES":
        raise SensorError(
            f"probe {probe}: CRC check failed (the kernel reports NO); reading rejected, try again"
        )
    scratchpad = bytes.fromhex(crc_line.group(1))
    if not any(scratchpad):
        raise SensorError(f"probe {probe}: it did not answer (all-zero scratchpad); check wiring")
    if crc8(scratchpad[:8]) != scratchpad[8]:
        raise SensorError(f"probe {probe}: scratchpad CRC does not match; reading rejected")
    data_line = _DATA_LINE.fullmatch(lines[1].strip())
    if data_line is None:
        raise SensorError(f"probe {probe}: {where} has an unreadable second line {lines[1][:80]!r}")
    if bytes.fromhex(data_line.group(1)) != scratchpad:
        raise SensorError(f"probe {probe}: the two lines of {where} disagree; reading rejected")
    if probe[:2] in ("28", "22") and scratchpad[0] | scratchpad[1] << 8 == _POWER_ON_RAW:
        raise SensorError(
            f"probe {probe}: reports its power-on value 85 °C, not a measurement; try again"
        )
    return int(data_line.group(2)) / 1000.0


def read_probe(root: Root, probe: str) -> list[Reading]:
    """A probe's temperature in °C, CRC-checked."""
    base = f"{root.path}/bus/w1/devices/{probe}"
    try:
        text = root.read_text(*W1_DIR, probe, "w1_slave")
        celsius = parse_w1_slave(text, probe, f"{base}/w1_slave")
        where = f"{base}/w1_slave"
    except SysfsError as exc:
        if not exc.missing:
            raise SensorError(f"probe {probe} could not be read: {exc}") from exc
        if not root.exists(*W1_DIR, probe):
            raise SensorError(f"probe {probe} disappeared: {exc}") from exc
        where = f"{base}/temperature"
        try:
            text = root.read_text(*W1_DIR, probe, "temperature")
        except SysfsError as exc2:
            raise SensorError(f"probe {probe} could not be read: {exc2}") from exc2
        celsius = parse_number(text, where) / 1000.0
    return [reading("temperature", celsius, where)]


def discover_probes(root: Root) -> list[Sensor]:
    """Every temperature probe on the 1-Wire bus, named by its id (e.g. ``28-0316a2796eff``)."""
    return [
        Sensor(
            name=probe,
            kind="w1",
            label=FAMILIES[probe[:2]],
            quantities=("temperature",),
            read=functools.partial(read_probe, root, probe),
            device_id=probe,
        )
        for probe in root.list_dir(*W1_DIR)
        if _PROBE.fullmatch(probe)
    ]


__all__ = ["FAMILIES", "W1_DIR", "crc8", "discover_probes", "parse_w1_slave", "read_probe"]
