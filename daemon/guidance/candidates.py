"""The candidates the next action may call, as the guidance scores them (docs/design.md,
"Small models"): each call a skill lists as ready, with what it gets, else the skill itself, with
the text a question is scored after. Built from what the registry says about a skill."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import Language
from edge_agentd.agent.prompt import ChatFormat, signature_text
from edge_agentd.agent.registry import SkillSpec


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A skill the next action may call: with its arguments fixed, or for the model to write."""

    skill_name: str
    arguments: dict[str, Any] | None
    """Fixed arguments (none needed, or a call the skill listed as ready); ``None`` when the
    model writes them."""
    description: str
    """The text the question is scored after."""
    text_argument: str | None = None
    """The one required argument, a free string, that a phrase of the question fills."""
    whole_first: bool = False
    """The skill reads sentences: its text argument is the whole question before any phrase."""
    gets: str = ""
    """What a listed call gets, in the skill's words ("the humidity of the sensor chip
    bme280"); empty for any other."""

    @property
    def key(self) -> tuple[str, str]:
        """What a call of this candidate is, to tell whether it was made already."""
        return (self.skill_name, json.dumps(self.arguments))


def candidates_for(
    spec: SkillSpec, fmt: ChatFormat, language: Language = ENGLISH
) -> list[Candidate]:
    """The candidates one skill offers: each call it lists as ready, else the skill itself."""
    listed = "".join(f"\n- {example}" for example in spec.examples)

    def describe(signature: str, extra: str = "") -> str:
        text = language.skill_prompt.format(
            signature=signature, description=spec.description, extra=extra, listed=listed
        )
        return f"{fmt.user_prefix}{fmt.defuse(text)}"

    ready = spec.ready_calls()
    if ready:
        return [
            Candidate(
                spec.name,
                arguments,
                describe(
                    _call_text(spec.name, arguments),
                    language.call_gets.format(what=what) if what else "",
                ),
                gets=what,
            )
            for arguments, what in ready
        ]
    required = set(spec.parameters_schema.get("required", ()))
    if not required:
        return [Candidate(spec.name, {}, describe(signature_text(spec)))]
    properties = spec.parameters_schema.get("properties", {})
    only = next(iter(required)) if len(required) == 1 else None
    is_text = only is not None and properties.get(only, {}).get("type") == "string"
    text = only if is_text else None
    whole = text is not None and spec.reads_sentences
    return [Candidate(spec.name, None, describe(signature_text(spec)), text, whole)]


def _call_text(skill_name: str, arguments: dict[str, Any]) -> str:
    """``read_sensor(name="bme280")``: a call as the skill catalogue's signatures read."""
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    return f"{skill_name}({shown})"


__all__ = ["Candidate", "candidates_for"]
