"""Prompt rendering that keeps a model's cache valid.

A prompt is append-only: the system part is byte-identical for the same registry, soul and
workflow, each event renders to fixed text, and the prompt for step k+1 starts with exactly the
prompt for step k plus the model's raw reply. A model that reuses its KV cache then evaluates only
the new tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from edge_agentd.agent.actions import NATIVE_USE, ToolFormat
from edge_agentd.agent.events import (
    CallSkillAction,
    Event,
    FinalAnswerAction,
    InterruptedObservation,
    MaxIterationsObservation,
    ModelErrorObservation,
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.jsonvalues import compact_json
from edge_agentd.agent.registry import SkillSpec
from edge_agentd.agent.resultlines import result_fields, result_lines
from edge_agentd.agent.skillspec import Choices
from edge_agentd.agent.workflow import Soul, Workflow


@dataclasses.dataclass(frozen=True, slots=True)
class ChatFormat:
    """The turn markers of one model family.

    With ``system_prefix=None`` the model has no system role, and the system text goes at the top
    of the first user turn. ``reserved`` lists the turn markers the model's tokenizer reads as
    control tokens (a llama.cpp model reads them off its vocabulary; every other control token is
    tokenized as plain text there). Where they appear in the system text, a query, an
    observation or the model's own reply they are defused, so that no text but the template's
    can ever open or close a turn.
    """

    name: str
    user_prefix: str
    user_suffix: str
    model_prefix: str
    model_suffix: str
    system_prefix: str | None = None
    system_suffix: str = ""
    stop: tuple[str, ...] = ()
    reserved: tuple[str, ...] = dataclasses.field(default=(), compare=False)
    calls: ToolFormat | None = None
    """The model's own tool-call format, where its template has one and it is spoken; None:
    the seed's JSON actions."""

    def defuse(self, text: str) -> str:
        """``text`` with every reserved string broken by a zero-width space after its first
        character, so the tokenizer sees plain text."""
        for marker in self.reserved:
            if marker in text:
                text = text.replace(marker, f"{marker[0]}\u200b{marker[1:]}")
        return text

    def clean(self, text: str) -> str:
        """Text no template wrote (a question, a reply, the loop's words): defused, and the
        tool format's own tokens broken too."""
        text = self.defuse(text)
        return text if self.calls is None else self.calls.plain(text)

    def preamble(self, system: str) -> str:
        """The text before the query: identical for every request with the same system part."""
        system = self.defuse(system)  # a skill's docstring is a plugin's text
        if self.system_prefix is None:
            return f"{self.user_prefix}{system}\n\n"
        return f"{self.system_prefix}{system}{self.system_suffix}{self.user_prefix}"

    def opening(self, system: str, query: str) -> str:
        return f"{self.preamble(system)}{self.clean(query)}{self.user_suffix}{self.model_prefix}"

    def model_turn_end(self, raw: str) -> str:
        # The reply re-enters the prompt as plain text: the markers it wrote are defused.
        return f"{self.clean(raw)}{self.model_suffix}"

    def user_turn(self, text: str) -> str:
        return f"{self.user_prefix}{self.clean(text)}{self.user_suffix}{self.model_prefix}"


PLAIN = ChatFormat(
    name="plain",
    system_prefix="System: ",
    system_suffix="\n\n",
    user_prefix="User: ",
    user_suffix="\n\n",
    model_prefix="Assistant: ",
    model_suffix="\n\n",
    stop=("\n\nUser:",),
)

NO_SKILLS = "There are no skills to call."

ACTION_LANGUAGE = (
    "Reply with exactly one JSON object and nothing else. Either call a skill:\n"
    '{"skill_name": "<skill>", "arguments": {<arguments>}}\n'
    "or, when you can answer the question, give the answer:\n"
    '{"final_answer": "<your answer>"}\n'
    "Call skills to find facts; never guess them. After each call you will see its result."
)


def signature_text(spec: SkillSpec) -> str:
    """``read_sensor(name: string)``: the compact form a small model reads best (worked out once
    per skill, see :attr:`SkillSpec.signature`)."""
    return spec.signature


def _example(skills: Sequence[SkillSpec]) -> str:
    for spec in skills:
        if not spec.parameters_schema.get("required"):
            return f'Example: {{"skill_name": "{spec.name}", "arguments": {{}}}}'
    return 'Example: {"final_answer": "The living room is 21.5 °C."}'


