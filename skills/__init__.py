"""The built-in skills: sensors, system state, the clock and (when enabled) the weather.

Nothing registers on import. :func:`register_builtins` binds each family to its configured roots
and adds its skills to a registry with the source ``builtin``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from edge_agentd.agent.registry import DEFAULT_TIMEOUT_S, Registry, SkillOptions
from edge_agentd.skills.clock import Clock
from edge_agentd.skills.demo import DEMO_NOTE
from edge_agentd.skills.sensors import Sensors
from edge_agentd.skills.sysfs import (
    DEFAULT_PROC_ROOT,
    DEFAULT_SYSFS_ROOT,
    PROC_ROOT_ENV,
    SYSFS_ROOT_ENV,
    Root,
    resolve_root,
)
from edge_agentd.skills.system import PROC_MAX_BYTES, System
from edge_agentd.skills.weather import OpenMeteo, Weather

BUILTIN_SOURCE = "builtin"
BUILTIN_NAMES = (
    "cpu_temperature",
    "list_sensors",
    "read_sensor",
    "compare_sensors",
    "system_status",
    "now",
    "resolve_date",
    "weather",
)
# Two HTTP requests, each with its own timeout, need more than the default 2 s.
WEATHER_TIMEOUT_S = 10.0

# Questions each skill answers, in a user's words, as any skill may declare them: a small model
# picks a skill far better by how likely a question is after the skill's description and these.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "cpu_temperature": ("Is the processor running hot?", "What temperature is the chip at?"),
    "list_sensors": ("What sensors are connected?", "What can you measure here?"),
    "read_sensor": ("What does the outdoor probe read?", "How damp is the air?"),
    "compare_sensors": (
        "Which is colder, the attic probe or the cellar probe?",
        "How much warmer is it indoors than outdoors?",
    ),
    "system_status": (
        "Is the SD card running out of space?",
        "How much RAM is in use?",
        "How busy is the machine?",
        "When was the last reboot?",
    ),
    "now": ("What's the date?", "Is it the weekend yet?"),
    "resolve_date": ("What date is next Tuesday?", "Which weekday is 3/1?"),
    "weather": ("Will it rain in Oslo tomorrow?",),
}


def register_builtins(
    registry: Registry,
    *,
    sysfs_root: str | os.PathLike[str] | None = None,
    weather: bool | OpenMeteo = False,
    timeouts: Mapping[str, float] | None = None,
    proc_root: str | os.PathLike[str] | None = None,
    disk_path: str | os.PathLike[str] = "/",
    clock: Clock | None = None,
    demo: bool = False,
) -> None:
    """Add the built-in skills to ``registry``.

    ``sysfs_root`` defaults to ``$EDGE_AGENT_SYSFS_ROOT``, else ``/sys``; ``proc_root`` to
    ``$EDGE_AGENT_PROC_ROOT``, else ``/proc``. ``weather`` is off by default because it sends the
    place asked about off the device: pass True, or an :class:`OpenMeteo` to point it elsewhere.
    ``timeouts`` maps skill names to seconds, replacing the 2 s default.
    Raises ``SkillNameClash`` when a built-in name is already taken, and ``ValueError`` for a
    timeout naming no built-in skill. ``demo`` says ``sysfs_root`` is the demo device's tree
    (:mod:`edge_agentd.skills.demo`): each sensor result then says it is simulated.
    """
    if not isinstance(registry, Registry):
        raise TypeError(f"register_builtins needs a Registry, not {type(registry).__name__}")
    timeouts = dict(timeouts or {})
    unknown = sorted(set(timeouts) - set(BUILTIN_NAMES))
    if unknown:
        raise ValueError(f"timeouts name no built-in skill: {', '.join(unknown)}")
    sensors = Sensors(
        Root(resolve_root(sysfs_root, SYSFS_ROOT_ENV, DEFAULT_SYSFS_ROOT)),
        demo_note=DEMO_NOTE if demo else None,
    )
    system = System(
        Root(resolve_root(proc_root, PROC_ROOT_ENV, DEFAULT_PROC_ROOT), PROC_MAX_BYTES),
        disk_path,
    )
    clock = clock or Clock()
    skills: list[tuple[str, Callable[..., Any]]] = [
        ("cpu_temperature", sensors.cpu_temperature),
        ("list_sensors", sensors.list_sensors),
        ("read_sensor", sensors.read_sensor),
        ("compare_sensors", sensors.compare_sensors),
        ("system_status", system.system_status),
        ("now", clock.now),
        ("resolve_date", clock.resolve_date),
    ]
    if weather:
        service = weather if isinstance(weather, OpenMeteo) else OpenMeteo()
        skills.append(("weather", Weather(service, clock).weather))
    ready_calls = {
        "list_sensors": sensors.list_calls,
        "read_sensor": sensors.sensor_calls,
        "compare_sensors": sensors.compare_calls,
    }
    # Their names and quantities as the device has them now: shown in the catalogue, held by
    # the grammar and checked before a call (a sensor that is not there cannot be asked for).
    choices = {
        "list_sensors": sensors.list_choices,
        "read_sensor": sensors.read_choices,
        "compare_sensors": sensors.compare_choices,
    }
    added: list[str] = []
    try:
        for name, function in skills:
            default = WEATHER_TIMEOUT_S if name == "weather" else DEFAULT_TIMEOUT_S
            options = SkillOptions(
                name=name,
                timeout=timeouts.get(name, default),
                source=BUILTIN_SOURCE,
                examples=EXAMPLES.get(name, ()),
                calls=ready_calls.get(name),
                choices=choices.get(name),
                # It finds the date inside a question: "the day after tomorrow" whole, where
                # a phrase of it ("tomorrow") means another day.
                reads_sentences=name == "resolve_date",
            )
            registry.add(function, options)
            added.append(name)
    except BaseException:
        for name in added:  # all or nothing: no half set of built-ins
            registry.remove(name)
        raise


__all__ = ["BUILTIN_NAMES", "BUILTIN_SOURCE", "register_builtins"]
