"""The replies the journal gives: ``result`` and ``runs``, and a keyed ``run`` answered from an
earlier run. Each is built from rows of the journal's file, on the journal's thread, as a plain
map in wire order (tests/test_journal*.py validate them against the wire models)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edge_agent.protocol.framing import PROTOCOL_VERSION, unpack_frame
from edge_agent.protocol.journalwire import RUNS_TEXT_CHARS
from edge_agent.protocol.wire import ErrorCode, encode
from edge_agent.service.journalstore import JournalStore

Answer = bytes | tuple[ErrorCode, str]
"""A packed result reply, or the error to answer with (the serving loop sends and counts it)."""
Query = Callable[[JournalStore | None], Answer]


def unavailable(problem: str | None) -> tuple[ErrorCode, str]:
    return "no_journal", f"the run journal cannot be read: {problem or 'it is not open'}"


def result_query(target: str, request_id: str, problem: Callable[[], str | None]) -> Query:
    def query(store: JournalStore | None) -> Answer:
        if store is None:
            return unavailable(problem())
        row = store.get(target)
        if row is None:
            return "not_found", "the journal holds no run with this id"
        return encode(record(row, request_id))

    return query


def runs_query(limit: int, request_id: str, problem: Callable[[], str | None]) -> Query:
    def query(store: JournalStore | None) -> Answer:
        if store is None:
            return unavailable(problem())
        rows = [summary(row) for row in store.latest(limit)]
        return encode(
            {"v": PROTOCOL_VERSION, "id": request_id, "kind": "result", "op": "runs", "runs": rows}
        )

    return query


def keyed_query(run_id: str, request_id: str) -> Callable[[JournalStore | None], bytes | None]:
    """The ``run`` result of the journaled run ``run_id`` for a request with the same key, or
    None when there is none to give (no usable file, or the run ended without a result)."""

    def query(store: JournalStore | None) -> bytes | None:
        row = store.get(run_id) if store is not None else None
        if row is None or row["state"] != "done":
            return None
        return encode(run_result(row, request_id))

    return query


def record(row: dict[str, Any], request_id: str) -> dict[str, Any]:
    """A :class:`~edge_agent.protocol.wire.RunRecord` map."""
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
        "reason": row["reason"],
        "events": _events(row["events"]),
        "timing": _timing(row),
        "queued_at": row["queued_at"],
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
    }


def summary(row: dict[str, Any]) -> dict[str, Any]:
    """A :class:`~edge_agent.protocol.wire.RunSummary` map."""
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


def run_result(row: dict[str, Any], request_id: str) -> dict[str, Any]:
    """A :class:`~edge_agent.protocol.wire.RunResult` map of a finished journaled run."""
    return {
        "v": PROTOCOL_VERSION,
        "id": request_id,
        "kind": "result",
        "op": "run",
        "workflow": row["workflow"],
        "timing": _timing(row) or {"queued_ms": 0.0, "run_ms": 0.0},
        "outcome": row["outcome"],
        "answer": row["answer"],
        "state": {"query": row["query"], "events": _events(row["events"])},
        "run_id": row["id"],
    }


def _events(blob: bytes | None) -> list[Any]:
    if not blob:
        return []
    events = unpack_frame(blob) if isinstance(blob, bytes) else []
    return events if isinstance(events, list) else []


def _timing(row: dict[str, Any]) -> dict[str, float] | None:
    if row["queued_ms"] is None or row["run_ms"] is None:
        return None
    return {"queued_ms": float(row["queued_ms"]), "run_ms": float(row["run_ms"])}


__all__ = [
    "Answer",
    "Query",
    "keyed_query",
    "record",
    "result_query",
    "run_result",
    "runs_query",
    "summary",
    "unavailable",
]
