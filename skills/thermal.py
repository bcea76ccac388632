"""Thermal zones: ``<sysfs>/class/thermal/thermal_zoneN``, whose ``temp`` is in milli-°C."""

from __future__ import annotations

import functools
import re

from edge_agentd.skills.readings import Reading, Sensor, SensorError, natural_key, parse_number
from edge_agentd.skills.readings import reading as make_reading
from edge_agentd.skills.sysfs import Root, SysfsError

THERMAL_DIR = ("class", "thermal")
_ZONE = re.compile(r"thermal_zone[0-9]+")
# Zone types that name the CPU or the SoC it sits on (Raspberry Pi: "cpu-thermal").
_CPU_TYPES = re.compile(r"cpu|soc|x86_pkg_temp|coretemp|k10temp|bcm2835|package", re.IGNORECASE)


def read_zone(root: Root, zone: str) -> list[Reading]:
    """The zone's temperature in °C."""
    where = f"{root.path}/class/thermal/{zone}/temp"
    try:
        text = root.read_text(*THERMAL_DIR, zone, "temp")
    except SysfsError as exc:
        if exc.missing and not root.exists(*THERMAL_DIR, zone):
            raise SensorError(f"thermal zone {zone} disappeared: {exc}") from exc
        raise SensorError(f"thermal zone {zone} could not be read: {exc}") from exc
    return [make_reading("temperature", parse_number(text, where) / 1000.0, where)]


def zone_type(root: Root, zone: str) -> str:
    try:
        return root.read_text(*THERMAL_DIR, zone, "type")[:64] or "unknown"
    except SysfsError:
        return "unknown"


def discover_zones(root: Root) -> list[Sensor]:
    """Every thermal zone, in zone order; named by its directory, labelled by its type."""
    zones = [z for z in root.list_dir(*THERMAL_DIR) if _ZONE.fullmatch(z)]
    return [
        Sensor(
            name=zone,
            kind="thermal_zone",
            label=zone_type(root, zone),
            quantities=("temperature",),
            read=functools.partial(read_zone, root, zone),
        )
        for zone in sorted(zones, key=natural_key)
    ]


def cpu_zone(zones: list[Sensor]) -> Sensor | None:
    """The zone whose type names the CPU, else the first zone, else None."""
    for zone in zones:
        if _CPU_TYPES.search(zone.label):
            return zone
    return zones[0] if zones else None


__all__ = ["THERMAL_DIR", "cpu_zone", "discover_zones", "read_zone", "zone_type"]
