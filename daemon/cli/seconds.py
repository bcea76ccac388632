"""The ``--timeout`` and ``--wait`` options' type, shared by every command's parser.

A module of its own so that main.py, which builds the parser, and the command modules it imports
lazily (journal.py, triggers.py) each import it, not one another.
"""

from __future__ import annotations

import argparse

MAX_SECONDS = 86400


def positive_seconds(text: str) -> float:
    """``text`` as a number of seconds in (0, 86400], else the error argparse reports."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_SECONDS} seconds")
    return value


__all__ = ["MAX_SECONDS", "positive_seconds"]
