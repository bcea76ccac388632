"""``edge-agent``: serve the daemon, or ask it something from a shell.

Exit codes of ``ask`` (and ``status``/``skills`` where they apply): 0 answered; 1 no answer (max
iterations, retries exhausted, cancelled, or the daemon failed the run; ``result`` of an id the
journal does not keep); 65 bad input (including a
malformed endpoint, and a ``--key`` another question holds); 69 the daemon is unavailable; 75
busy, shutting down, or out of time (the whole command ends within ``--timeout`` plus a few
seconds, whatever happens); 130 Ctrl-C (the run is cancelled too). ``serve`` exits 0 after a
clean shutdown, 1 on an unexpected failure, 65 on a bad option, 69 when another daemon holds the
endpoint (or another program the ``[mcp]`` port), 78 on a config error or a model that cannot be
loaded. ``triggers`` exits as ``status``; ``watch`` exits 0 on Ctrl-C; ``mcp`` (stdio) exits 0
when its client closes stdin, 65 on a bad endpoint, 78 without the ``mcp`` extra or on a config
error. Every command exits 65 on a bad option, and 141 when the reader of its stdout has gone
(``status | head -1``), quietly (README.md, "Exit codes").
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from edge_agentd.cli.exits import EXIT_BAD_INPUT
from edge_agentd.cli.pipes import quiet_on_closed_stdout
from edge_agentd.cli.seconds import positive_seconds


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


CLIENT_COMMANDS = ("ask", "status", "skills", "result", "runs", "triggers", "watch")


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or only the one named (argparse spends a few ms per command, which
    ``ask``, ``status`` and ``skills`` need not pay at start)."""
    # The docstring's first line, as a person reads it on a terminal (no reStructuredText).
    parser = _Parser(prog="edge-agent", description=__doc__.split("\n")[0].replace("``", ""))
    commands = parser.add_subparsers(dest="command", required=True)
    parser.set_defaults(commands=commands)  # for _unknown_options: the command's own usage
    endpoint_help = (
        "daemon endpoint (default: $EDGE_AGENT_ENDPOINT, else your own daemon's ipc socket, "
        "else the service's /run/edge-agent/agent.sock)"
    )

    from edge_agentd.cli.mqttargs import add_ask_arguments, add_parsers  # noqa: PLC0415

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
        sub.add_argument(
            "--timeout", type=positive_seconds, default=5.0, help="seconds (default 5)"
        )
        sub.add_argument("--endpoint", help=endpoint_help)
    if only in (None, "triggers", "watch"):
        from edge_agentd.cli.triggers import add_parsers as add_trigger_parsers  # noqa: PLC0415

        add_trigger_parsers(commands, endpoint_help)  # triggers, watch
    if only in (None, "result", "runs"):
        from edge_agentd.cli.runs import add_parsers as add_journal_parsers  # noqa: PLC0415

        add_journal_parsers(commands, endpoint_help, only)
    if only is None:
        add_parsers(commands)  # nodes, ha-discovery
        from edge_agentd.cli.mcp import add_parser as add_mcp_parser  # noqa: PLC0415

        add_mcp_parser(commands, endpoint_help)  # mcp (docs/mcp.md)
    return parser


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser("serve", help="load the model and answer requests")
    serve.add_argument("--config", help="TOML config file (see systemd/config.example.toml)")
    serve.add_argument("--model", help="default | PATH.gguf | mock:FILE.json (overrides config)")
    serve.add_argument(
        "--endpoint", action="append", help="bind here (repeatable; overrides config)"
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="the sensor skills read a simulated Raspberry Pi (for a machine with no sensors)",
    )
    serve.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,  # `debug` as well as `DEBUG`
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the least severe records logged (default INFO)",
    )


def _add_ask(commands: Any, endpoint_help: str) -> None:
    ask = commands.add_parser("ask", help="ask the daemon a question")
    ask.add_argument("query")
    ask.add_argument(
        "--json", action="store_true", help="print one JSON object: answer, outcome, events"
    )
    ask.add_argument(
        "--stream",
        action="store_true",
        help="print JSON lines only: each event as it happens, then the --json object last",
    )
    ask.add_argument(
        "--timeout",
        type=positive_seconds,
        default=60.0,
        help="seconds the run may take, its deadline (default 60)",
    )
    ask.add_argument(
        "--wait",
        type=positive_seconds,
        help="stop waiting after this many seconds (exit 75; default: --timeout). With --key the "
        "run goes on to its --timeout: ask again with the same --key and question, or "
        "`edge-agent result ID`, for its answer",
    )
    ask.add_argument("--workflow", help="a workflow named in the daemon's config")
    ask.add_argument(
        "--max-iterations", type=int, help="at most this many steps (capped by the daemon)"
    )
    ask.add_argument(
        "--key",
        help="an idempotency key (1-128 printable characters): a second ask with the same key "
        "and question gets the first run's result, never a second run; with another question, "
        "key_conflict (exit 65)",
    )
    ask.add_argument("--endpoint", help=endpoint_help)


def _unknown_options(args: argparse.Namespace, unknown: list[str]) -> NoReturn:
    """Exit 65 with the command's own usage, naming what it does not take and the option
    closest to each (``ask --jsn``: did you mean --json?); argparse alone would show the
    top-level usage, which says nothing of the command's options."""
    import difflib  # noqa: PLC0415 - only on a mistake

    sub: argparse.ArgumentParser = args.commands.choices[args.command]
    known = [name for action in sub._actions for name in action.option_strings]
    hints = [
        f"{word} (did you mean {close[0]}?)" if close else word
        for word in unknown
        for close in [difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.6)]
    ]
    sub.error(f"unrecognized arguments: {' '.join(hints)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a reader that left stdout ends it quietly (README.md, "Exit codes")."""
    return quiet_on_closed_stdout(lambda: _command(argv))


def _command(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    first = words[0] if words else None
    parser = _parser(first if first in CLIENT_COMMANDS else None)
    args, unknown = parser.parse_known_args(words)
    if unknown:
        _unknown_options(args, unknown)
    if args.command == "serve":
        from edge_agentd.cli.serve import serve  # noqa: PLC0415

        return serve(args)
    if args.command == "nodes":
        from edge_agentd.cli.mqtt import nodes_command  # noqa: PLC0415

        return nodes_command(args)
    if args.command == "ha-discovery":
        from edge_agentd.cli.mqtt import ha_discovery_command  # noqa: PLC0415

        return ha_discovery_command(args)
    if args.command in ("triggers", "watch"):
        from edge_agentd.cli.triggers import triggers_command  # noqa: PLC0415

        return triggers_command(args)
    if args.command == "mcp":
        from edge_agentd.cli.mcp import mcp_command  # noqa: PLC0415

        return mcp_command(args)
    if args.command in ("result", "runs"):
        from edge_agentd.cli.runs import journal_command  # noqa: PLC0415

        return journal_command(args)
    from edge_agentd.cli.ask import client_command  # noqa: PLC0415

    return client_command(args)
