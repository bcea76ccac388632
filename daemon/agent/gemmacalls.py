"""Gemma 4's own tool format: declarations, calls and results as its chat template writes them.

The template declares each tool in the system turn as ``<|tool>declaration:NAME{...}<tool|>``
(its ``format_function_declaration`` macro), after the system text and with nothing between
them. The model writes a call as ``<|tool_call>call:NAME{key:value,...}<tool_call|>`` and reads
its result in the same model turn, right after it, as
``<|tool_response>response:NAME{key:value,...}<tool_response|>`` (a result that is not a mapping
is ``{value:...}``); it then writes on in that turn: another call, or the answer as plain text,
which closes it. Values are Gemma's own syntax (:mod:`~edge_agentd.agent.gemmavalues`).
docs/design.md, "Tool formats", says where each detail was found.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from edge_agentd.agent.events import (
    CallSkillAction,
    FinalAnswerAction,
    MadeBy,
    Usage,
    ValidationErrorObservation,
)
from edge_agentd.agent.gemmavalues import (
    QUOTE,
    TOOL_TOKENS,
    GemmaSyntaxError,
    dictsorted,
    gemma_value,
    parse_gemma_dict,
    plain,
)
from edge_agentd.agent.parsing import ACTION_PARSE, parse_action
from edge_agentd.agent.skillspec import Choices, SkillSpec

Parsed = CallSkillAction | FinalAnswerAction | ValidationErrorObservation

CALL_OPEN = "<|tool_call>"
CALL_CLOSE = "<tool_call|>"
CALL_HEAD = CALL_OPEN + "call:"
_NAME = re.compile(r"[^\s{}<>:,]+")
_STANDARD_KEYS = ("description", "type", "properties", "required", "nullable")
_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))


# -- the declarations --------------------------------------------------------------------------


def _declared(schema: Any) -> dict[str, Any]:
    """The parts of a JSON schema the template's declarations write (description, nullable,
    type, enum, properties, required, items), with what it cannot read said its way: an
    ``anyOf`` of one type and null is that type, ``nullable``; an enum or const without a type
    takes its values' (so a skill's choices are declared as the template declares an enum)."""
    node = dict(schema) if isinstance(schema, Mapping) else {}
    for key in ("anyOf", "oneOf"):
        options = node.pop(key, None)
        if isinstance(options, list):
            kept = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
            if len(kept) == 1 and isinstance(kept[0], Mapping):
                node = {**node, **kept[0], "nullable": node.get("nullable") or len(options) > 1}
    declared: dict[str, Any] = {}
    if isinstance(node.get("description"), str) and node["description"]:
        declared["description"] = node["description"]
    kind = node.get("type")
    if isinstance(kind, list):
        named = [k for k in kind if k != "null"]
        node["nullable"] = node.get("nullable") or len(named) < len(kind)
        kind = named[0] if len(named) == 1 else None
    enum = node.get("enum", [node["const"]] if "const" in node else None)
    if kind is None and isinstance(enum, list) and enum:
        kinds = {next((n for t, n in _TYPES if isinstance(v, t)), None) for v in enum}
        kind = kinds.pop() if len(kinds) == 1 else None
    if kind is None and isinstance(node.get("properties"), Mapping):
        kind = "object"
    if node.get("nullable"):
        declared["nullable"] = True
    if isinstance(kind, str):
        declared["type"] = kind
    if isinstance(enum, list) and enum:
        declared["enum"] = list(enum)
    if kind == "object" and isinstance(node.get("properties"), Mapping):
        declared["properties"] = {str(k): _declared(v) for k, v in node["properties"].items()}
        if node.get("required"):
            declared["required"] = [str(r) for r in node["required"]]
    if kind == "array" and isinstance(node.get("items"), Mapping):
        declared["items"] = _declared(node["items"])
    return declared


def _quoted_list(items: Sequence[Any]) -> str:
    return "[" + ",".join(QUOTE + plain(str(i)) + QUOTE for i in items) + "]"


def _parameters(properties: Mapping[str, Any]) -> str:
    """The template's ``format_parameters``: each property but the standard keys, sorted."""
    parts = []
    for key, value in dictsorted(properties):
        if key in _STANDARD_KEYS:
            continue
        node = value if isinstance(value, Mapping) else {}
        said: list[str] = []
        if node.get("description"):
            said.append(f"description:{QUOTE}{plain(str(node['description']))}{QUOTE}")
        if node.get("nullable"):
            said.append("nullable:true")
        kind = str(node.get("type") or "").upper()
        text = ",".join(said)
        if kind == "STRING" and node.get("enum"):
            text += ("," if said else "") + "enum:" + gemma_value(node["enum"], escape_keys=True)
            said.append("enum")
        elif kind == "OBJECT":
            inner = node.get("properties")
            text += ",properties:{" + _parameters(inner if isinstance(inner, Mapping) else node)
            text += "}" + (
                ",required:" + _quoted_list(node["required"]) if node.get("required") else ""
            )
        elif kind == "ARRAY" and isinstance(node.get("items"), Mapping) and node["items"]:
            text += ",items:{" + _items(node["items"]) + "}"
        text += ("," if said else "") + f"type:{QUOTE}{kind}{QUOTE}"
        parts.append(f"{plain(key)}:{{{text}}}")
    return ",".join(parts)


