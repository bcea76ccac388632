"""Grounding holds what an answer claims beyond its values: a "No" to a state no call or result
has a word for ("Is the front door locked?" of a door that is closed), and a comparison with a
number answered without the value compared ("The disk is more than half full." of a disk 31.8 %
used). Made-up skills; the model is scripted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.events import FinalAnswerAction
from edge_agentd.agent.grounding import NO_VALUE_COMPARED, STATE_NOT_IN_EVIDENCE, Grounding
from edge_agentd.agent.question import Question
from edge_agentd.guidance.answering import Answering


def home() -> Registry:
    registry = Registry()

    @registry.skill
    def gate_contact(gate: str) -> dict[str, Any]:
        """Whether a gate is open or closed, and since when."""
        return {"gate": gate, "state": "closed", "since": "2026-12-06 21:41"}

    @registry.skill
    def cistern() -> dict[str, Any]:
        """How full the rain cistern is."""
        return {"cistern": {"litres": 412.0, "used_percent": 31.8}}

    return registry


def _refused(question: str, skill: str, arguments: dict[str, Any], answer: str) -> list[str]:
    replies = [json.dumps({"skill_name": skill, "arguments": arguments})]
    replies.append(json.dumps({"final_answer": answer}))
    state = Agent(MockModel(replies), home(), grounding=Grounding()).run(question, max_retries=0)
    refused = [getattr(e, "error_type", None) for e in state.stream]
    assert (state.outcome == "answered") == (not any(refused)), list(state.stream)
    return [r for r in refused if r]


@pytest.mark.parametrize(
    ("question", "answer", "refused"),
    [
        # "closed" says nothing of "locked": no word of the evidence is the state asked.
        ("Is the back gate locked?", "No, the back gate is closed.", [STATE_NOT_IN_EVIDENCE]),
        ("Is the back gate locked?", "I cannot tell: nothing here says whether it is locked.", []),
        # The skill's own words name "open": its "closed" is a "No".
        ("Is the back gate open?", "No, the back gate is closed.", []),
    ],
)
def test_a_no_needs_the_state_among_the_evidence_s_words(
    question: str, answer: str, refused: list[str]
) -> None:
    assert _refused(question, "gate_contact", {"gate": "back"}, answer) == refused


@pytest.mark.parametrize(
    ("question", "answer", "refused"),
    [
        ("Is the cistern more than half full?", "The cistern is more than half full.",
         [NO_VALUE_COMPARED]),
        ("Is the cistern more than half full?", "Yes.", [NO_VALUE_COMPARED]),
        ("Is the cistern more than half full?", "No, the cistern used is 31.8 %.", []),
        ("Is the cistern's level above 400 litres?", "Yes, the litres are 412.0.", []),
        ("Is the cistern more than half full?", "I cannot tell: no result says it.", []),
    ],
)  # fmt: skip
def test_a_comparison_is_answered_with_the_value_compared(
    question: str, answer: str, refused: list[str]
) -> None:
    assert _refused(question, "cistern", {}, answer) == refused


def test_the_request_could_i_have_reads_its_subject() -> None:
    for text, head in [
        ("Could I have the soil moisture from the greenhouse probe, please?", "moisture"),
        ("Can I get the humidity?", "humidity"),
        ("May we see the pond temperature?", "temperature"),
    ]:
        parsed = Question.parse(text)
        assert parsed.subject is not None and parsed.subject.head == head, (text, parsed)
        assert not parsed.exists


def test_a_comparison_no_sentence_compares_is_the_engine_s_i_cannot_tell() -> None:
    """A driving model whose comparison no engine sentence makes (no percent to compare a half
    with) is not left to write yes or no unchecked, nor refused until its retries run out: the
    engine says it cannot tell."""
    registry = Registry()

    @registry.skill
    def cistern() -> dict[str, Any]:
        """How much water the rain cistern holds."""
        return {"cistern": {"litres": 412.0}}

    model = MockModel([json.dumps({"skill_name": "cistern", "arguments": {}})])
    agent = Agent(model, registry, guidance=Answering(), grounding=Grounding())
    state = agent.run("Is the cistern more than half full?", max_iterations=3)
    final = [e for e in state.stream if isinstance(e, FinalAnswerAction)]
    assert state.outcome == "answered", list(state.stream)
    assert final[-1].made_by == "engine" and final[-1].answer.startswith("I cannot tell")
