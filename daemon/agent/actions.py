"""How actions are written: the seed's JSON objects, or a model's own tool-call format.

The seed's action language is one JSON object per reply (:mod:`~edge_agentd.agent.parsing`).
A model whose chat template has a tool-call format of its own was trained on it. Each such
format is a :class:`ToolFormat`: :class:`TaggedCalls` (Qwen2.5's, whose catalogue is a list of
JSON function declarations, a call a JSON object between tags and a result text between tags)
and :class:`~edge_agentd.agent.gemmacalls.GemmaCalls` (Gemma 4's, whose values are its own
syntax). An answer is plain text in both. Each turns a reply into the same events the seed's
parser makes, with the same validator names and error types, so the loop, its checks and its
records do not know which was spoken (docs/design.md, "Tool formats").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from edge_agentd.agent.events import (
    CallSkillAction,
    FinalAnswerAction,
    MadeBy,
    Usage,
    ValidationErrorObservation,
)
from edge_agentd.agent.gemmacalls import GEMMA4_CALLS
from edge_agentd.agent.parsing import ACTION_PARSE, parse_action
from edge_agentd.agent.skillspec import Choices, SkillSpec

Parsed = CallSkillAction | FinalAnswerAction | ValidationErrorObservation


class ToolFormat(Protocol):
    """A model's own tool-call format, as the prompt, the parser and the grammar speak it."""

    @property
    def name(self) -> str: ...

    @property
    def in_model_turn(self) -> bool:
        """Whether a result is written in the model's own turn right after its call, the model
        writing on from it (Gemma 4's), rather than in a turn of its own (Qwen2.5's)."""

    @property
    def catalogue_last(self) -> bool:
        """Whether the catalogue closes the system turn, after the rest of its text."""

    @property
    def tokens(self) -> tuple[str, ...]:
        """The texts of the format's own tokens: where the model's vocabulary has them as
        control tokens, the prompt writes them as such where the format puts them."""

    def plain(self, text: str) -> str:
        """Text the format did not write (a question, a reply, a skill's words) with its own
        tokens broken, so that it cannot open, close or quote a block."""

    def catalogue(self, skills: Sequence[SkillSpec], choices: Mapping[str, Choices]) -> str:
        """The skills as the template declares tools, each argument held to its ``choices``."""

    def call_text(self, name: str, arguments: Mapping[str, Any]) -> str:
        """A call as the template writes it."""

    def response(self, skill_name: str, result: Any, shown: str) -> str:
        """A skill's result as the template writes it; ``shown`` is the result as text (JSON or
        lines), for a format that writes results as text."""

    def error_response(self, skill_name: str, error: str, available: Sequence[str]) -> str:
        """A call that failed, and the skills there are, as a result of this format."""

    def parse(
        self,
        raw: str,
        available_skills: Collection[str],
        usage: Usage | None = None,
        *,
        made_by: MadeBy = "model",
        call_id: str | None = None,
    ) -> Parsed:
        """One reply as the seed's parser would read the same action written as JSON."""

    def answer_text(self, sentence: str) -> str:
        """``sentence`` as this format's answer."""

    def answer_of(self, reply: str) -> str | None:
        """The answer a reply gives, or None for a call."""

    @property
    def redo(self) -> str:
        """What a turn after a refused reply asks for."""


