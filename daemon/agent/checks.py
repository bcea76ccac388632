"""The one check every count a caller passes goes through (iterations, retries, sizes)."""

from __future__ import annotations


def check_count(name: str, value: object, minimum: int = 1) -> int:
    """``value`` when it is an int of at least ``minimum``; TypeError or ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value
