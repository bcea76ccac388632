"""The sensor skills: ``cpu_temperature``, ``list_sensors``, ``read_sensor`` and
``compare_sensors``.

Sensors are found afresh on every call (a probe may be plugged in or pulled out at any time), from
thermal zones, IIO devices and 1-Wire probes under one sysfs root. The model names a sensor only by
a name from that list; its text is looked up, never joined into a path.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from edge_agentd.skills.iio import discover_devices
from edge_agentd.skills.onewire import discover_probes
from edge_agentd.skills.readings import UNITS, Sensor, SensorError
from edge_agentd.skills.sysfs import Root, SysfsError
from edge_agentd.skills.thermal import cpu_zone, discover_zones

KIND_WORDS = {"thermal_zone": "thermal zone", "iio": "sensor chip", "w1": "1-Wire probe"}
"""How each kind of sensor is called in words, for the model."""
_SHOWN_NAME_CHARS = 60
MAX_COMPARE_CALLS = 15
"""The most pairs ``compare_sensors`` lists as ready: each is a candidate the question is
scored against, and a house of 1-Wire probes has many pairs."""


class Sensors:
    """The sensors under one sysfs root, and the skills that read them.

    ``demo_note``, for the demo device's tree, goes into every result under ``demo``: an answer
    drawn from it must never pass for this machine's own reading."""

    def __init__(self, root: Root, demo_note: str | None = None) -> None:
        self.root = root
        self.demo_note = demo_note

    def _said(self, result: dict[str, Any]) -> dict[str, Any]:
        """``result``, marked as the demo device's when it is."""
        return result if self.demo_note is None else {**result, "demo": self.demo_note}

    def discover(self) -> list[Sensor]:
        """Every sensor found, with names made unique (a second ``bme280`` is ``bme280_2``)."""
        found: list[Sensor] = []
        taken: set[str] = set()
        for family in (discover_zones, discover_devices, discover_probes):
            try:
                sensors = family(self.root)
            except SysfsError as exc:
                raise SensorError(f"cannot look for sensors: {exc}") from exc
            for sensor in sensors:
                name, n = sensor.name, 1
                while name in taken:
                    n += 1
                    name = f"{sensor.name}_{n}"
                taken.add(name)
                found.append(sensor if name == sensor.name else _renamed(sensor, name))
        return found

    def _where(self) -> str:
        return (
            f"{self.root.path}/class/thermal, {self.root.path}/bus/iio/devices and "
            f"{self.root.path}/bus/w1/devices"
        )

    def sensor_calls(self) -> list[tuple[dict[str, str], str]]:
        """The calls of ``read_sensor`` worth making now: one per sensor present and quantity it
        measures, each with what it gets (the skill's ready calls)."""
        return [
            (
                {"name": sensor.name, "quantity": quantity},
                f"the {quantity} in {UNITS[quantity]} from the {_called(sensor)}",
            )
            for sensor in self.discover()
            for quantity in sensor.quantities
        ]

    def _present(self) -> tuple[list[str], list[str]]:
        """The names of the sensors present and the quantities they measure."""
        sensors = self.discover()
        quantities = dict.fromkeys(q for sensor in sensors for q in sensor.quantities)
        return [sensor.name for sensor in sensors], list(quantities)

    # The skills' arguments' choices: what each may be asked now.

    def read_choices(self) -> dict[str, list[str]]:
        names, quantities = self._present()
        return {"name": names, "quantity": quantities}

    def compare_choices(self) -> dict[str, list[str]]:
        names, quantities = self._present()
        return {"first": names, "second": names, "quantity": quantities}

    def list_choices(self) -> dict[str, list[str]]:
        return {"quantity": self._present()[1]}

    def list_calls(self) -> list[tuple[dict[str, str], str]]:
        """The calls of ``list_sensors`` worth making now: the whole list, and one per quantity
        some sensor measures (the skill's ready calls)."""
        quantities = dict.fromkeys(q for sensor in self.discover() for q in sensor.quantities)
        every: tuple[dict[str, str], str] = ({}, "every sensor on this device, and how many")
        return [every] + [
            ({"quantity": quantity}, f"the sensors that measure {quantity}, and how many")
            for quantity in quantities
        ]

    def compare_calls(self) -> list[tuple[dict[str, str], str]]:
        """The calls of ``compare_sensors`` worth making now: each two sensors that measure the
        same quantity, with what the call gets (the skill's ready calls)."""
        found = self.discover()
        calls = []
        for quantity in dict.fromkeys(q for sensor in found for q in sensor.quantities):
            measuring = [sensor for sensor in found if quantity in sensor.quantities]
            for i, first in enumerate(measuring):
                for second in measuring[i + 1 :]:
                    what = (
                        f"which of the {_called(first)} and the {_called(second)} reads the "
                        f"higher {quantity}, and by how many {UNITS[quantity]}"
                    )
                    arguments = {"first": first.name, "second": second.name, "quantity": quantity}
                    calls.append((arguments, what))
        return calls[:MAX_COMPARE_CALLS]

    # -- the skills ---------------------------------------------------------------------------

    def cpu_temperature(self) -> dict[str, Any]:
        """The CPU temperature in °C, from the CPU's thermal zone."""
        try:
            zone = cpu_zone(discover_zones(self.root))
        except SysfsError as exc:
            raise SensorError(f"cannot look for thermal zones: {exc}") from exc
        if zone is None:
            raise SensorError(
                f"no thermal zone was found under {self.root.path}/class/thermal, so this "
                "device reports no CPU temperature"
            )
        (value,) = zone.read()
        return self._said({"sensor": zone.name, "label": zone.label, **value.as_dict()})

    def list_sensors(self, quantity: str | None = None) -> dict[str, Any]:
        """Every sensor on this device, or with quantity those that measure it: its name (to pass
        to read_sensor), kind and units, and how many there are."""
        found = self.discover()
        if quantity is not None:
            quantity = _known_quantity(quantity)
        measuring = [s for s in found if quantity is None or quantity in s.quantities]
        # How many is said outright: a small model cannot count the list.
        result: dict[str, Any] = {"count": len(measuring)}
        if quantity is not None:
            result["quantity"] = quantity
        result["sensors"] = [s.describe() for s in measuring]
        if not found:
            result["note"] = f"no sensors were found (looked in {self._where()})"
        return self._said(result)

    def read_sensor(self, name: str, quantity: str | None = None) -> dict[str, Any]:
        """Current value of one sensor, with units; name is a name given by list_sensors, and
        quantity (optional) one of the quantities it measures."""
        sensors = self.discover()
        for sensor in sensors:
            if sensor.name == name:
                if quantity is not None and quantity not in sensor.quantities:
                    raise SensorError(
                        f"{sensor.name} does not measure {quantity[:_SHOWN_NAME_CHARS]!r}; it "
                        f"measures {', '.join(sensor.quantities)}"
                    )
                readings = [r for r in sensor.read() if quantity in (None, r.quantity)]
                # A 1-Wire probe's name is its id: said as such, "which ID does it have?" is
                # asked about a word the result holds (docs/skills.md).
                found = {"id": sensor.device_id} if sensor.device_id else {}
                return self._said(
                    {
                        "sensor": sensor.name,
                        **found,
                        "label": sensor.label,
                        "readings": [r.as_dict() for r in readings],
                    }
                )
        raise _unknown(name, sensors)

    def compare_sensors(
        self, first: str, second: str, quantity: str = "temperature"
    ) -> dict[str, Any]:
        """Which of two sensors reads the higher quantity, and by how much: names as list_sensors
        gives them, quantity one both measure."""
        if first == second:
            raise SensorError("compare two different sensors: both names are the same")
        sensors = self.discover()
        taken = []
        for name in (first, second):
            sensor = next((s for s in sensors if s.name == name), None)
            if sensor is None:
                raise _unknown(name, sensors)
            if quantity not in sensor.quantities:
                raise SensorError(
                    f"{sensor.name} does not measure {quantity[:_SHOWN_NAME_CHARS]!r}; it "
                    f"measures {', '.join(sensor.quantities)}"
                )
            reading = next((r for r in sensor.read() if r.quantity == quantity), None)
            if reading is None:
                raise SensorError(f"{sensor.name} gave no {quantity} reading")
            taken.append((sensor, reading))
        (one, a), (other, b) = taken
        # What people ask of two readings is said outright: no model has to subtract.
        result: dict[str, Any] = {
            "quantity": quantity,
            "readings": [
                {"sensor": s.name, "label": s.label, "value": r.value, "unit": r.unit}
                for s, r in taken
            ],
            "difference": {"value": round(abs(a.value - b.value), 3), "unit": a.unit},
        }
        if a.value != b.value:
            higher, lower = (one, other) if a.value > b.value else (other, one)
            result["higher"], result["lower"] = higher.name, lower.name
        return self._said(result)