def _items(items: Mapping[str, Any]) -> str:
    parts = []
    for key, value in dictsorted(items):
        if value is None:
            continue
        if key == "properties":
            inner = _parameters(value) if isinstance(value, Mapping) else ""
            parts.append("properties:{" + inner + "}")
        elif key == "required":
            parts.append("required:" + _quoted_list(value))
        elif key == "type":
            upper = value.upper() if isinstance(value, str) else [str(v).upper() for v in value]
            parts.append("type:" + gemma_value(upper, escape_keys=True))
        else:
            parts.append(f"{plain(key)}:" + gemma_value(value, escape_keys=True))
    return ",".join(parts)


def declaration(tool: Mapping[str, Any]) -> str:
    """One tool as the template's ``format_function_declaration`` writes it."""
    function = tool["function"]
    text = f"declaration:{function['name']}{{description:{QUOTE}"
    text += plain(str(function.get("description", ""))) + QUOTE
    params = function.get("parameters")
    if params:
        text += ",parameters:{"
        if params.get("properties"):
            text += "properties:{" + _parameters(params["properties"]) + "},"
        if params.get("required"):
            text += "required:" + _quoted_list(params["required"]) + ","
        if params.get("type"):
            text += f"type:{QUOTE}{str(params['type']).upper()}{QUOTE}}}"
    return (text + "}").strip()


