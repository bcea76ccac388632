"""JSON as the agent uses it: skill results made JSON-safe, one-line JSON for the prompt,
argument errors in words a small model can act on, and the one walk every reader of a result
takes (:func:`walk`)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError


def format_validation_error(skill_name: str, error: ValidationError) -> str:
    """Name each bad field and what was expected, in words a small model can act on."""
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item.get("loc", ())) or "arguments"
        kind = item.get("type", "")
        if kind == "missing":
            parts.append(f"missing required argument {where!r}")
        elif kind == "extra_forbidden":
            parts.append(f"unexpected argument {where!r}")
        else:
            parts.append(f"argument {where!r}: {item.get('msg', 'invalid')}")
    return f"Bad arguments for skill {skill_name!r}: " + "; ".join(parts) + "."


_INT_MIN, _INT_END = -(2**63), 2**64
"""The integers every consumer of a result takes: msgpack's range (JSON's is wider)."""
MAX_DEPTH = 32
"""Containers deeper than this become a marker string."""


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Make a skill's return value JSON- and msgpack-safe: models and dataclasses are dumped,
    the rest is text.

    Whatever a skill returns comes out as None, a bool, an int in msgpack's 64-bit range, a
    finite float, a str that encodes as UTF-8, or lists and str-keyed dicts of these, at most
    ``MAX_DEPTH`` deep. An int outside that range becomes its decimal text, a lone surrogate
    becomes U+FFFD. It raises :class:`UnshowableValue` for an object (or key) whose ``str``
    raises, and whatever a container raises as it is walked (a ``__iter__`` or ``items`` that
    raises): the agent loop makes either the skill's ToolErrorObservation.
    """
    if value is None or isinstance(value, bool):
        return None if value is None else bool(value)
    if isinstance(value, int):
        value = int(value)
        return value if _INT_MIN <= value < _INT_END else _int_text(value)
    if isinstance(value, str):
        return _utf8(str.__str__(value))
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    if _depth >= MAX_DEPTH:
        return f"<{type(value).__name__} nested more than {MAX_DEPTH} deep>"
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"), _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), _depth + 1)
    if isinstance(value, Mapping):
        return {_key(k): to_jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v, _depth + 1) for v in value]
    return _text(value)


def _int_text(value: int) -> str:
    try:
        return str(value)
    except ValueError:  # past sys.get_int_max_str_digits()
        return f"<an integer of {value.bit_length()} bits>"


def _utf8(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


class UnshowableValue(ValueError):
    """A value whose ``str`` raises: the skill that returned it failed, and the model is told so
    (a ToolErrorObservation) rather than shown a placeholder as if it were the result."""


MAX_REASON_CHARS = 200


def _text(value: object) -> str:
    try:
        text = str(value)
    except Exception as exc:  # noqa: BLE001 - a __str__ that raises, or recurses too deep
        try:
            reason = str(exc)[:MAX_REASON_CHARS]
        except Exception:  # noqa: BLE001 - its error cannot be shown either
            reason = "(its message cannot be shown)"
        kind = f"{type(value).__name__} that cannot be shown: {type(exc).__name__}: {reason}"
        raise UnshowableValue(f"the skill returned a {kind}") from None
    return _utf8(str.__str__(text)) if isinstance(text, str) else f"<{type(value).__name__}>"


def _key(key: object) -> str:
    return _utf8(str.__str__(key)) if isinstance(key, str) else _text(key)


_COMPACT_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str)


def compact_json(value: Any) -> str:
    """One-line JSON as the model reads it: non-ASCII kept, anything odd as its str."""
    return _COMPACT_ENCODER.encode(value)


At = TypeVar("At")


def walk(result: Any, visit: Callable[[Any, At], Sequence[tuple[Any, At]]], at: At) -> None:
    """Walk a JSON result depth first, each part before what it holds and in its order:
    ``visit(node, at)`` reads one part and returns the parts to go on into, each with what it
    is to be read with (its path, its key, whether it is a list's item). A reader that wants
    every part returns :func:`inside`; one that stops at a part returns fewer, or parts of its
    own making. Without recursion: a result of any depth costs no stack."""
    stack: list[tuple[Any, At]] = [(result, at)]
    pop, extend = stack.pop, stack.extend
    while stack:
        node, where = pop()
        parts = visit(node, where)
        if parts:
            extend(parts[::-1])


def inside(node: Any, at: At) -> list[tuple[Any, At]]:
    """What an object or a list holds, each to be read with ``at``, in order; [] for a
    scalar: the parts a reader that wants every part goes on into."""
    if isinstance(node, dict):
        return [(value, at) for value in node.values()]
    if isinstance(node, list):
        return [(item, at) for item in node]
    return []
