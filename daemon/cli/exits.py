"""The exit codes of ``edge-agent`` (sysexits.h where one fits), shared by its commands."""

from __future__ import annotations

EXIT_OK = 0
EXIT_NO_ANSWER = 1
EXIT_BAD_INPUT = 65
EXIT_UNAVAILABLE = 69
EXIT_TEMPFAIL = 75
EXIT_CONFIG = 78
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""The reader of stdout left (``edge-agent status | head -1``): what a shell reports for a tool
that SIGPIPE ended, 128 + 13, said quietly."""

COMMAND_SLACK_S = 1.0
"""Past its timeouts (and a run's grace), a client command is ended by a watchdog."""

CODE_EXITS = {
    "bad_endpoint": EXIT_BAD_INPUT,
    "bad_request": EXIT_BAD_INPUT,
    "too_large": EXIT_BAD_INPUT,
    "unsupported_version": EXIT_BAD_INPUT,
    "key_conflict": EXIT_BAD_INPUT,
    "busy": EXIT_TEMPFAIL,
    "deadline": EXIT_TEMPFAIL,
    "shutting_down": EXIT_TEMPFAIL,
    "timeout": EXIT_TEMPFAIL,
    "unavailable": EXIT_UNAVAILABLE,
    "no_journal": EXIT_UNAVAILABLE,
    "not_found": EXIT_NO_ANSWER,
}
