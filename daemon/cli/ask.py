"""The client commands: ``ask``, ``status`` and ``skills``, over ZeroMQ or (``--mqtt``) MQTT.

They import neither pydantic nor the agent, so they start fast (scripts/bench/bench_cli_start.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from edge_agentd.cli.exits import (
    CODE_EXITS,
    COMMAND_SLACK_S,
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NO_ANSWER,
    EXIT_OK,
    EXIT_TEMPFAIL,
)
from edge_agentd.cli.pipes import stdout_to_devnull
from edge_agentd.client.askoptions import AskOptions

if TYPE_CHECKING:
    from edge_agentd.cli.progress import ProgressLine


def client_command(args: argparse.Namespace) -> int:
    from edge_agentd.client.zmqclient import Client, DaemonError, run_wait  # noqa: PLC0415

    endpoint = args.endpoint or os.environ.get("EDGE_AGENT_ENDPOINT") or None
    # --stream is JSON lines to the end: its last line is the object --json prints.
    as_json = bool(getattr(args, "json", False) or getattr(args, "stream", False))
    # The run's id is chosen here, so a timed-out ask can name it (`edge-agent result ID`).
    run_id = os.urandom(16).hex() if args.command == "ask" else None
    args.run_id = run_id
    seen: list[dict[str, Any]] = []  # the events of an ask so far, for an interrupted --json
    # status/skills try twice within --timeout; a run's reply may trail its deadline by the grace.
    per_try = args.timeout if args.command == "ask" else args.timeout / 2
    wait = getattr(args, "wait", None)
    bound = (
        run_wait(args.timeout, wait) if args.command == "ask" else args.timeout
    ) + COMMAND_SLACK_S
    for option in ("key", "wait"):  # before any broker is reached: the options are wrong anyway
        if getattr(args, option, None) is not None and getattr(args, "mqtt", None):
            said = f"edge-agent: --{option} works over ZeroMQ only, not with --mqtt"
            print(said, file=sys.stderr)
            return EXIT_BAD_INPUT
    progress = _progress(args)
    watchdog(bound, as_json, progress, run_id)
    try:
        with (
            _mqtt_client(args)
            if getattr(args, "mqtt", None)
            else Client(endpoint, timeout=per_try, retries=1)
        ) as client:
            if args.command == "status":
                _print_status(client.status(), as_json)
                return EXIT_OK
            if args.command == "skills":
                _print_skills(client.skills(), as_json)
                return EXIT_OK
            return _ask(client, args, seen, progress)
    except KeyboardInterrupt:
        if as_json and args.command == "ask":
            interrupted = {"type": "InterruptedObservation", "reason": "cancelled"}
            _emit(
                {
                    "run_id": run_id,
                    "query": args.query,
                    "answer": None,
                    "outcome": "interrupted",
                    "workflow": args.workflow,
                    "events": [*seen, interrupted],
                    "timing": None,
                }
            )
        print("edge-agent: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except DaemonError as exc:
        code = CODE_EXITS.get(exc.code, EXIT_NO_ANSWER)
        if as_json:
            _emit(
                {
                    **({"run_id": run_id} if run_id else {}),
                    "answer": None,
                    "outcome": None,
                    "error": {"code": exc.code, "message": exc.message},
                }
            )
        if exc.code == "timeout" and run_id is not None and not getattr(args, "mqtt", None):
            print(f"edge-agent: {_late(args, run_id)}", file=sys.stderr, flush=True)
        else:
            # The code is for scripts (--json, the exit code); a person reads the sentence.
            print(f"edge-agent: {exc.message}", file=sys.stderr)
        return code


def watchdog(
    seconds: float,
    as_json: bool,
    progress: ProgressLine | None = None,
    run_id: str | None = None,
) -> None:
    """End the process after ``seconds`` with 75, whatever the command is waiting on."""

    def expire() -> None:
        if progress is not None:
            progress.close()
        message = f"the command did not finish within {seconds:g} s"
        try:
            if as_json:
                error = {"code": "timeout", "message": message}
                _emit(
                    {
                        **({"run_id": run_id} if run_id else {}),
                        "answer": None,
                        "outcome": None,
                        "error": error,
                    }
                )
            print(f"edge-agent: {message}", file=sys.stderr, flush=True)
            if run_id is not None:
                # The process ends here without cancelling: the daemon keeps the run going.
                print(
                    f"edge-agent: run {run_id}; fetch it later with `edge-agent result {run_id}`",
                    file=sys.stderr,
                    flush=True,
                )
        except OSError:  # BrokenPipeError included: the reader left; the exit must still come
            stdout_to_devnull()
        os._exit(EXIT_TEMPFAIL)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def _late(args: argparse.Namespace, run_id: str) -> str:
    """What an ask that gave up waiting says: how long it waited and why, and what became of the
    run. A keyed run goes on (the client leaves it); an unkeyed one was cancelled."""
    from edge_agentd.client.zmqclient import RUN_GRACE_S  # noqa: PLC0415

    waited = (
        f"--wait {args.wait:g} s"
        if args.wait is not None and args.wait < args.timeout + RUN_GRACE_S
        else f"--timeout {args.timeout:g} s and the daemon's {RUN_GRACE_S:g} s to answer after it"
    )
    if args.key is not None:
        return (
            f"no answer within {waited}; run {run_id} goes on: fetch its answer later with "
            f"`edge-agent result {run_id}`, or ask again with the same --key"
        )
    return (
        f"no answer within {waited}, so the run was cancelled; give it a longer --timeout, or "
        "a --key to come back for its answer later"
    )


def _mqtt_client(args: argparse.Namespace) -> Any:
    from edge_agentd.cli.mqtt import open_ask_client  # noqa: PLC0415

    return open_ask_client(args)


def _progress(args: argparse.Namespace) -> ProgressLine | None:
    """The live line of ``ask`` on a terminal's stderr (edge_agentd.cli.progress), else None."""
    if args.command != "ask" or not sys.stderr.isatty():
        return None
    from edge_agentd.cli.progress import progress_line  # noqa: PLC0415 - only on a terminal

    return progress_line(sys.stderr, args.max_iterations)


