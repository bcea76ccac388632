"""A ``when`` trigger's condition: the number read out of a skill's result, and the state machine.

The machine is pure: :meth:`Condition.observe` takes the instant and the reading (or the check's
error) and says whether to fire now. It fires once on entering the condition and holding it for
``for``; it re-arms only when the reading has left the condition by ``hysteresis``; and it never
fires twice within ``cooldown``, however the reading flaps.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from edge_agentd.service.config.triggers import WhenSettings, finite

TriggerState = Literal["armed", "holding", "fired", "cooling down", "failing"]
STATES: tuple[TriggerState, ...] = ("armed", "holding", "fired", "cooling down", "failing")


class ReadingError(Exception):
    """The skill's result holds no number at the trigger's ``field``."""


@dataclasses.dataclass(frozen=True)
class Reading:
    """What a check read: the number, its unit when the result gives one, and the skill call."""

    value: float
    unit: str | None
    skill: str
    arguments: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "arguments": self.arguments,
            "value": self.value,
            "unit": self.unit,
        }


def read_field(result: Any, path: str) -> tuple[float, str | None]:
    """The number at the dotted ``path`` of ``result``, and the ``unit`` beside it.

    A path not found at the top is looked up in the result's one reading (``read_sensor`` returns
    ``{"readings": [{"value": ..., "unit": ...}]}``), so ``value`` reads a sensor of one quantity.
    """
    found = _walk(result, path)
    if found is None:
        readings = result.get("readings") if isinstance(result, dict) else None
        if isinstance(readings, list) and len(readings) == 1:
            found = _walk(readings[0], path)
        elif isinstance(readings, list) and len(readings) > 1:
            raise ReadingError(
                f"the result has {len(readings)} readings: name one with the skill's "
                "arguments (read_sensor's `quantity`) or a `field` such as readings.0.value"
            )
    if found is None:
        keys = ", ".join(sorted(result)) if isinstance(result, dict) else type(result).__name__
        raise ReadingError(f"the result has no field {path!r} (it has: {keys})")
    parent, value = found
    number = finite(value)
    if number is None:
        raise ReadingError(f"the field {path!r} is not a finite number")
    unit = parent.get("unit") if isinstance(parent, dict) else None
    return number, unit if isinstance(unit, str) else None


def _walk(result: Any, path: str) -> tuple[Any, Any] | None:
    parent: Any = None
    node: Any = result
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            parent, node = node, node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            parent, node = node, node[int(part)]
        else:
            return None
    return parent, node


@dataclasses.dataclass
class Condition:
    """Where one ``when`` trigger stands. All instants are the trigger clock's seconds."""

    when: WhenSettings
    cooldown_s: float
    latched: bool = False
    """Fired, and the reading has not left the condition by ``hysteresis`` since."""
    holding_since: float | None = None
    last_fired: float | None = None
    error: str | None = None

    def observe(self, now: float, value: float) -> bool:
        """Take one reading; True when the trigger fires now."""
        self.error = None
        if self.latched:
            if self.when.left(value):
                self.latched = False
            else:
                return False
        if not self.when.inside(value):
            self.holding_since = None
            return False
        if self.holding_since is None or self.holding_since > now:
            self.holding_since = now
        if now - self.holding_since < self.when.hold_s or self.cooling(now):
            return False
        self.latched = True
        self.holding_since = None
        self.last_fired = now
        return True

    def failed(self, error: str) -> None:
        """A check failed: the hold is broken (it is not known to have held); a firing stays
        latched, so a reading that comes back still in the condition does not fire again."""
        self.error = error
        self.holding_since = None

    def cooling(self, now: float) -> bool:
        return self.last_fired is not None and now - self.last_fired < self.cooldown_s

    def state(self, now: float) -> TriggerState:
        if self.error is not None:
            return "failing"
        if self.latched:
            return "fired"
        if self.cooling(now):
            return "cooling down"
        return "holding" if self.holding_since is not None else "armed"

    def holds_until(self) -> float | None:
        """When a hold in progress would fire, cooldown allowing."""
        if self.holding_since is None:
            return None
        due = self.holding_since + self.when.hold_s
        if self.last_fired is not None:
            due = max(due, self.last_fired + self.cooldown_s)
        return due


__all__ = ["STATES", "Condition", "Reading", "ReadingError", "TriggerState", "read_field"]
