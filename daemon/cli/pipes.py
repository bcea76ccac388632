"""A command whose stdout's reader has left ends as a Unix tool does: quietly, exit 141.

Python ignores SIGPIPE, so a write to a closed pipe raises BrokenPipeError wherever it happens,
and a buffered write that only fails when the interpreter flushes at exit prints "Exception
ignored" and exits 120. Each command is run inside :func:`quiet_on_closed_stdout`, which flushes
stdout itself and turns the error into :data:`~edge_agentd.cli.exits.EXIT_BROKEN_PIPE`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from edge_agentd.cli.exits import EXIT_BROKEN_PIPE


def quiet_on_closed_stdout(command: Callable[[], int]) -> int:
    """Run ``command`` and flush stdout; a closed stdout gives 141, never a traceback."""
    try:
        try:
            code = command()
        finally:  # also past SystemExit: argparse's --help and its errors exit from inside
            sys.stdout.flush()
    except BrokenPipeError:
        stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    return code


def stdout_to_devnull() -> None:
    """Point stdout's descriptor at /dev/null, so that nothing printed later (the interpreter's
    last flush, a watchdog's message) meets the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError) as exc:  # no stdout descriptor at all: nothing left to guard
        print(f"edge-agent: stdout closed ({exc})", file=sys.stderr)


__all__ = ["quiet_on_closed_stdout", "stdout_to_devnull"]
