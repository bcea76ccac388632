"""What a trigger hands the run queue when it fires, and what it remembers across a restart.

A :class:`Firing` becomes a run like any other (source ``trigger:NAME``); its query carries the
reading that fired it, so the model can say what happened. :class:`TriggerMemory` is the seam to
the run journal: without one (:class:`NoMemory`), a restart starts every trigger afresh.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Protocol

from edge_agent.service.triggers.condition import Reading
from edge_agent.service.triggers.settings import TriggerSettings

SOURCE_PREFIX = "trigger:"


@dataclasses.dataclass(frozen=True)
class Firing:
    """One firing of one trigger, on its way to the run queue."""

    trigger: str
    run_id: str
    query: str
    workflow: str | None
    fired_at: float
    reading: Reading | None

    @property
    def source(self) -> str:
        return SOURCE_PREFIX + self.trigger


def firing_query(trigger: TriggerSettings, reading: Reading | None, when_text: str) -> str:
    """The run's query: the trigger's own, or for a workflow a line saying why it runs, then the
    reading that fired it (skill, arguments, value, unit) as context."""
    asked = trigger.query or f"The trigger {trigger.name} started the workflow {trigger.workflow}."
    if reading is None:
        return f"{asked}\n\n(Context: the trigger {trigger.name} ran on schedule at {when_text}.)"
    when = trigger.when
    limits = []
    if when is not None and when.above is not None:
        limits.append(f"above {when.above:g}")
    if when is not None and when.below is not None:
        limits.append(f"below {when.below:g}")
    held = f" for {when.hold_s:g} s" if when is not None and when.hold_s else ""
    unit = f" {reading.unit}" if reading.unit else ""
    arguments = json.dumps(reading.arguments, ensure_ascii=False, sort_keys=True)
    return (
        f"{asked}\n\n(Context: the trigger {trigger.name} fired at {when_text} because "
        f"{reading.skill} {arguments} read {reading.value:g}{unit}, "
        f"{' and '.join(limits)}{held}.)"
    )


@dataclasses.dataclass(frozen=True)
class Remembered:
    """What a trigger must not forget across a restart."""

    last_fired: float | None = None
    latched: bool = False
    """A ``when`` that fired and had not re-armed."""
    last_due: float | None = None
    """The last ``at``/``every`` time that ran."""


class TriggerMemory(Protocol):
    """Where trigger firings are kept across restarts: the run journal, when there is one."""

    def recall(self, trigger: str) -> Remembered | None: ...

    def remember(self, trigger: str, remembered: Remembered) -> None: ...


class NoMemory:
    """No journal: every trigger starts armed, and its schedule from the start's instant."""

    def recall(self, trigger: str) -> Remembered | None:
        return None

    def remember(self, trigger: str, remembered: Remembered) -> None:
        return None


def result_message(
    name: str,
    run_id: str,
    *,
    fired_at: str | None,
    outcome: str,
    answer: str | None,
    reading: Reading | None,
) -> dict[str, Any]:
    """One trigger run's result, as ``watch`` streams it and the MQTT bridge publishes it."""
    return {
        "type": "TriggerRun",
        "trigger": name,
        "run_id": run_id,
        "fired_at": fired_at,
        "outcome": outcome,
        "answer": answer,
        "reading": reading.as_dict() if reading else None,
    }


__all__ = [
    "SOURCE_PREFIX",
    "Firing",
    "NoMemory",
    "Remembered",
    "TriggerMemory",
    "firing_query",
    "result_message",
]
