"""How ``edge-agent serve`` logs: a line per record on stderr, ``LEVEL logger: message``.

Under systemd, stderr is the journal's stream, and each line starts with its syslog priority
(``<3>`` for an error, ``<4>`` a warning, ``<6>`` info, ``<7>`` debug), which journald takes off
and stores as the entry's priority (``SyslogLevelPrefix=``, on by default): so
``journalctl -p err -u edge-agent`` finds the errors. Elsewhere the lines carry no prefix.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TextIO

LINE_FORMAT = "%(levelname)s %(name)s: %(message)s"

# syslog(3)'s priorities, from the most severe logging level down.
_PRIORITIES = (
    (logging.CRITICAL, 2),
    (logging.ERROR, 3),
    (logging.WARNING, 4),
    (logging.INFO, 6),
)
_DEBUG_PRIORITY = 7


def syslog_priority(levelno: int) -> int:
    """The syslog priority of a logging level: ``<2>`` crit ... ``<7>`` debug."""
    for threshold, priority in _PRIORITIES:
        if levelno >= threshold:
            return priority
    return _DEBUG_PRIORITY


class JournalFormatter(logging.Formatter):
    """Every line of a record (a traceback's too) led by the record's ``<N>`` priority, since
    journald reads the prefix line by line."""

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{syslog_priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).split("\n"))


def is_journal(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether ``stream`` is the journal stream systemd connected: ``$JOURNAL_STREAM`` names its
    device and inode (sd_journal_stream_fd(3)). A child whose stderr went elsewhere inherits the
    variable but not the stream, and gets plain lines."""
    device, _, inode = environ.get("JOURNAL_STREAM", "").partition(":")
    if not (device.isdigit() and inode.isdigit()):
        return False
    try:
        status = os.fstat(stream.fileno())
    except (OSError, ValueError):  # closed, or no file descriptor (a test's StringIO)
        return False
    return (status.st_dev, status.st_ino) == (int(device), int(inode))


def configure(level: str, environ: Mapping[str, str] | None = None) -> None:
    """The root logger at ``level``, writing to stderr, with ``<N>`` priorities under systemd."""
    handler = logging.StreamHandler(sys.stderr)
    journal = is_journal(sys.stderr, os.environ if environ is None else environ)
    kind = JournalFormatter if journal else logging.Formatter
    handler.setFormatter(kind(LINE_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)


__all__ = ["LINE_FORMAT", "JournalFormatter", "configure", "is_journal", "syslog_priority"]
