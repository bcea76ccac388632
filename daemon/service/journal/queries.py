"""The replies the journal gives: ``result`` and ``runs``, and a keyed ``run`` answered from an
earlier run. Each is built from rows of the journal's file, on the journal's thread, as a plain
map in wire order (tests/test_journal*.py validate them against the wire models)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from edge_agentd.protocol.framing import PROTOCOL_VERSION, unpack_frame
from edge_agentd.protocol.journalwire import RUNS_TEXT_CHARS
from edge_agentd.protocol.wire import ErrorCode, encode
from edge_agentd.service.journal.store import JournalStore

Answer = bytes | tuple[ErrorCode, str]
"""A packed result reply, or the error to answer with (the serving loop sends and counts it)."""
Query = Callable[[JournalStore | None], Answer]


class LiveRuns(Protocol):
    """What the journal knows of runs beyond its file: the problem, if degraded, and when a run
    still going started."""

    problem: str | None

    def started_at(self, run_id: str) -> float | None: ...


def unavailable(problem: str | None) -> tuple[ErrorCode, str]:
    return "no_journal", f"the run journal cannot be read: {problem or 'it is not open'}"


def result_query(target: str, request_id: str, live: LiveRuns) -> Query:
    def query(store: JournalStore | None) -> Answer:
        if store is None:
            return unavailable(live.problem)
        row = store.get(target)
        if row is None:
            return "not_found", "the journal holds no run with this id"
        return encode(record(_now(row, live), request_id))

    return query


def runs_query(limit: int, request_id: str, live: LiveRuns) -> Query:
    def query(store: JournalStore | None) -> Answer:
        if store is None:
            return unavailable(live.problem)
        rows = [summary(_now(row, live)) for row in store.latest(limit)]
        return encode(
            {"v": PROTOCOL_VERSION, "id": request_id, "kind": "result", "op": "runs", "runs": rows}
        )

    return query


def keyed_query(run_id: str, request_id: str) -> Callable[[JournalStore | None], bytes | None]:
    """The ``run`` result of the journaled run ``run_id`` for a request with the same key, or
    None when there is none to give (no usable file, or the run ended without a result)."""

    def query(store: JournalStore | None) -> bytes | None:
        row = store.get(run_id) if store is not None else None
        if row is None or row["state"] != "done" or not row["result"]:
            return None
        result = _result(row)
        result["id"] = request_id
        result["run_id"] = row["id"]
        return encode(result)

    return query


def record(row: dict[str, Any], request_id: str) -> dict[str, Any]:
    """A :class:`~edge_agentd.protocol.wire.RunRecord` map."""
    result = _result(row)
    state = result.get("state")
    events = state.get("events") if isinstance(state, dict) else None
    return {
        "v": PROTOCOL_VERSION,
        "id": request_id,
        "kind": "result",
        "op": "result",
        "run_id": row["id"],
        "state": row["state"],
        "source": row["source"],
        "key": row["key"],
        "query": row["query"],
        "workflow": row["workflow"],
        "outcome": row["outcome"],
        "answer": row["answer"],
        "reason": row["reason"] or _reason(events),
        "events": events if isinstance(events, list) else [],
        "timing": result.get("timing"),
        "queued_at": row["queued_at"],
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
    }


def summary(row: dict[str, Any]) -> dict[str, Any]:
    """A :class:`~edge_agentd.protocol.journalwire.RunSummary` map."""
    finished = row["finished_at"]
    answer = row["answer"]
    return {
        "run_id": row["id"],
        "source": row["source"],
        "state": row["state"],
        "outcome": row["outcome"],
        "queued_at": row["queued_at"],
        "seconds": None if finished is None else round(finished - row["queued_at"], 3),
        "query": row["query"][:RUNS_TEXT_CHARS],
        "answer": None if answer is None else answer[:RUNS_TEXT_CHARS],
    }


def _now(row: dict[str, Any], live: LiveRuns) -> dict[str, Any]:
    """A queued row as it is now: a run's start is not written, only kept in memory."""
    if row["state"] == "queued":
        started = live.started_at(row["id"])
        if started is not None:
            return {**row, "state": "running", "started_at": started}
    return row


def _result(row: dict[str, Any]) -> dict[str, Any]:
    blob = row.get("result")
    if not isinstance(blob, bytes) or not blob:
        return {}
    value = unpack_frame(blob)
    return value if isinstance(value, dict) else {}


def _reason(events: Any) -> str | None:
    """Why a run with a result was interrupted: its last event's ``reason``."""
    last = events[-1] if isinstance(events, list) and events else None
    if isinstance(last, dict) and last.get("type") == "InterruptedObservation":
        reason = last.get("reason")
        return reason if isinstance(reason, str) else None
    return None


__all__ = [
    "Answer",
    "LiveRuns",
    "Query",
    "keyed_query",
    "record",
    "result_query",
    "runs_query",
    "summary",
    "unavailable",
]
