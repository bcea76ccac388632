"""The journal's commands: ``edge-agent result ID`` and ``edge-agent runs`` (docs/protocol.md,
"The run journal"). Like ``ask``, they import neither pydantic nor the agent."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from edge_agentd.cli.ask import watchdog
from edge_agentd.cli.exits import (
    CODE_EXITS,
    COMMAND_SLACK_S,
    EXIT_BAD_INPUT,
    EXIT_NO_ANSWER,
    EXIT_OK,
    EXIT_TEMPFAIL,
)
from edge_agentd.cli.seconds import positive_seconds

MAX_LIMIT = 1000
PREVIEW_CHARS = 40


def add_parsers(commands: Any, endpoint_help: str, only: str | None) -> None:
    if only in (None, "result"):
        result = commands.add_parser("result", help="a run's result, from the daemon's journal")
        result.add_argument("id", help="the run's id (`ask --json` prints it; so does `runs`)")
        result.add_argument("--json", action="store_true", help="print one JSON object")
        result.add_argument(
            "--wait", type=positive_seconds, help="wait up to this many seconds for the run to end"
        )
        result.add_argument("--timeout", type=positive_seconds, default=5.0, help="seconds per try")
        result.add_argument("--endpoint", help=endpoint_help)
    if only in (None, "runs"):
        runs = commands.add_parser("runs", help="the latest runs, newest first")
        runs.add_argument("--limit", type=int, default=20, help=f"at most N (1-{MAX_LIMIT})")
        runs.add_argument("--json", action="store_true", help="print one JSON array")
        runs.add_argument(
            "--timeout", type=positive_seconds, default=5.0, help="seconds (default 5)"
        )
        runs.add_argument("--endpoint", help=endpoint_help)


def journal_command(args: argparse.Namespace) -> int:
    from edge_agentd.client.zmqclient import Client, DaemonError  # noqa: PLC0415

    as_json = bool(args.json)
    if args.command == "runs" and not 1 <= args.limit <= MAX_LIMIT:
        print(f"edge-agent: --limit must be between 1 and {MAX_LIMIT}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.command == "result" and not (0 < len(args.id) <= 128 and args.id.isprintable()):
        print("edge-agent: a run id is 1-128 printable characters", file=sys.stderr)
        return EXIT_BAD_INPUT
    wait = getattr(args, "wait", None) or 0.0
    watchdog(args.timeout + wait + COMMAND_SLACK_S, as_json)
    endpoint = args.endpoint or os.environ.get("EDGE_AGENT_ENDPOINT") or None
    try:
        with Client(endpoint, timeout=args.timeout / 2, retries=1) as client:
            if args.command == "runs":
                _print_runs(client.runs(args.limit), as_json)
                return EXIT_OK
            return _print_result(client.result(args.id, wait=wait), as_json)
    except DaemonError as exc:
        if as_json:
            _emit({"error": {"code": exc.code, "message": exc.message}})
        print(f"edge-agent: {exc.message}", file=sys.stderr)  # scripts read the exit code
        return CODE_EXITS.get(exc.code, EXIT_NO_ANSWER)
    except KeyboardInterrupt:
        print("edge-agent: interrupted", file=sys.stderr)
        return 130


def result_object(record: dict[str, Any]) -> dict[str, Any]:
    """The object ``ask --json`` prints, plus the run's ``state`` (and ``reason``)."""
    return {
        "run_id": record.get("run_id"),
        "query": record.get("query"),
        "answer": record.get("answer"),
        "outcome": record.get("outcome"),
        "workflow": record.get("workflow"),
        "events": record.get("events", []),
        "timing": record.get("timing"),
        "state": record.get("state"),
        "reason": record.get("reason"),
    }


def _print_result(record: dict[str, Any], as_json: bool) -> int:
    state = record.get("state")
    outcome = record.get("outcome")
    if as_json:
        _emit(result_object(record))
    elif state in ("queued", "running"):
        print(f"edge-agent: run {record.get('run_id')} is still {state}", file=sys.stderr)
    elif outcome == "answered":
        print(record.get("answer"))
    else:
        detail = f": {record['reason']}" if record.get("reason") else ""
        print(f"edge-agent: no answer ({outcome}{detail})", file=sys.stderr)
    if state in ("queued", "running"):
        return EXIT_TEMPFAIL
    if outcome == "answered":
        return EXIT_OK
    return EXIT_TEMPFAIL if record.get("reason") == "deadline" else EXIT_NO_ANSWER


RUN_FIELDS = ("run_id", "source", "state", "outcome", "queued_at", "seconds", "query", "answer")
"""What ``runs --json`` prints of each run: the protocol's ``runs`` fields, by the protocol's
names (docs/protocol.md, "`runs`"), so a script reads one vocabulary."""


def _print_runs(runs: list[dict[str, Any]], as_json: bool) -> None:
    rows = [{field: run.get(field) for field in RUN_FIELDS} for run in runs]
    if as_json:
        _emit(rows)
        return
    for row in rows:
        seconds = row["seconds"]
        took = f"{seconds:7.1f} s" if isinstance(seconds, int | float) else "      - "
        print(
            f"{row['run_id']}  {_when(row['queued_at'])}  {row['source']:<8}"
            f" {row['outcome'] or row['state']:<17} {took}  {_preview(row['query'])}  ->  "
            f"{_preview(row['answer'])}"
        )


def _when(stamp: Any) -> str | None:
    if not isinstance(stamp, int | float):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(stamp))


def _preview(text: Any) -> str:
    if not isinstance(text, str):
        return "-"
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _emit(value: Any) -> None:
    import json  # noqa: PLC0415 - only --json prints JSON

    print(json.dumps(value, ensure_ascii=False), flush=True)


__all__ = ["RUN_FIELDS", "add_parsers", "journal_command", "result_object"]
