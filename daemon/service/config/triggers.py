"""``[[triggers]]`` in the config: what starts each trigger and what it runs, checked.

Parsed as part of :class:`~edge_agentd.service.config.settings.Settings` (so a mistake is a
ConfigError with the file, the line and the key); :func:`trigger_lines` tells config.py where each
trigger's keys are, and :func:`check_triggers` holds them to the registry and the workflows once
both exist.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from edge_agentd.agent.registry import Registry

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
MAX_DURATION_S = 7 * 24 * 3600.0
DEFAULT_COOLDOWN_S = 600.0
"""A ``when`` trigger's least time between firings unless it says otherwise (10 minutes)."""
MIN_CHECK_EVERY_S = 1.0
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smh])")
_TIME_OF_DAY = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_FIELD = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$")


def parse_duration(text: object) -> float:
    """``"90s"``, ``"15m"``, ``"1h30m"`` in seconds; anything else is a ValueError."""
    if not isinstance(text, str):
        raise ValueError('a duration is a string such as "30s", "15m" or "1h"')
    parts = _DURATION.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise ValueError(f'{text[:40]!r} is not a duration such as "30s", "15m", "1h30m"')
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds > MAX_DURATION_S:
        raise ValueError("a duration may be at most 7 days (168h)")
    return seconds


def parse_time_of_day(text: object) -> tuple[int, int]:
    if not isinstance(text, str) or _TIME_OF_DAY.match(text) is None:
        raise ValueError('a time of day is "HH:MM", 24-hour, such as "07:30"')
    hour, minute = text.split(":")
    return int(hour), int(minute)


Duration = Annotated[float, BeforeValidator(parse_duration)]
TimeOfDay = Annotated[tuple[int, int], BeforeValidator(parse_time_of_day)]
Threshold = Annotated[float, Field(allow_inf_nan=False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


class WhenSettings(_Section):
    """A condition on one skill's reading, checked without the model."""

    skill: Annotated[str, Field(min_length=1, max_length=128)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    field: Annotated[str, Field(pattern=_FIELD.pattern, max_length=256)] = "value"
    """A dotted path into the skill's result (docs/design.md, "Triggers")."""
    above: Threshold | None = None
    below: Threshold | None = None
    hold_s: Duration = Field(default=0.0, alias="for")
    hysteresis: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    check_every_s: Annotated[Duration, Field(ge=MIN_CHECK_EVERY_S)] = Field(
        default=30.0, alias="check_every"
    )

    @model_validator(mode="after")
    def _has_a_threshold(self) -> WhenSettings:
        if self.above is None and self.below is None:
            raise ValueError("`when` needs `above`, `below` or both")
        if self.above is not None and self.below is not None and self.above >= self.below:
            raise ValueError("with both, `above` must be less than `below` (the band between)")
        return self

    def inside(self, value: float) -> bool:
        """Whether ``value`` meets the condition: above ``above`` and below ``below``."""
        return (self.above is None or value > self.above) and (
            self.below is None or value < self.below
        )

    def left(self, value: float) -> bool:
        """Whether ``value`` is out of the condition by at least ``hysteresis``: it re-arms."""
        h = self.hysteresis
        return (self.above is not None and value <= self.above - h) or (
            self.below is not None and value >= self.below + h
        )


class TriggerSettings(_Section):
    """One ``[[triggers]]`` table."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    every_s: Annotated[Duration, Field(ge=MIN_CHECK_EVERY_S)] | None = Field(
        default=None, alias="every"
    )
    at: Annotated[list[TimeOfDay], Field(min_length=1, max_length=48)] | None = None
    when: WhenSettings | None = None
    query: Annotated[str, Field(min_length=1, max_length=4000)] | None = None
    workflow: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    cooldown_s: Duration | None = Field(default=None, alias="cooldown")
    enabled: bool = True

    @model_validator(mode="after")
    def _one_start_and_one_run(self) -> TriggerSettings:
        starts = [key for key in ("every", "at", "when") if getattr(self, _ATTR[key]) is not None]
        if len(starts) != 1:
            raise ValueError("give exactly one of `every`, `at` and `when`")
        if (self.query is None) == (self.workflow is None):
            raise ValueError("give exactly one of `query` and `workflow`")
        return self

    @property
    def kind(self) -> str:
        return "when" if self.when else "at" if self.at else "every"

    @property
    def cooldown(self) -> float:
        """The least time between two firings: ``cooldown``, else 10 minutes for a ``when``
        and none for a schedule (its own times already space it)."""
        if self.cooldown_s is not None:
            return self.cooldown_s
        return DEFAULT_COOLDOWN_S if self.when else 0.0


_ATTR = {"every": "every_s", "at": "at", "when": "when"}


def trigger_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line of each key of each ``[[triggers]]`` table: ``("triggers", "2", "when")``.

    config.py's own line finder keeps only the first table of an array; this one counts them.
    """
    lines: dict[tuple[str, ...], int] = {}
    index = -1
    table: tuple[str, ...] | None = None
    header = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?\s*(#.*)?$")
    key = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        found = header.match(line)
        if found is not None:
            path = found.group(2).split(".")
            if found.group(1) == "[[" and path == ["triggers"]:
                index += 1
                table = ("triggers", str(index))
                lines[table] = number
            elif path[0] == "triggers" and index >= 0:
                table = ("triggers", str(index), *path[1:])
                lines.setdefault(table, number)
            else:
                table = None
            continue
        found = key.match(line)
        if found is not None and table is not None:
            lines.setdefault((*table, found.group(1)), number)
    return lines


Problem = Callable[[tuple[str, ...], str], Exception]


def check_triggers(
    triggers: list[TriggerSettings],
    registry: Registry,
    workflows: Mapping[str, object],
    problem: Problem,
) -> None:
    """Raise ``problem(location, message)`` for a duplicate name, an unknown skill or workflow,
    or a skill's arguments that do not fit its schema."""
    seen: set[str] = set()
    for index, trigger in enumerate(triggers):
        at = ("triggers", str(index))
        if trigger.name in seen:
            raise problem((*at, "name"), f"a second trigger is named {trigger.name!r}")
        seen.add(trigger.name)
        if trigger.workflow is not None and trigger.workflow not in workflows:
            known = ", ".join(sorted(workflows)) or "none configured"
            raise problem((*at, "workflow"), f"there is no workflow {trigger.workflow!r} ({known})")
        when = trigger.when
        if when is None:
            continue
        spec = registry.get(when.skill)
        if spec is None:
            known = ", ".join(registry.names()) or "none"
            raise problem((*at, "when", "skill"), f"there is no skill {when.skill!r} ({known})")
        try:
            spec.validate_arguments(when.arguments)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
            raise problem(
                (*at, "when", "arguments"),
                f"{when.skill} does not take these arguments: {where}: {first.get('msg')}",
            ) from None


def finite(value: object) -> float | None:
    """``value`` as a float when it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


__all__ = [
    "DEFAULT_COOLDOWN_S",
    "Duration",
    "TriggerSettings",
    "WhenSettings",
    "check_triggers",
    "finite",
    "parse_duration",
    "parse_time_of_day",
    "trigger_lines",
]