@dataclasses.dataclass(frozen=True, slots=True)
class TaggedCalls:
    """A tool-call format whose calls are JSON objects between tags, as Qwen2.5's template
    (and the Hermes format it follows) writes them. The texts are the template's own."""

    name: str
    catalogue_open: str
    catalogue_close: str
    call_open: str
    call_close: str
    result_open: str
    result_close: str

    # -- the prompt ----------------------------------------------------------------------------

    def catalogue(self, skills: Sequence[SkillSpec], choices: Mapping[str, Choices]) -> str:
        """The skills as the template declares tools: one JSON function per line, each
        argument held to its ``choices`` where the skill lists them."""
        declarations = [
            json.dumps(
                {
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.schema_with(choices.get(spec.name, ())),
                    },
                },
                ensure_ascii=False,
            )
            for spec in skills
        ]
        return self.catalogue_open + "".join(f"\n{d}" for d in declarations) + self.catalogue_close

    def call_text(self, name: str, arguments: Mapping[str, Any]) -> str:
        body = json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
        return f"{self.call_open}{body}{self.call_close}"

    def result_text(self, body: str) -> str:
        return f"{self.result_open}{body}{self.result_close}"

    @property
    def in_model_turn(self) -> bool:
        return False

    @property
    def catalogue_last(self) -> bool:
        return False

    @property
    def tokens(self) -> tuple[str, ...]:
        return ()

    def plain(self, text: str) -> str:
        return text

    def response(self, skill_name: str, result: Any, shown: str) -> str:
        return self.result_text(shown)

    def error_response(self, skill_name: str, error: str, available: Sequence[str]) -> str:
        return (
            self.result_text(f"Error from {skill_name}: {error}")
            + f"\nAvailable skills: {', '.join(available) or '(none)'}"
        )

    # -- a reply -------------------------------------------------------------------------------

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
        between the tags, else plain text that is the answer. ``raw`` stays the reply."""
        if usage is not None and usage.stop == "length":
            return self._error(
                "truncated", "Your reply was cut off at the token limit.", raw, usage
            )
        text = raw.strip()
        if not text.startswith(self.call_open.strip()):
            as_json = json.dumps({"final_answer": text}, ensure_ascii=False)
            return self._as_raw(
                parse_action(as_json, available_skills, usage, made_by=made_by), raw
            )
        body = text[len(self.call_open.strip()) :]
        closing = body.rfind(self.call_close.strip())
        if closing == -1 or body[closing + len(self.call_close.strip()) :].strip():
            return self._error("json_syntax", "Your tool call is not closed.", raw, usage)
        try:
            value: Any = json.loads(body[:closing])
        except (ValueError, RecursionError) as exc:
            return self._error(
                "json_syntax", f"Your tool call is not valid JSON ({exc}).", raw, usage
            )
        if not isinstance(value, dict) or "name" not in value:
            return self._error("missing_field", 'Your tool call has no "name".', raw, usage)
        if not {"name", "arguments"}.issuperset(value):
            unknown = ", ".join(sorted(str(k) for k in value if k not in ("name", "arguments")))
            return self._error(
                "unknown_field", f"Your tool call has other fields: {unknown}.", raw, usage
            )
        as_json = json.dumps(
            {"skill_name": value["name"], "arguments": value.get("arguments", {})},
            ensure_ascii=False,
        )
        parsed = parse_action(as_json, available_skills, usage, made_by=made_by, call_id=call_id)
        return self._as_raw(parsed, raw)

    def answer_text(self, sentence: str) -> str:
        """``sentence`` as this format's answer: the text itself."""
        return sentence

    def answer_of(self, reply: str) -> str | None:
        """The answer a reply gives, or None for a call."""
        text = reply.strip()
        return None if text.startswith(self.call_open.strip()) else text

    def _error(self, error_type: str, feedback: str, raw: str, usage: Usage | None) -> Parsed:
        return ValidationErrorObservation(
            validator_name=ACTION_PARSE,
            error_type=error_type,
            feedback=feedback,
            raw=raw,
            usage=usage,
        )

    @property
    def redo(self) -> str:
        """What a turn after a refused reply asks for."""
        return (
            f"Redo your last action: one tool call, {self.call_open.strip()}"
            '{"name": ..., "arguments": {...}}'
            f"{self.call_close.strip()}, or the answer in plain words."
        )

    @staticmethod
    def _as_raw(parsed: Parsed, raw: str) -> Parsed:
        return parsed.model_copy(update={"raw": raw})


HERMES = TaggedCalls(
    name="hermes",
    catalogue_open=(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    ),
    catalogue_close=(
        "\n</tools>\n\nFor each function call, return a json object with function name and "
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
    ),
    call_open="<tool_call>\n",
    call_close="\n</tool_call>",
    result_open="<tool_response>\n",
    result_close="\n</tool_response>",
)
"""Qwen2.5's tool format in its chat template's own words, the Hermes format's (the doubled
braces of the call's example are the template's: its string literal keeps them)."""

NATIVE_USE = (
    "Call one function at a time to find facts; never guess them. After each call you will see "
    "its result. When the results answer the question, reply with the answer in plain words, "
    "without a tool call."
)


def tagged_calls_of(template: str) -> ToolFormat | None:
    """The tool format a chat template speaks, where it is one this project knows: Qwen2.5's
    by its ``<tools>``, ``<tool_call>`` and ``<tool_response>`` texts, Gemma 4's by its
    ``<|tool>``, ``<|tool_call>call:`` and ``<|tool_response>`` (llama.cpp knows Gemma 4's
    template by the second)."""
    if all(tag in template for tag in ("<tools>", "<tool_call>", "<tool_response>")):
        return HERMES
    if all(tag in template for tag in ("<|tool>", "<|tool_call>call:", "<|tool_response>")):
        return GEMMA4_CALLS
    return None


__all__ = ["HERMES", "NATIVE_USE", "TaggedCalls", "ToolFormat", "tagged_calls_of"]
