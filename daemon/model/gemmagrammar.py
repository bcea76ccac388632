"""The grammar of an action spoken in Gemma 4's tool format.

The loop hands the model one JSON schema of an action whatever the format (see
:mod:`~edge_agentd.model.toolgrammar`). In Gemma 4's format a call is
``<|tool_call>call:NAME{key:value,...}<tool_call|>`` with the values in Gemma's own syntax, so
the calls' schema is not converted as JSON: each skill's arguments become a rule of their own,
written as the template writes them (:func:`~edge_agentd.agent.gemmavalues.gemma_value`): the
keys in its order, a string between ``<|"|>`` tokens, a choice as one of its values, numbers,
``true``/``false``, nested ``{}`` and ``[]``. The answer is converted as raw text, as for any
tagged format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edge_agentd.agent.gemmacalls import CALL_CLOSE, CALL_HEAD
from edge_agentd.agent.gemmavalues import dictsorted, gemma_value, plain
from edge_agentd.model.constrained import GrammarError, inline_refs
from edge_agentd.model.toolgrammar import answer_rule, gbnf_literal, renamed

_VALUES = r"""g-string ::= "<|\"|>" g-char* "<|\"|>"
g-char ::= [^<\x00] | "<" [^|\x00]
g-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
g-number ::= g-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
g-boolean ::= "true" | "false"
g-null ::= "None"
g-value ::= g-string | g-number | g-boolean | g-null | g-dict | g-array
g-dict ::= "{" (g-member ("," g-member)*)? "}"
g-member ::= g-key ":" g-value
g-key ::= [A-Za-z_] [A-Za-z0-9_]*
g-array ::= "[" (g-value ("," g-value)*)? "]"
"""
"""Any value, and the values of each JSON type: a string holds no ``<|`` (so no token of the
tool blocks), ``None`` is how the template writes null."""

_BY_TYPE = {
    "string": "g-string",
    "integer": "g-integer",
    "number": "g-number",
    "boolean": "g-boolean",
    "null": "g-null",
}


class _Rules:
    """The rules of the values one action's calls may hold, by their schemas."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, body: str) -> str:
        name = f"g-v{len(self.lines)}"
        self.lines.append(f"{name} ::= {body}\n")
        return name

    def of(self, schema: Any) -> str:
        """A GBNF expression for the values of ``schema``."""
        if not isinstance(schema, Mapping):
            return "g-value"
        if "const" in schema:
            return gbnf_literal(gemma_value(schema["const"]))
        if isinstance(schema.get("enum"), list):
            if not schema["enum"]:
                raise GrammarError("an argument's list of values is empty")
            return self.add(" | ".join(gbnf_literal(gemma_value(v)) for v in schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return self.add(" | ".join(self.of(option) for option in schema[key]))
        kind = schema.get("type")
        if isinstance(kind, list) and kind:
            return self.add(" | ".join(self.of({**schema, "type": k}) for k in kind))
        if isinstance(kind, str) and kind in _BY_TYPE:
            return _BY_TYPE[kind]
        if kind == "array":
            item = self.of(schema.get("items"))
            return self.add(f'"[" ({item} ("," {item})*)? "]"')
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            return self.mapping(properties, schema.get("required", ()))
        if kind == "object":
            return '"{}"' if schema.get("additionalProperties") is False else "g-dict"
        return "g-value"

    def mapping(self, properties: Mapping[str, Any], required: Any) -> str:
        """``{key:value,...}`` with the keys in the template's order, each optional one present
        or not: ``first`` is what may come when no key has been written yet, ``after`` when one
        has (and a comma goes first)."""
        first = after = ""
        for key, schema in reversed(dictsorted(properties)):
            member = f"{gbnf_literal(plain(key) + ':')} {self.of(schema)}"
            with_first = f"{member} {after}".strip()
            with_after = f'"," {member} {after}'.strip()
            if key in required:
                first, after = self.add(with_first), self.add(with_after)
            else:
                first = self.add(f"{with_first} | {first}" if first else f"({with_first})?")
                after = self.add(f"{with_after} | {after}" if after else f"({with_after})?")
        return f'"{{" {first} "}}"'


def _names(schema: Any) -> list[str]:
    if isinstance(schema, Mapping) and "const" in schema:
        return [str(schema["const"])]
    if isinstance(schema, Mapping) and isinstance(schema.get("enum"), list):
        return [str(name) for name in schema["enum"]]
    raise GrammarError(f"a call's skill name is neither one nor a list: {schema!r}")


def gemma_gbnf(schema: dict[str, Any]) -> str:
    """The GBNF of one action of ``schema`` spoken in Gemma 4's tool format: a call to one of
    its skills with its arguments, or the answer as plain text."""
    try:
        branches = inline_refs(schema).get("oneOf", [schema])
        rules = _Rules()
        calls, answer = [], None
        for branch in branches:
            properties = branch.get("properties", {})
            if "final_answer" in properties:
                answer = properties["final_answer"]
            elif "skill_name" in properties:
                names = " | ".join(gbnf_literal(n) for n in _names(properties["skill_name"]))
                arguments = rules.of(properties.get("arguments", {"type": "object"}))
                calls.append(f"({names}) {arguments}")
        alternatives, extra = [], []
        if calls:
            alternatives.append("call")
            extra.append(
                f"call ::= {gbnf_literal(CALL_HEAD)} ({' | '.join(calls)}) "
                f"{gbnf_literal(CALL_CLOSE)}\n"
            )
            extra += [*rules.lines, _VALUES]
        if answer is not None:
            extra.append(renamed(answer_rule(answer), "text-"))
            alternatives.append("text-answer")
        if not alternatives:
            raise GrammarError("the action schema has neither a call nor an answer")
        return "root ::= " + " | ".join(alternatives) + "\n" + "".join(extra)
    except (KeyError, TypeError, AttributeError, ValueError, json.JSONDecodeError) as exc:
        raise GrammarError(
            f"the action schema cannot be made into a Gemma 4 tool grammar: {exc!r}"
        ) from exc


__all__ = ["gemma_gbnf"]
