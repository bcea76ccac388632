"""``edge-agent``: serve the daemon, or ask it something from a shell.

Exit codes of ``ask`` (and ``status``/``skills`` where they apply): 0 answered; 1 no answer (max
iterations, retries exhausted, cancelled, or the daemon failed the run); 65 bad input (including a
malformed endpoint); 69 the daemon is unavailable; 75 busy, shutting down, or out of time (the whole
command ends within ``--timeout`` plus a few seconds, whatever happens); 130 Ctrl-C (the run is
cancelled too). ``serve`` exits 0 after a clean shutdown, 1 on an unexpected failure, 69 when
another daemon holds the endpoint, 78 on a config error or a model that cannot be loaded.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from edge_agent.progress import ProgressLine

EXIT_OK = 0
EXIT_NO_ANSWER = 1
EXIT_BAD_INPUT = 65
EXIT_UNAVAILABLE = 69
EXIT_TEMPFAIL = 75
EXIT_CONFIG = 78
EXIT_INTERRUPTED = 130

COMMAND_SLACK_S = 1.0
"""Past its timeouts (and a run's grace), a client command is ended by a watchdog."""

_CODE_EXITS = {
    "bad_endpoint": EXIT_BAD_INPUT,
    "bad_request": EXIT_BAD_INPUT,
    "too_large": EXIT_BAD_INPUT,
    "unsupported_version": EXIT_BAD_INPUT,
    "busy": EXIT_TEMPFAIL,
    "deadline": EXIT_TEMPFAIL,
    "shutting_down": EXIT_TEMPFAIL,
    "timeout": EXIT_TEMPFAIL,
    "unavailable": EXIT_UNAVAILABLE,
}


class _Parser(argparse.ArgumentParser):
    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse's own sizes the help with shutil.get_terminal_size(), and importing shutil
        # (bz2, lzma...) costs every command a few ms at start; this is the same width.
        try:
            columns = int(os.environ.get("COLUMNS", "")) or os.get_terminal_size().columns
        except (ValueError, OSError):
            columns = 80
        return argparse.HelpFormatter(prog=self.prog, width=columns - 2)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError("must be between 0 and 86400 seconds")
    return value


CLIENT_COMMANDS = ("ask", "status", "skills")


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or only the one named (argparse spends a few ms per command, which
    ``ask``, ``status`` and ``skills`` need not pay at start)."""
    parser = _Parser(prog="edge-agent", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    endpoint_help = (
        "daemon endpoint (default: $EDGE_AGENT_ENDPOINT, else your own daemon's ipc socket, "
        "else the service's /run/edge-agent/agent.sock)"
    )

    from edge_agent.mqttargs import add_ask_arguments, add_parsers  # noqa: PLC0415

    if only is None:
        _add_serve(commands)
    if only in (None, "ask"):
        _add_ask(commands, endpoint_help)
        add_ask_arguments(commands.choices["ask"])  # --mqtt HOST --node NAME (docs/mqtt.md)
    for name, text in (("status", "show the daemon's state"), ("skills", "list the skills")):
        if only not in (None, name):
            continue
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--json", action="store_true", help="print JSON")
        sub.add_argument("--timeout", type=_positive, default=5.0, help="seconds (default 5)")
        sub.add_argument("--endpoint", help=endpoint_help)
    if only is None:
        add_parsers(commands)  # nodes, ha-discovery
    return parser


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser("serve", help="load the model and answer requests")
    serve.add_argument("--config", help="TOML config file (see systemd/config.example.toml)")
    serve.add_argument("--model", help="default | PATH.gguf | mock:FILE.json (overrides config)")
    serve.add_argument(
        "--endpoint", action="append", help="bind here (repeatable; overrides config)"
    )
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def _add_ask(commands: Any, endpoint_help: str) -> None:
    ask = commands.add_parser("ask", help="ask the daemon a question")
    ask.add_argument("query")
    ask.add_argument(
        "--json", action="store_true", help="print one JSON object: answer, outcome, events"
    )
    ask.add_argument(
        "--stream", action="store_true", help="print each event as a JSON line as it happens"
    )
    ask.add_argument("--timeout", type=_positive, default=60.0, help="seconds (default 60)")
    ask.add_argument("--workflow", help="a workflow named in the daemon's config")
    ask.add_argument(
        "--max-iterations", type=int, help="at most this many steps (capped by the daemon)"
    )
    ask.add_argument("--endpoint", help=endpoint_help)


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    first = words[0] if words else None
    args = _parser(first if first in CLIENT_COMMANDS else None).parse_args(words)
    if args.command == "serve":
        return _serve(args)
    if args.command == "nodes":
        from edge_agent.mqttclient import nodes_command  # noqa: PLC0415

        return nodes_command(args)
    if args.command == "ha-discovery":
        from edge_agent.service.mqtt.wiring import ha_discovery_command  # noqa: PLC0415

        return ha_discovery_command(args)
    return _client_command(args)


# -- serve ------------------------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    import logging  # noqa: PLC0415 - the client commands start without it
    import signal  # noqa: PLC0415

    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("edge_agent.cli")
    from edge_agent.endpoints import EndpointError, EndpointInUse  # noqa: PLC0415
    from edge_agent.service.assembly import assemble  # noqa: PLC0415
    from edge_agent.service.config import ConfigError  # noqa: PLC0415
    from edge_agent.service.mqtt.wiring import bridge_endpoint, make_bridge  # noqa: PLC0415

    try:
        server = assemble(args.config, model=args.model, endpoints=args.endpoint)
        bridge = make_bridge(server.settings, server.options.registry)  # None without [mqtt]
    except ConfigError as exc:
        log.error("config error: %s", exc)
        return EXIT_CONFIG
    try:
        bound = server.bind()
    except EndpointInUse as exc:
        log.error("%s", exc)
        return EXIT_UNAVAILABLE
    except EndpointError as exc:
        log.error("%s", exc)
        return EXIT_CONFIG
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.stop())
    # SIGHUP (a closed terminal, a stray `kill -HUP`, a reload habit) would end the daemon by
    # default and lose the runs it accepted. It is ignored: the config is read at start only.
    signal.signal(
        signal.SIGHUP,
        lambda *_: log.warning("SIGHUP ignored: the config is read at start; restart to apply it"),
    )
    # Not "listening": the daemon is not ready until the model has loaded ("model ... ready").
    log.info(
        "edge-agent: loading model %s; %s answers `loading` until then",
        server.options.model_spec,
        ", ".join(bound),
    )
    if bridge is not None:
        server.options.mqtt_status = bridge.status
        bridge.start(bridge_endpoint(bound))
    code = server.serve()
    if bridge is not None:
        bridge.stop()  # passes on the daemon's last replies, then says offline
    log.info("edge-agent stopped")
    # Interpreter shutdown joins every non-daemon thread: a plugin's (started at import or by a
    # skill) would keep a stopped daemon alive for ever, and a run stuck in native code would
    # make shutdown wait on it or crash under it. Every client has had its reply by now, so
    # leave at once instead (docs/skills.md, "When a plugin is broken").
    left = [
        thread.name
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and thread.is_alive() and not thread.daemon
    ]
    if server.worker_alive or left:
        if server.worker_alive:
            log.warning("a run did not return in time; exiting without waiting for it")
        if left:
            log.warning("exiting without waiting for threads left running: %s", ", ".join(left))
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


# -- the client commands ------------------------------------------------------------------------


def _client_command(args: argparse.Namespace) -> int:
    from edge_agent.client import RUN_GRACE_S, Client, DaemonError  # noqa: PLC0415

    endpoint = args.endpoint or os.environ.get("EDGE_AGENT_ENDPOINT") or None
    as_json = bool(getattr(args, "json", False))
    seen: list[dict[str, Any]] = []  # the events of an ask so far, for an interrupted --json
    # status/skills try twice within --timeout; a run's reply may trail its deadline by the grace.
    per_try = args.timeout if args.command == "ask" else args.timeout / 2
    bound = args.timeout + (RUN_GRACE_S if args.command == "ask" else 0.0) + COMMAND_SLACK_S
    progress = _progress(args)
    _watchdog(bound, as_json, progress)
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
                    "id": None,
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
        code = _CODE_EXITS.get(exc.code, EXIT_NO_ANSWER)
        if as_json:
            _emit(
                {
                    "answer": None,
                    "outcome": None,
                    "error": {"code": exc.code, "message": exc.message},
                }
            )
        print(f"edge-agent: {exc.code}: {exc.message}", file=sys.stderr)
        return code


def _watchdog(seconds: float, as_json: bool, progress: ProgressLine | None = None) -> None:
    """End the process after ``seconds`` with 75, whatever the command is waiting on."""

    def expire() -> None:
        if progress is not None:
            progress.close()
        message = f"the command did not finish within {seconds:g} s"
        if as_json:
            error = {"code": "timeout", "message": message}
            _emit({"answer": None, "outcome": None, "error": error})
        print(f"edge-agent: timeout: {message}", file=sys.stderr, flush=True)
        os._exit(EXIT_TEMPFAIL)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def _mqtt_client(args: argparse.Namespace) -> Any:
    from edge_agent.mqttclient import open_ask_client  # noqa: PLC0415

    return open_ask_client(args)


def _progress(args: argparse.Namespace) -> ProgressLine | None:
    """The live line of ``ask`` on a terminal's stderr (edge_agent.progress), else None."""
    if args.command != "ask" or not sys.stderr.isatty():
        return None
    from edge_agent.progress import progress_line  # noqa: PLC0415 - only on a terminal

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
    if progress is not None:
        progress.start()
    try:
        # Ask for the status first, briefly, so a daemon that is not there is told from a slow
        # one (and, on a terminal, one still loading its model from a queue).
        state = client.request("status", timeout=min(args.timeout, 3.0)).get("state")
        if progress is not None:
            progress.daemon_state(state)
        reply = client.run(
            args.query,
            workflow=args.workflow,
            max_iterations=args.max_iterations,
            timeout=args.timeout,
            on_event=_on_event(args, seen, progress),
            on_accepted=progress.accepted if progress is not None else None,
        )
    finally:
        if progress is not None:
            progress.close()  # erased before the answer, an error or "interrupted" is printed
    outcome = reply.get("outcome")
    answer = reply.get("answer")
    events = reply.get("state", {}).get("events", [])
    if args.json:
        _emit(
            {
                "id": reply.get("id"),
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
        f" (running: {status.get('running') or 'nothing'})"
    )
    print(f"requests:  {counters.get('requests')}, errors: {counters.get('errors')}")
    print(f"skills:    {status.get('skills')}; workflows: {', '.join(status.get('workflows', []))}")
    for problem in status.get("skill_problems", []):
        print(f"problem:   {problem.get('source')}: {problem.get('error')}")


def _print_skills(skills: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        _emit(skills)
        return
    for entry in skills:
        signature = entry.get("signature") or entry.get("name")
        print(f"{signature}  [{entry.get('source')}, timeout {entry.get('timeout_s')} s]")
        if entry.get("description"):
            print(f"    {entry['description']}")


if __name__ == "__main__":
    sys.exit(main())
