"""``edge-agent triggers [--json]`` and ``edge-agent watch [--trigger NAME] [--json]``.

Like ``ask``, they import neither pydantic nor the agent (docs/design.md, "Triggers").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from edge_agentd.cli.exits import CODE_EXITS, EXIT_INTERRUPTED, EXIT_NO_ANSWER, EXIT_OK
from edge_agentd.cli.seconds import positive_seconds


def add_parsers(commands: Any, endpoint_help: str) -> None:
    listing = commands.add_parser("triggers", help="show the triggers and where each stands")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "--timeout", type=positive_seconds, default=5.0, help="seconds (default 5)"
    )
    listing.add_argument("--endpoint", help=endpoint_help)
    watch = commands.add_parser("watch", help="print each trigger run's result as it ends")
    watch.add_argument("--trigger", help="only this trigger's results")
    watch.add_argument("--json", action="store_true", help="print one JSON object per line")
    watch.add_argument(
        "--timeout", type=positive_seconds, default=5.0, help="seconds a reply may take (default 5)"
    )
    watch.add_argument("--endpoint", help=endpoint_help)


def triggers_command(args: argparse.Namespace) -> int:
    from edge_agentd.client.zmqclient import Client, DaemonError  # noqa: PLC0415

    endpoint = args.endpoint or os.environ.get("EDGE_AGENT_ENDPOINT") or None
    try:
        with Client(
            endpoint,
            timeout=args.timeout / 2 if args.command == "triggers" else args.timeout,
            retries=1,
        ) as client:
            if args.command == "triggers":
                _print_triggers(client.triggers(), args.json)
                return EXIT_OK
            _say_watching(client.triggers(), args.trigger, client.endpoint)
            client.watch(lambda result: _print_result(result, args.json), trigger=args.trigger)
            return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED if args.command == "triggers" else EXIT_OK
    except DaemonError as exc:
        print(f"edge-agent: {exc.message}", file=sys.stderr)  # scripts read the exit code
        return CODE_EXITS.get(exc.code, EXIT_NO_ANSWER)


def _say_watching(triggers: list[dict[str, Any]], only: str | None, endpoint: str) -> None:
    """One line on stderr (stdout is the results') that says the watch is on and what it waits
    for: without it, ``watch`` looks hung until a trigger fires, which may be hours."""
    names = [entry["name"] for entry in triggers]
    if only is not None and only not in names:
        return  # the daemon refuses the watch, and that error is what to say
    if only is not None:
        what = f"trigger {only}"
    elif names:
        what = f"{len(names)} trigger{'s' if len(names) != 1 else ''} ({', '.join(names)})"
    else:
        what = "triggers, but it has none configured ([[triggers]] in its config)"
    print(
        f"edge-agent: watching {endpoint} for the runs of {what}; each result is printed as it "
        "ends (Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )


def _print_triggers(triggers: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(triggers, ensure_ascii=False, indent=2))
        return
    if not triggers:
        print("no triggers configured ([[triggers]] in the config)")
        return
    for entry in triggers:
        print(f"{entry['name']}: {entry['state']} ({_starts(entry)})")
        reading = entry.get("reading")
        if reading:
            print(f"  reading: {_reading(reading)}")
        if entry.get("error"):
            print(f"  error: {entry['error']}")
        print(
            f"  last fired: {entry.get('last_fired') or 'never'}; "
            f"next: {entry.get('next_fire') or '-'}"
        )
        last = entry.get("last_run")
        if last:
            said = f": {last['answer']}" if last.get("answer") else ""
            why = f" ({last['reason']})" if last.get("reason") else ""
            print(f"  last run: {last['outcome']}{why}{said}")
        counts = entry.get("counts", {})
        print("  " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def _starts(entry: dict[str, Any]) -> str:
    starts = entry.get("starts", {})
    if entry.get("kind") == "every":
        return f"every {starts.get('every_s'):g} s"
    if entry.get("kind") == "at":
        return "at " + ", ".join(starts.get("at", []))
    limits = [
        f"{word} {starts[word]:g}" for word in ("above", "below") if starts.get(word) is not None
    ]
    held = f" for {starts['for_s']:g} s" if starts.get("for_s") else ""
    return f"when {starts.get('skill')}.{starts.get('field')} {' and '.join(limits)}{held}"


def _reading(reading: dict[str, Any]) -> str:
    unit = f" {reading['unit']}" if reading.get("unit") else ""
    return f"{reading['value']:g}{unit} from {reading['skill']}"


def _print_result(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, ensure_ascii=False), flush=True)
        return
    reading = f" [{_reading(result['reading'])}]" if result.get("reading") else ""
    said = result.get("answer") or f"no answer ({result.get('outcome')})"
    print(f"{result.get('fired_at')} {result.get('trigger')}{reading}: {said}", flush=True)


__all__ = ["add_parsers", "triggers_command"]