def _ask(
    client: Any,
    args: argparse.Namespace,
    seen: list[dict[str, Any]],
    progress: ProgressLine | None,
) -> int:
    if not args.query.strip():
        print("edge-agent: the question is empty", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.max_iterations is not None and args.max_iterations < 1:
        print("edge-agent: --max-iterations must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    key = getattr(args, "key", None)
    if key is not None and not (0 < len(key) <= 128 and key.isprintable()):
        print("edge-agent: --key must be 1-128 printable characters", file=sys.stderr)
        return EXIT_BAD_INPUT
    if progress is not None:
        progress.start()
    try:
        # Ask for the status first, briefly, so a daemon that is not there is told from a slow
        # one (and, on a terminal, one still loading its model from a queue).
        state = client.request("status", timeout=min(args.timeout, 3.0)).get("state")
        if progress is not None:
            progress.daemon_state(state)
        journal = (
            {}
            if getattr(args, "mqtt", None)
            else {"request_id": args.run_id, "key": args.key, "wait": args.wait}
        )
        reply = client.run(
            args.query,
            AskOptions(
                workflow=args.workflow, max_iterations=args.max_iterations, timeout=args.timeout
            ),
            on_event=_on_event(args, seen, progress),
            on_accepted=progress.accepted if progress is not None else None,
            **journal,
        )
    finally:
        if progress is not None:
            progress.close()  # erased before the answer, an error or "interrupted" is printed
    outcome = reply.get("outcome")
    answer = reply.get("answer")
    events = reply.get("state", {}).get("events", [])
    if args.json or args.stream:
        _emit(
            {
                "run_id": reply.get("run_id") or reply.get("id"),
                "query": args.query,
                "answer": answer,
                "outcome": outcome,
                "workflow": reply.get("workflow"),
                "events": events,
                "timing": reply.get("timing"),
            }
        )
    elif outcome == "answered":
        print(answer)
    else:
        print(f"edge-agent: no answer ({outcome}{_detail(events)})", file=sys.stderr)
    if outcome == "answered":
        return EXIT_OK
    last = events[-1] if events else {}
    if last.get("type") == "InterruptedObservation" and last.get("reason") == "deadline":
        return EXIT_TEMPFAIL
    return EXIT_NO_ANSWER


def _on_event(
    args: argparse.Namespace, seen: list[dict[str, Any]], progress: ProgressLine | None
) -> Any:
    """Print each event with --stream; keep them with --json, for the object Ctrl-C prints; and
    move the terminal's progress line."""
    if not (args.stream or args.json or progress is not None):
        return None

    def on_event(event: dict[str, Any]) -> None:
        seen.append(event)
        if args.stream:
            if progress is None:
                _emit(event)
            else:
                with progress.paused():  # stdout and stderr may be the same terminal
                    _emit(event)
        if progress is not None:
            progress.event(event)

    return on_event


def _detail(events: list[dict[str, Any]]) -> str:
    last = events[-1] if events else {}
    for key in ("reason", "feedback", "error", "last_action_summary"):
        if isinstance(last.get(key), str):
            return f": {last[key]}"
    return ""


def _emit(value: Any) -> None:
    import json  # noqa: PLC0415 - only --json and --stream print JSON

    print(json.dumps(value, ensure_ascii=False), flush=True)


def _print_status(status: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _emit(status)
        return
    counters = status.get("counters", {})
    model = status.get("model", {})
    print(f"state:     {status.get('state')}")
    print(f"model:     {model.get('name') or model.get('spec')}")
    print(f"uptime:    {status.get('uptime_s')} s")
    print(
        f"queue:     {status.get('queue_depth')}/{status.get('queue_limit')}"
        f" (running: {_running_text(status.get('running'))})"
    )
    print(f"requests:  {counters.get('requests')}, errors: {counters.get('errors')}")
    workflows = status.get("workflows") or []
    named = f"; workflows: {', '.join(workflows)}" if workflows else ""  # none: no empty list
    print(f"skills:    {status.get('skills')}{named}")
    for problem in status.get("skill_problems", []):
        print(f"problem:   {problem.get('source')}: {problem.get('error')}")


def _running_text(running: Any) -> str:
    """``a zmq run, step 2 of 12, 4.1 s`` (its id too when this connection started it), or
    ``nothing``. An older daemon said only the id, to the run's own connection."""
    if isinstance(running, str):
        return running
    if not isinstance(running, dict):
        return "nothing"
    text = f"a {running.get('source')} run, step {running.get('step')}"
    if running.get("max_iterations"):
        text += f" of {running['max_iterations']}"
    text += f", {running.get('seconds')} s"
    return f"{text} (id {running['id']})" if running.get("id") else text


def _print_skills(skills: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        _emit(skills)
        return
    for entry in skills:
        signature = entry.get("signature") or entry.get("name")
        print(f"{signature}  [{entry.get('source')}, timeout {entry.get('timeout_s')} s]")
        if entry.get("description"):
            print(f"    {entry['description']}")
