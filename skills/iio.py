"""Industrial I/O devices, such as a BME280 on I2C: ``<sysfs>/bus/iio/devices/iio:deviceN``.

Per the kernel's IIO ABI a channel is read from ``<channel>_input`` when the driver scales it, else
as ``(<channel>_raw + offset) * scale``, where ``offset`` and ``scale`` come from the channel's own
``_offset``/``_scale`` files or from the ones its type shares. The units after scaling are
milli-°C for temperature, milli-percent for relative humidity, kilopascal for pressure and lux for
illuminance; readings are converted to °C, %RH, hPa and lx.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from edge_agentd.skills.readings import (
    Reading,
    Sensor,
    SensorError,
    clean_name,
    natural_key,
    parse_number,
    reading,
)
from edge_agentd.skills.sysfs import Root, SysfsError

IIO_DIR = ("bus", "iio", "devices")
_DEVICE = re.compile(r"iio:device[0-9]+")
_CHANNEL = re.compile(
    r"in_(temp|humidityrelative|pressure|illuminance)([0-9]*)((?:_[a-z]+)?)_(input|raw)"
)

# IIO channel type -> (our quantity, factor from the ABI's unit to ours)
_TYPES = {
    "temp": ("temperature", 0.001),
    "humidityrelative": ("humidity", 0.001),
    "pressure": ("pressure", 10.0),
    "illuminance": ("illuminance", 1.0),
}


@dataclasses.dataclass(frozen=True)
class Channel:
    """One measurement a device offers, e.g. ``in_temp`` read through ``in_temp_input``."""

    prefix: str
    iio_type: str
    scaled: bool

    @property
    def quantity(self) -> str:
        return _TYPES[self.iio_type][0]


def channels(files: list[str]) -> list[Channel]:
    """The channels a device's file names offer, preferring ``_input`` over ``_raw``."""
    found: dict[str, Channel] = {}
    for file in files:
        match = _CHANNEL.fullmatch(file)
        if match is None:
            continue
        iio_type, _index, _modifier, how = match.groups()
        prefix = file[: -len(how) - 1]
        if how == "input" or prefix not in found:
            found[prefix] = Channel(prefix, iio_type, scaled=how == "input")
    return [found[p] for p in sorted(found, key=natural_key)]


def _optional_number(root: Root, device: str, files: tuple[str, ...], default: float) -> float:
    """The first of ``files`` that exists, as a number; ``default`` when none does."""
    for file in files:
        try:
            text = root.read_text(*IIO_DIR, device, file)
        except SysfsError as exc:
            if exc.missing:
                continue
            raise SensorError(f"IIO device {device}: {exc}") from exc
        return parse_number(text, f"{root.path}/bus/iio/devices/{device}/{file}")
    return default


def read_channel(root: Root, device: str, channel: Channel) -> Reading:
    quantity, factor = _TYPES[channel.iio_type]
    suffix = "input" if channel.scaled else "raw"
    file = f"{channel.prefix}_{suffix}"
    where = f"{root.path}/bus/iio/devices/{device}/{file}"
    try:
        text = root.read_text(*IIO_DIR, device, file)
    except SysfsError as exc:
        if exc.missing and not root.exists(*IIO_DIR, device):
            raise SensorError(f"IIO device {device} disappeared: {exc}") from exc
        raise SensorError(f"IIO device {device} could not be read: {exc}") from exc
    value = parse_number(text, where)
    if not channel.scaled:
        shared = f"in_{channel.iio_type}"
        offset = _optional_number(
            root, device, (f"{channel.prefix}_offset", f"{shared}_offset"), 0.0
        )
        scale = _optional_number(root, device, (f"{channel.prefix}_scale", f"{shared}_scale"), 1.0)
        value = (value + offset) * scale
    return reading(quantity, value * factor, where, channel=channel.prefix)


def read_device(root: Root, device: str, offered: tuple[Channel, ...]) -> list[Reading]:
    return [read_channel(root, device, channel) for channel in offered]


def discover_devices(root: Root) -> list[Sensor]:
    """Every IIO device with at least one channel we understand, named by its ``name`` file."""
    sensors = []
    for device in sorted(root.list_dir(*IIO_DIR), key=natural_key):
        if not _DEVICE.fullmatch(device):
            continue
        try:
            offered = tuple(channels(root.list_dir(*IIO_DIR, device)))
        except SysfsError:
            continue
        if not offered:
            continue
        try:
            label = clean_name(root.read_text(*IIO_DIR, device, "name"), device.replace(":", "_"))
        except SysfsError:
            label = device.replace(":", "_")
        quantities = tuple(dict.fromkeys(c.quantity for c in offered))
        sensors.append(
            Sensor(
                name=label,
                kind="iio",
                label=f"{label} ({device})",
                quantities=quantities,
                read=functools.partial(read_device, root, device, offered),
            )
        )
    return sensors


__all__ = ["IIO_DIR", "Channel", "channels", "discover_devices", "read_channel", "read_device"]
