"""What a trigger hands the run queue when it fires, and what it remembers across a restart.

A :class:`Firing` becomes a run like any other (source ``trigger:NAME``); its query carries the
reading that fired it, so the model can say what happened. :class:`TriggerMemory` is the seam to
the run journal: without one (:class:`NoMemory`), a restart starts every trigger afresh.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from edge_agentd.service.config.triggers import TriggerSettings
from edge_agentd.service.triggers.condition import Reading

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
    """The run's query: the reading that fired it first (skill, arguments, value, unit), then the
    trigger's own query (or, for a workflow, a line saying why it runs), then when it fired.

    The reading leads in plain words: a small model names a number that opens the query, and
    copies the skill's first field instead when the number only trails it.
    """
    asked = trigger.query or f"The trigger {trigger.name} started the workflow {trigger.workflow}."
    if reading is None:
        return f"{asked}\n\n(The trigger {trigger.name} ran on schedule at {when_text}.)"
    unit = f" {reading.unit}" if reading.unit else ""
    when = trigger.when
    limit = ""
    if when is not None and when.above is not None and when.below is not None:
        limit = f", between {when.above:g} and {when.below:g}{unit}"
    elif when is not None and when.above is not None:
        limit = f", above the limit of {when.above:g}{unit}"
    elif when is not None and when.below is not None:
        limit = f", below the limit of {when.below:g}{unit}"
    held = f" for {when.hold_s:g} s" if when is not None and when.hold_s else ""
    named = " ".join(str(value) for value in reading.arguments.values())
    source = f"{reading.skill} {named}".strip()
    return (
        f"{source} reads {reading.value:g}{unit}{limit}{held}. {asked}\n\n"
        f"(The trigger {trigger.name} fired at {when_text}.)"
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