# -- the format ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class GemmaCalls:
    """Gemma 4's tool format (:class:`~edge_agentd.agent.actions.ToolFormat`)."""

    name: str = "gemma4"

    @property
    def in_model_turn(self) -> bool:
        return True

    @property
    def catalogue_last(self) -> bool:
        return True

    @property
    def tokens(self) -> tuple[str, ...]:
        return TOOL_TOKENS

    def plain(self, text: str) -> str:
        return plain(text)

    def tools(
        self, skills: Sequence[SkillSpec], choices: Mapping[str, Choices]
    ) -> list[dict[str, Any]]:
        """The skills as the tools a caller of the template passes it."""
        return [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": _declared(spec.schema_with(choices.get(spec.name, ()))),
                },
            }
            for spec in skills
        ]

    def catalogue(self, skills: Sequence[SkillSpec], choices: Mapping[str, Choices]) -> str:
        return "".join(f"<|tool>{declaration(t)}<tool|>" for t in self.tools(skills, choices))

    def call_text(self, name: str, arguments: Mapping[str, Any]) -> str:
        members = ",".join(f"{plain(k)}:{gemma_value(v)}" for k, v in dictsorted(arguments))
        return f"{CALL_HEAD}{name}{{{members}}}{CALL_CLOSE}"

    def response(self, skill_name: str, result: Any, shown: str) -> str:
        body = gemma_value(result if isinstance(result, Mapping) else {"value": result})
        return f"<|tool_response>response:{skill_name}{body}<tool_response|>"

    def error_response(self, skill_name: str, error: str, available: Sequence[str]) -> str:
        return self.response(
            skill_name,
            {"error": f"Error from {skill_name}: {error}", "available_skills": list(available)},
            "",
        )

    def parse(
        self,
        raw: str,
        available_skills: Collection[str],
        usage: Usage | None = None,
        *,
        made_by: MadeBy = "model",
        call_id: str | None = None,
    ) -> Parsed:
        """One reply as the seed's parser would read the same action written as JSON: a call
        opened by ``<|tool_call>``, else plain text that is the answer. ``raw`` stays the
        reply."""
        if usage is not None and usage.stop == "length":
            return _error("truncated", "Your reply was cut off at the token limit.", raw, usage)
        text = raw.strip()
        if not text.startswith(CALL_OPEN):
            as_json = json.dumps({"final_answer": text}, ensure_ascii=False)
            return _as_raw(parse_action(as_json, available_skills, usage, made_by=made_by), raw)
        try:
            name, arguments = _call_of(text)
        except (GemmaSyntaxError, RecursionError) as exc:
            return _error("json_syntax", f"Your tool call is not valid ({exc}).", raw, usage)
        as_json = json.dumps({"skill_name": name, "arguments": arguments}, ensure_ascii=False)
        parsed = parse_action(as_json, available_skills, usage, made_by=made_by, call_id=call_id)
        return _as_raw(parsed, raw)

    def answer_text(self, sentence: str) -> str:
        return sentence

    def answer_of(self, reply: str) -> str | None:
        text = reply.strip()
        return None if text.startswith(CALL_OPEN) else text

    @property
    def redo(self) -> str:
        return (
            f"Redo your last action: one tool call, {CALL_HEAD}name{{argument:value,...}}"
            f"{CALL_CLOSE} with each text between {QUOTE} and {QUOTE}, or the answer in plain "
            "words."
        )


def _call_of(text: str) -> tuple[str, dict[str, Any]]:
    """The skill name and arguments of a reply that opens with ``<|tool_call>``."""
    if not text.startswith(CALL_HEAD):
        raise GemmaSyntaxError(f"expected 'call:' after {CALL_OPEN}", len(CALL_OPEN))
    name = _NAME.match(text, len(CALL_HEAD))
    if name is None:
        raise GemmaSyntaxError("expected the skill's name after 'call:'", len(CALL_HEAD))
    arguments, end = parse_gemma_dict(text, name.end())
    if not text.startswith(CALL_CLOSE, end):
        raise GemmaSyntaxError(f"expected {CALL_CLOSE} to close the call", end)
    if text[end + len(CALL_CLOSE) :].strip():
        raise GemmaSyntaxError("the reply goes on after the call", end + len(CALL_CLOSE))
    return name.group(), arguments


def _error(error_type: str, feedback: str, raw: str, usage: Usage | None) -> Parsed:
    return ValidationErrorObservation(
        validator_name=ACTION_PARSE, error_type=error_type, feedback=feedback, raw=raw, usage=usage
    )


def _as_raw(parsed: Parsed, raw: str) -> Parsed:
    return parsed.model_copy(update={"raw": raw})


GEMMA4_CALLS = GemmaCalls()
"""Gemma 4's tool format in its chat template's own words."""

__all__ = ["CALL_CLOSE", "CALL_HEAD", "CALL_OPEN", "GEMMA4_CALLS", "GemmaCalls", "declaration"]
