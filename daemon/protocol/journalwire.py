"""The run journal's part of protocol v1: ``run``'s ``key``, and the ``result`` and ``runs`` ops.

docs/protocol.md, "The run journal", is the prose version.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, Field

from edge_agentd.protocol.framing import MAX_ID_CHARS
from edge_agentd.protocol.messages import (
    Message,
    RequestBase,
    ResultBase,
    RunOutcome,
    Timing,
)

MAX_KEY_CHARS: Final = 128
MAX_RUNS_LIMIT: Final = 1000
RUNS_TEXT_CHARS: Final = 200
"""``runs`` gives the first this many characters of each run's query and answer."""


def _printable(text: str) -> str:
    if not text.isprintable():
        raise ValueError("must be printable characters only")
    return text


Key = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS), AfterValidator(_printable)]
RunId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]


class ResultRequest(RequestBase):
    """The journal's record of the run whose id is ``target``, or that holds ``key`` (one of
    the two): queued, running or ended."""

    op: Literal["result"]
    target: RunId | None = None
    key: Key | None = None


class RunsRequest(RequestBase):
    """The latest ``limit`` runs of the journal, newest first."""

    op: Literal["runs"]
    limit: Annotated[int, Field(ge=1, le=MAX_RUNS_LIMIT)] = 20


JournalState = Literal["queued", "running", "done", "interrupted"]
"""A journaled run: ``interrupted`` when it ended without a result (``reason`` says why)."""


class RunRecord(ResultBase):
    """One run as the journal keeps it."""

    op: Literal["result"] = "result"
    run_id: str
    state: JournalState
    source: str
    key: str | None
    query: str
    workflow: str | None
    outcome: RunOutcome | None
    answer: str | None
    reason: str | None
    events: list[dict[str, Any]]
    timing: Timing | None
    queued_at: float
    started_at: float | None
    finished_at: float | None


class RunSummary(Message):
    run_id: str
    source: str
    state: JournalState
    outcome: RunOutcome | None
    queued_at: float
    seconds: float | None
    query: str
    answer: str | None


class RunsResult(ResultBase):
    op: Literal["runs"] = "runs"
    runs: list[RunSummary]


__all__ = [
    "MAX_KEY_CHARS",
    "MAX_RUNS_LIMIT",
    "RUNS_TEXT_CHARS",
    "JournalState",
    "Key",
    "ResultRequest",
    "RunId",
    "RunRecord",
    "RunSummary",
    "RunsRequest",
    "RunsResult",
]
