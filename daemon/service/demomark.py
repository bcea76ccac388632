"""The demo device's mark on the answers drawn from it (``edge-agent serve --demo``).

A daemon serving the demo device must never pass its simulated readings for this machine's own,
and a person reads the answer, not the JSON under it. So an answer drawn from the demo device
(a run in which a skill's result carries the demo device's ``demo`` note, skills/demo.py) ends
with :data:`DEMO_MARK`: ``The CPU is 48.312 °C. (demo device)``. An answer no demo result went
into (the day of the week, say) is this machine's and stays as it is.

The mark is put on where the reply leaves the serving loop, in one place for everything that
carries the answer: the run's ``result`` (``answer`` and its last event, the
``FinalAnswerAction``), the streamed ``FinalAnswerAction`` event, and through the result the
journal, its keyed replays and the trigger runs. The event and the reply therefore always say
the same answer; the action's ``raw`` keeps what the model wrote. The engine and its grounding
rules never see the mark: it is put on after the run has passed them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from edge_agentd.protocol.framing import unpack_frame
from edge_agentd.protocol.wire import encode
from edge_agentd.service.runs.jobs import Finished

DEMO_MARK: Final = " (demo device)"
"""What ends an answer drawn from the demo device."""


def from_demo(event: Any) -> bool:
    """True for a skill's result that the demo device gave (it carries the ``demo`` note)."""
    return (
        isinstance(event, dict)
        and event.get("type") == "SkillResultObservation"
        and isinstance(event.get("result"), dict)
        and "demo" in event["result"]
    )


def marked(event: dict[str, Any]) -> dict[str, Any]:
    """The ``FinalAnswerAction`` ``event`` with its answer marked (once)."""
    answer = event.get("answer")
    if not isinstance(answer, str) or answer.endswith(DEMO_MARK):
        return event
    return {**event, "answer": answer + DEMO_MARK}


class DemoMarks:
    """Marks the answers of one daemon serving the demo device; the serving loop's thread only."""

    def __init__(self) -> None:
        self._drawn: set[str] = set()
        """The streamed runs that have read the demo device so far, by request id."""

    def event(self, run_id: str, payload: bytes) -> bytes:
        """A streamed ``event`` reply of run ``run_id``, its final answer marked when a demo
        result came before it."""
        reply = unpack_frame(payload)
        event = reply.get("event") if isinstance(reply, dict) else None
        if from_demo(event):
            self._drawn.add(run_id)
        elif (
            isinstance(event, dict)
            and event.get("type") == "FinalAnswerAction"
            and run_id in self._drawn
        ):
            return encode({**reply, "event": marked(event)})
        return payload

    def finished(self, message: Finished) -> Finished:
        """The run's final reply, its answer and last event marked when it was drawn from the
        demo device."""
        self._drawn.discard(message.job.request_id)
        if message.payload is None or message.outcome != "answered":
            return message
        reply = unpack_frame(message.payload)
        events = reply["state"]["events"]
        if not any(from_demo(event) for event in events):
            return message
        events[-1] = marked(events[-1])
        reply["answer"] = events[-1]["answer"]
        return dataclasses.replace(message, payload=encode(reply), answer=reply["answer"])


__all__ = ["DEMO_MARK", "DemoMarks", "from_demo", "marked"]
