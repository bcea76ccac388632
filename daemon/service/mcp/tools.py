"""What the Model Context Protocol server offers, as plain maps: a tool per skill, ``ask`` and
``result``; their input schemas made safe for Home Assistant; and each answer's one-line text.

Nothing here imports the ``mcp`` SDK: the tool list and its schemas are tested without it.

Home Assistant converts every tool's input schema with ``voluptuous-openapi`` and drops the whole
list when one fails, so :func:`ha_schema` rewrites what that converter refuses (no ``type``,
``allOf``, ``multipleOf``, ``uniqueItems``, an array without ``items``, ``$ref``) into what it
takes, looser where it must be: the daemon checks every call's arguments against the skill's own
schema anyway, and answers a bad one with a tool error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from edge_agentd.agent.resultlines import result_lines

ASK: Final = "ask"
RESULT: Final = "result"
MAX_TEXT_CHARS: Final = 600
MAX_DEPTH: Final = 12
MAX_DESCRIPTION_CHARS: Final = 1000
_DROPPED: Final = ("multipleOf", "uniqueItems", "$defs", "definitions", "prefixItems", "not")
ANY_VALUE: Final[dict[str, Any]] = {
    "anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "object", "additionalProperties": True},
        {"type": "array", "items": {"type": "string"}},
        {"type": "null"},
    ]
}
"""Any JSON value, in the words ``voluptuous-openapi`` understands (an array's items aside)."""
_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def ha_schema(schema: Any) -> dict[str, Any]:
    """``schema`` as an object schema Home Assistant's converter takes (see the module)."""
    safe = _safe(schema, schema if isinstance(schema, dict) else {}, 0)
    if safe.get("type") != "object":
        return {"type": "object", "properties": {}, "additionalProperties": False}
    return safe


def _resolve(ref: Any, root: Mapping[str, Any]) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _safe(schema: Any, root: Mapping[str, Any], depth: int) -> dict[str, Any]:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return dict(ANY_VALUE)
    if "$ref" in schema:
        target = _resolve(schema["$ref"], root)
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return _safe({**(target if isinstance(target, Mapping) else {}), **rest}, root, depth + 1)
    node = {k: v for k, v in schema.items() if k not in _DROPPED}
    if "allOf" in node:
        parts = node.pop("allOf")
        merged: dict[str, Any] = {}
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, Mapping):
                merged.update(_safe(part, root, depth + 1))
        node = {**merged, **node}
    if isinstance(node.get("enum"), list):
        return {"enum": node["enum"], **_described(node)}
    node.pop("enum", None)
    if "const" in node and "type" not in node:
        return {"enum": [node["const"]], **_described(node)}
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = node[key]
            if not isinstance(options, list) or not options:
                return {**ANY_VALUE, **_described(node)}
            return {key: [_safe(option, root, depth + 1) for option in options], **_described(node)}
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = list(dict.fromkeys(k for k in kind if isinstance(k, str) and k in _TYPES))
        if not kinds:
            return {**ANY_VALUE, **_described(node)}
        return {"anyOf": [_safe({**node, "type": k}, root, depth + 1) for k in kinds]}
    if not isinstance(kind, str) or kind not in _TYPES:
        return {**ANY_VALUE, **_described(node)}
    if kind == "array":
        node["items"] = _safe(node.get("items"), root, depth + 1)
    elif kind == "object":
        properties = node.get("properties")
        node["properties"] = (
            {str(k): _safe(v, root, depth + 1) for k, v in properties.items()}
            if isinstance(properties, Mapping)
            else {}
        )
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            node["additionalProperties"] = _safe(extra, root, depth + 1)
        elif extra is not None and not isinstance(extra, bool):
            node.pop("additionalProperties")
        required = node.get("required")
        if required is not None:
            node["required"] = (
                [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
            )
        node.pop("anyOf", None)
    return _clean(node)


def _clean(node: dict[str, Any]) -> dict[str, Any]:
    """The bounds and words of a typed node that the converter reads, each dropped when it is not
    of the kind it expects (a pattern that does not compile, a bound that is not a number)."""
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        value = node.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            node.pop(key)
    for key in ("minimum", "maximum"):
        value = node.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            node.pop(key)
    for key in ("format", "description", "title"):
        if key in node and not isinstance(node[key], str):
            node.pop(key)
    if "nullable" in node and not isinstance(node["nullable"], bool):
        node.pop("nullable")
    pattern = node.get("pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, TypeError, ValueError, RecursionError, OverflowError):
            node.pop("pattern")
    return node


def _described(node: Mapping[str, Any]) -> dict[str, Any]:
    text = node.get("description")
    return {"description": text} if isinstance(text, str) else {}


def skill_tools(
    skills: Iterable[Mapping[str, Any]], allowed: Iterable[str] | None
) -> list[dict[str, Any]]:
    """One tool per skill of a ``skills`` reply (``allowed`` only, when given), as maps with
    ``name``, ``description`` and ``inputSchema``."""
    wanted = None if allowed is None else set(allowed)
    tools = []
    for skill in skills:
        name = str(skill.get("name", ""))
        if not name or name in (ASK, RESULT) or (wanted is not None and name not in wanted):
            continue
        description = str(skill.get("description") or f"The skill {name}.")
        tools.append(
            {
                "name": name,
                "description": description[:MAX_DESCRIPTION_CHARS],
                "inputSchema": ha_schema(skill.get("parameters")),
            }
        )
    return tools


def model_tools(default_wait_s: float) -> list[dict[str, Any]]:
    """``ask`` and ``result``: the on-device model's answer, grounded as every run is."""
    return [
        {
            "name": ASK,
            "description": (
                "Ask the device's own model a question about this device (its sensors, clock, "
                "system); it answers only from its skills' results. Takes seconds on a small "
                f"computer: it waits up to wait_s (default {default_wait_s:g}) and otherwise "
                "returns the run's id, and the run goes on: fetch it later with `result`."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "question": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 4000,
                        "description": "The question, in English.",
                    },
                    "wait_s": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 3600,
                        "description": "How long to wait for the answer, in seconds.",
                    },
                    "key": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 128,
                        "description": "An idempotency key: the same key asks only once.",
                    },
                },
                "required": ["question"],
                "additionalProperties": False,
            },
        },
        {
            "name": RESULT,
            "description": (
                "The answer of a question asked earlier with `ask`, by its run id or its key."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "run_id": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 128,
                        "description": "The run id `ask` returned.",
                    },
                    "key": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 128,
                        "description": "Or the key the question was asked with.",
                    },
                    "wait_s": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 3600,
                        "description": "How long to wait for the run to end, in seconds.",
                    },
                },
                "additionalProperties": False,
            },
        },
    ]


def one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_TEXT_CHARS else flat[: MAX_TEXT_CHARS - 1] + "…"


def skill_text(skill: str, result: Any) -> str:
    """A skill's result in one line a person reads: its result lines, ``; `` between."""
    lines = result_lines(result)
    body = "; ".join(lines) if lines else json.dumps(result, ensure_ascii=False)
    return one_line(f"{skill}: {body}")


def structured(result: Any) -> dict[str, Any]:
    """Structured content must be a JSON object: a result that is not one is wrapped."""
    return dict(result) if isinstance(result, dict) else {"result": result}


__all__ = [
    "ANY_VALUE",
    "ASK",
    "RESULT",
    "ha_schema",
    "model_tools",
    "one_line",
    "skill_text",
    "skill_tools",
    "structured",
]
