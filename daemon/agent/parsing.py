"""The strict parser for the model's action language.

One JSON object per reply: ``{"skill_name": ..., "arguments": {...}}`` or ``{"final_answer": ...}``,
with an optional ``"thought"``. Whitespace and one enclosing code fence are stripped; nothing else
is repaired, and nothing unparseable is ever turned into an answer.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from edge_agentd.agent.events import (
    CallSkillAction,
    FinalAnswerAction,
    MadeBy,
    Usage,
    ValidationErrorObservation,
)

ACTION_PARSE = "action_parse"
NON_EMPTY_FINAL_ANSWER = "non_empty_final_answer"
_KNOWN_KEYS = frozenset({"skill_name", "arguments", "final_answer", "thought"})
_FEEDBACK_EXCERPT = 200


def strip_fence(text: str) -> str:
    """Drop surrounding whitespace and one enclosing ``` fence (with an optional language tag)."""
    text = text.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        inner = text[3:-3]
        first_newline = inner.find("\n")
        tag = inner[:first_newline].strip() if first_newline != -1 else None
        if tag is not None and (not tag or tag.isalnum()):
            inner = inner[first_newline + 1 :]
        text = inner.strip()
    return text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _error(
    error_type: str | None, feedback: str, raw: str, usage: Usage | None, validator: str
) -> ValidationErrorObservation:
    return ValidationErrorObservation(
        validator_name=validator, error_type=error_type, feedback=feedback, raw=raw, usage=usage
    )


def parse_action(
    raw: str,
    available_skills: Collection[str],
    usage: Usage | None = None,
    *,
    made_by: MadeBy = "model",
    call_id: str | None = None,
) -> CallSkillAction | FinalAnswerAction | ValidationErrorObservation:
    """Parse one reply into an action, or a ValidationErrorObservation saying what is wrong.
    ``made_by`` and ``call_id`` go on the action as they are (a call's id, if it is a call)."""
    if usage is not None and usage.stop == "length":
        return _error(
            "truncated",
            f"Your reply was cut off at the token limit after {usage.generated_tokens or 0} "
            "tokens. Reply with one short JSON object.",
            raw,
            usage,
            ACTION_PARSE,
        )
    text = strip_fence(raw)
    try:
        value: Any = _DECODER.decode(text)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, json.JSONDecodeError):
            detail, where = exc.msg, f" at character {exc.pos}"
        else:
            detail, where = (str(exc) if isinstance(exc, ValueError) else "nested too deeply"), ""
        return _error(
            "json_syntax",
            f"Your reply is not valid JSON ({detail}{where}). Reply with exactly one JSON "
            "object and nothing else.",
            raw,
            usage,
            ACTION_PARSE,
        )
    if not isinstance(value, dict):
        return _error(
            "missing_field",
            f"Your reply must be a JSON object, not a {type(value).__name__}. Use "
            '{"skill_name": ..., "arguments": {...}} or {"final_answer": ...}.',
            raw,
            usage,
            ACTION_PARSE,
        )
    has_skill = "skill_name" in value
    has_answer = "final_answer" in value
    if has_skill and has_answer:
        return _error(
            "ambiguous_action",
            'Your reply has both "skill_name" and "final_answer". Give exactly one of them.',
            raw,
            usage,
            ACTION_PARSE,
        )
    if not has_skill and not has_answer:
        return _error(
            "missing_field",
            'Your reply has neither "skill_name" nor "final_answer". Give exactly one of them.',
            raw,
            usage,
            ACTION_PARSE,
        )
    if not _KNOWN_KEYS.issuperset(value):
        unknown = sorted(str(k) for k in value if k not in _KNOWN_KEYS)
        return _error(
            "unknown_field",
            f"Your reply has fields that are not part of an action: {', '.join(unknown)}. "
            'Use only "skill_name", "arguments", "final_answer" and "thought".',
            raw,
            usage,
            ACTION_PARSE,
        )
    thought = value.get("thought")
    if thought is not None and not isinstance(thought, str):
        return _error("invalid_field", '"thought" must be a string.', raw, usage, ACTION_PARSE)
    if has_answer:
        answer = value["final_answer"]
        if not isinstance(answer, str):
            return _error(
                "invalid_field", '"final_answer" must be a string.', raw, usage, ACTION_PARSE
            )
        if not answer.strip():
            return _error(
                None,
                "Your final answer is empty. Call a skill if you need information, or give a "
                "non-empty final answer.",
                raw,
                usage,
                NON_EMPTY_FINAL_ANSWER,
            )
        return FinalAnswerAction(
            answer=answer, thought=thought, raw=raw, usage=usage, made_by=made_by
        )
    name = value["skill_name"]
    if not isinstance(name, str):
        return _error("invalid_field", '"skill_name" must be a string.', raw, usage, ACTION_PARSE)
    if name not in available_skills:
        shown = name if len(name) <= _FEEDBACK_EXCERPT else name[:_FEEDBACK_EXCERPT] + "…"
        return _error(
            "unknown_skill",
            f"There is no skill named {shown!r}. Available skills: "
            f"{', '.join(available_skills) or '(none)'}.",
            raw,
            usage,
            ACTION_PARSE,
        )
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        return _error(
            "invalid_field", '"arguments" must be a JSON object.', raw, usage, ACTION_PARSE
        )
    return CallSkillAction(
        skill_name=name,
        arguments=arguments,
        thought=thought,
        raw=raw,
        usage=usage,
        made_by=made_by,
        call_id=call_id,
    )