def render_system(
    soul: Soul,
    workflow: Workflow | None,
    skills: Sequence[SkillSpec],
    example: str | None = None,
    rules: str | None = None,
    *,
    choices: Mapping[str, Choices] | None = None,
    calls: ToolFormat | None = None,
) -> str:
    """The system part: soul, workflow instructions, skill catalogue (each skill's arguments
    shown with their ``choices`` now, where it lists them), the action language and ``rules``
    (the answers' grounding rules, if given), closed by ``example`` (default: an example
    action). With ``calls`` the catalogue and the action language are that tool format's."""
    parts = [soul.render()]
    if workflow is not None and workflow.instructions.strip():
        parts.append(workflow.instructions.strip())
    if calls is not None:
        listing = calls.catalogue(skills, choices or {}) if skills else NO_SKILLS
        closing = [NATIVE_USE] + ([rules] if rules is not None else [])
        closing += [example] if example is not None else []
        if calls.catalogue_last and skills:
            # The template writes the declarations right after the system text, at its end.
            return calls.plain("\n\n".join(parts + closing)) + listing
        return "\n\n".join([*parts, listing, *closing])
    if skills:
        lines = ["Skills you can call:"]
        for spec in skills:
            listed = choices.get(spec.name, ()) if choices else ()
            line = f"- {spec.signature_with(listed) if listed else signature_text(spec)}"
            if spec.description:
                line += f": {spec.description}"
            lines.append(line)
        parts.append("\n".join(lines))
    else:
        parts.append(NO_SKILLS)
    parts.append(ACTION_LANGUAGE)
    if rules is not None:
        parts.append(rules)
    parts.append(_example(skills) if example is None else example)
    return "\n\n".join(parts)


def _result_turn(fmt: ChatFormat, text: str, said: str) -> str:
    """A result's ``text`` and what the loop ``said`` after it: a user turn of its own, or,
    where the tool format writes results in the model's turn, that turn's text, the model
    writing on from it (what the loop said, if anything, then closes the turn: a user turn says
    it)."""
    if fmt.calls is None or not fmt.calls.in_model_turn:
        return fmt.user_turn(text + said)
    if not said:
        return fmt.defuse(text)
    return fmt.defuse(text) + fmt.model_suffix + fmt.user_turn(said.lstrip("\n"))


def render_event(
    event: Event,
    fmt: ChatFormat,
    question: str | None = None,
    focus: str | None = None,
    *,
    lines: bool = False,
) -> str:
    """The fixed text one event adds to the prompt; a result turn repeats ``question`` if given,
    and then names ``focus``, the part of the result that answers it. With ``lines`` a result is
    shown as ``name: value unit`` lines (see :func:`result_lines`); else, in a tool format of the
    model's own, as fields (:func:`result_fields`), and in the seed's action language as JSON."""
    calls = fmt.calls
    if isinstance(event, CallSkillAction | FinalAnswerAction):
        if isinstance(event, CallSkillAction) and calls is not None and calls.in_model_turn:
            return fmt.defuse(event.raw)  # the result follows in the same turn
        return fmt.model_turn_end(event.raw)
    if isinstance(event, SkillResultObservation):
        if lines:
            shown = "\n".join(result_lines(event.result))
        elif calls is not None:
            # Fewer tokens than its JSON, nothing left out: a prompt's tail is its results.
            shown = result_fields(event.result)
        else:
            shown = compact_json(event.result)
        if calls is not None:
            text = calls.response(event.skill_name, event.result, shown)
        elif lines:
            text = f"Result of {event.skill_name}:\n{shown}"
        else:
            text = f"Result of {event.skill_name}: {shown}"
        said = ""
        if question is not None:
            said += f"\nThe question was: {question}"
        if focus is not None:
            said += f"\nThe part of the result that answers it: {focus}"
        return _result_turn(fmt, text, said)
    if isinstance(event, ToolErrorObservation):
        if calls is not None:
            error = calls.error_response(event.skill_name, event.error, event.available_skills)
            return _result_turn(fmt, error, "")
        available = f"Available skills: {', '.join(event.available_skills) or '(none)'}"
        return fmt.user_turn(f"Error from {event.skill_name}: {event.error}\n{available}")
    if isinstance(event, ValidationErrorObservation):
        # A reply that failed to parse was never rendered as an action, so close its turn here.
        opened = fmt.model_turn_end(event.raw) if event.raw is not None else ""
        redo = "Redo your last action as one valid JSON object."
        text = f"{event.feedback}\n{fmt.calls.redo if fmt.calls is not None else redo}"
        if question is not None:
            # As after a result: a small model's retry starts from the question, not from the
            # feedback's own words ("The token limit was 12.437 °C.").
            text += f"\nThe question was: {question}"
        return opened + fmt.user_turn(text)
    if isinstance(event, ModelErrorObservation | InterruptedObservation | MaxIterationsObservation):
        # The model produced nothing; the next attempt re-sends the same prompt.
        return ""
    raise TypeError(f"cannot render {type(event).__name__}")
