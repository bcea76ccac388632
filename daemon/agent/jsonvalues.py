"""JSON as the agent uses it: skill results made JSON-safe, one-line JSON for the prompt, and
argument errors in words a small model can act on."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

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


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Make a skill's return value JSON-safe: models and dataclasses are dumped, the rest is str."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if _depth > 32:
        return str(value)
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"), _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), _depth + 1)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v, _depth + 1) for v in value]
    return str(value)


_COMPACT_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str)


def compact_json(value: Any) -> str:
    """One-line JSON as the model reads it: non-ASCII kept, anything odd as its str."""
    return _COMPACT_ENCODER.encode(value)
