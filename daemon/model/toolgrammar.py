"""The grammar of an action spoken in a model's own tool-call format.

The loop hands the model one JSON schema of an action whatever the format: calls (``skill_name``
and ``arguments``) and an answer (``final_answer``, which grounding may hold to a pattern or a
list of sentences). In a tagged format (:class:`~edge_agentd.agent.actions.TaggedCalls`) the
same action is a call's JSON between the tags, or the answer as plain text. The calls' schema is
converted as JSON; the answer's string is converted as raw text, so a pattern grounding sets
holds the words the model writes, not a quoted string.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from edge_agentd.agent.actions import TaggedCalls
from edge_agentd.model.constrained import (
    GrammarError,
    canonical_gbnf,
    inline_refs,
    lex_gbnf,
    schema_to_gbnf,
)

_FREE_TEXT = "answer ::= [^<\\x00] [^\\x00]*\n"
"""An answer the grounding does not hold: any text that does not open a tag."""


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


def renamed(gbnf: str, prefix: str) -> str:
    """``gbnf`` with every rule name given ``prefix``, so two grammars can be joined."""
    names = {line.split("::=", 1)[0].strip() for line in gbnf.splitlines() if "::=" in line}
    return "".join(prefix + p if p in names else p for p in lex_gbnf(gbnf))


def answer_rule(answer: dict[str, Any]) -> str:
    """The rule ``answer`` for a ``final_answer`` string schema, as raw text."""
    if "enum" in answer:
        options = [o for o in answer["enum"] if isinstance(o, str) and o]
        if not options:
            raise GrammarError("the answer's list of sentences is empty")
        return "answer ::= " + " | ".join(gbnf_literal(o) for o in options) + "\n"
    if "pattern" in answer:
        grammar_module = importlib.import_module("llama_cpp.llama_grammar")
        converter = grammar_module.SchemaConverter(
            prop_order={}, allow_fetch=False, dotall=False, raw_pattern=True
        )
        converter.visit({"type": "string", "pattern": answer["pattern"]}, "answer")
        return str(converter.format_grammar())
    return _FREE_TEXT


def tagged_gbnf(calls: TaggedCalls, schema: dict[str, Any]) -> str:
    """The canonical GBNF of one action of ``schema`` spoken in ``calls``' format."""
    try:
        branches = inline_refs(schema).get("oneOf", [schema])
        call_branches, answer = [], None
        for branch in branches:
            properties = branch.get("properties", {})
            if "final_answer" in properties:
                answer = properties["final_answer"]
            elif "skill_name" in properties:
                call_branches.append(
                    {
                        **branch,
                        "properties": {
                            "name": properties["skill_name"],
                            "arguments": properties.get("arguments", {"type": "object"}),
                        },
                        "required": ["name", "arguments"],
                    }
                )
        alternatives, rules = [], []
        if call_branches:
            call_grammar = schema_to_gbnf({"oneOf": call_branches})
            rules.append(renamed(call_grammar, "call-"))
            alternatives.append(
                f"{gbnf_literal(calls.call_open)} call-root {gbnf_literal(calls.call_close)}"
            )
        if answer is not None:
            rules.append(renamed(answer_rule(answer), "text-"))
            alternatives.append("text-answer")
        if not alternatives:
            raise GrammarError("the action schema has neither a call nor an answer")
        return canonical_gbnf("root ::= " + " | ".join(alternatives) + "\n" + "".join(rules))
    except (KeyError, TypeError, AttributeError, ValueError, json.JSONDecodeError) as exc:
        raise GrammarError(
            f"the action schema cannot be made into a tool grammar: {exc!r}"
        ) from exc


__all__ = ["answer_rule", "gbnf_literal", "renamed", "tagged_gbnf"]