def _called(sensor: Sensor) -> str:
    """A sensor in words: "sensor chip bme280 (iio:device0)"."""
    return f"{KIND_WORDS.get(sensor.kind, sensor.kind)} {sensor.label}"


def _known_quantity(asked: str) -> str:
    """``asked`` as a quantity a sensor can measure ("Humidity", "temperatures" too); a
    SensorError naming the quantities otherwise: a count of 0 for a word no sensor could
    measure would read as "none here"."""
    plain = asked.strip().casefold()
    for quantity in UNITS:
        if plain in (quantity, f"{quantity}s"):
            return quantity
    shown = asked[:_SHOWN_NAME_CHARS]
    raise SensorError(f"no quantity named {shown!r}; the quantities are: {', '.join(UNITS)}")


def _unknown(name: str, sensors: list[Sensor]) -> SensorError:
    """The error for a name no sensor has, listing those there are."""
    shown = name if len(name) <= _SHOWN_NAME_CHARS else name[:_SHOWN_NAME_CHARS] + "…"
    if not sensors:
        return SensorError(f"no sensor named {shown!r}: no sensors were found on this device")
    known = ", ".join(s.name for s in sensors)
    return SensorError(f"no sensor named {shown!r}; the sensors are: {known}")


def _renamed(sensor: Sensor, name: str) -> Sensor:
    return dataclasses.replace(sensor, name=name)


__all__ = ["Sensors"]
