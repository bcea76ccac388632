"""A yes-or-no question that compares a value with a number ("Is the CPU warmer than 40 °C?")
is answered "Yes, ..." or "No, ..." before the value's own sentence, where a result writes the
value in the unit the question names (any, where it names none); otherwise the engine says
nothing of it. The comparison's words are the language's, never a skill's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_answering import FirstChoice

from edge_agentd import Agent, FinalAnswerAction, Grounding, MockModel, Registry
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.question import Question
from edge_agentd.guidance.answering import Answering
from edge_agentd.guidance.fitting import threshold_of
from edge_agentd.guidance.render import fitting_sentences

CPU = {"sensor": "thermal_zone0", "label": "cpu-thermal", "quantity": "temperature",
       "value": 48.312, "unit": "°C"}  # fmt: skip
TANK = {"tank": "rain water", "level": {"value": 72, "unit": "%"}}


def said(question: str, skill: str, result: Any) -> list[str]:
    return fitting_sentences(Question.parse(question, ENGLISH), [(skill, result)])


@pytest.mark.parametrize(
    ("question", "skill", "result", "expected"),
    [
        ("Tell me whether the CPU is warmer than 40 °C.", "cpu_temperature", CPU, "Yes"),
        ("Is the CPU colder than 40 °C?", "cpu_temperature", CPU, "No"),
        ("Is the CPU temperature above 50?", "cpu_temperature", CPU, "No"),
        ("Is the rain water tank's level below 80 %?", "tank", TANK, "Yes"),
        ("Is the tank's level more than 90 %?", "tank", TANK, "No"),
    ],
)
def test_a_value_compared_is_said_after_yes_or_no(
    question: str, skill: str, result: Any, expected: str
) -> None:
    sentences = said(question, skill, result)
    assert sentences, question
    assert all(s.startswith(f"{expected}, ") for s in sentences), sentences


def test_a_unit_the_value_is_not_written_in_compares_nothing() -> None:
    assert said("Is the CPU warmer than 100 °F?", "cpu_temperature", CPU) == []


def test_a_question_that_compares_nothing_is_read_as_before() -> None:
    assert threshold_of(Question.parse("How warm is the CPU?", ENGLISH)) is None
    assert threshold_of(Question.parse("Is the CPU nicer than 40 °C?", ENGLISH)) is None
    assert said("How warm is the CPU?", "cpu_temperature", CPU) == [
        "The CPU temperature is 48.312 °C."
    ] or all("48.312 °C" in s for s in said("How warm is the CPU?", "cpu_temperature", CPU))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120))
def test_any_question_reads_without_error(text: str) -> None:
    found = threshold_of(Question.parse(text, ENGLISH))
    assert found is None or isinstance(found.number, float)


def test_the_daemons_grounding_takes_the_engines_comparison() -> None:
    registry = Registry()

    @registry.skill
    def cpu_temperature() -> dict[str, Any]:
        """The CPU temperature in °C."""
        return CPU

    # A model that writes the first of the sentences it is offered, as a grammar's choice.
    model = FirstChoice(
        [json.dumps({"skill_name": "cpu_temperature", "arguments": {}})], uses_action_schema=True
    )
    agent = Agent(model, registry, guidance=Answering(), grounding=Grounding())
    state = agent.run("Tell me whether the CPU is warmer than 40 °C.", max_iterations=3)
    answer = state.stream[-1]
    assert isinstance(answer, FinalAnswerAction), list(state.stream)
    assert answer.answer.startswith("Yes, ") and "48.312 °C" in answer.answer
    assert answer.made_by == "engine"


UPTIME = {"host": "garden-pi", "uptime": {"value": 5.3, "unit": "days"}}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Has the garden pi had an uptime of more than a day?", "Yes"),
        ("Is the uptime less than one day?", "No"),
    ],
)
def test_a_or_one_before_a_unit_is_the_number_one(question: str, expected: str) -> None:
    sentences = said(question, "garden_uptime", UPTIME)
    assert sentences, question
    assert all(s.startswith(f"{expected}, ") and "5.3 days" in s for s in sentences), sentences


def test_a_word_for_one_without_a_unit_or_in_a_word_compares_nothing() -> None:
    assert threshold_of(Question.parse("Is it more than a?", ENGLISH)) is None
    found = threshold_of(Question.parse("Is the load more than apple 3?", ENGLISH))
    assert found is None
    # A unit the value is not written in compares nothing: hours are not days.
    assert said("Is the uptime more than an hour?", "garden_uptime", UPTIME) == []


ROOMS = {
    "quantity": "temperature",
    "readings": [
        {"room": "attic", "value": 24.5, "unit": "°C"},
        {"room": "cellar", "value": 11.0, "unit": "°C"},
    ],
    "higher": "attic",
    "lower": "cellar",
}


def test_which_of_two_is_the_more_so_is_the_one_the_result_names() -> None:
    assert said("Which is colder, the attic or the cellar?", "rooms", ROOMS) == [
        "The cellar is colder."
    ]
    assert said("Which is warmer, the cellar or the attic?", "rooms", ROOMS) == [
        "The attic is warmer."
    ]


def test_a_compare_of_two_other_things_names_no_winner() -> None:
    sentences = said("Which is warmer, the garage or the cellar?", "rooms", ROOMS)
    assert not any(s.endswith("is warmer.") for s in sentences)
    # A comparison word the language does not read compares nothing.
    assert not any(
        "nicer" in s for s in said("Which is nicer, the attic or the cellar?", "rooms", ROOMS)
    )


def test_the_daemons_grounding_takes_which_is_the_more_so() -> None:
    registry = Registry()

    @registry.skill
    def rooms() -> dict[str, Any]:
        """The attic's and the cellar's temperatures, compared."""
        return ROOMS

    model = FirstChoice(
        [json.dumps({"skill_name": "rooms", "arguments": {}})], uses_action_schema=True
    )
    question = "Which is colder, the attic or the cellar?"
    state = Agent(model, registry, guidance=Answering(), grounding=Grounding()).run(question)
    assert state.final_answer == "The cellar is colder."


ROOMS_APART = {**ROOMS, "difference": {"value": 13.5, "unit": "°C"}}


def test_how_much_more_so_is_the_difference_said_of_the_one_the_result_names() -> None:
    assert said("How much colder is the cellar than the attic?", "rooms", ROOMS_APART) == [
        "The cellar is 13.5 °C colder."
    ]
    # Asked the other way round, the sentence says which one is: never "the attic is colder".
    assert said("How much colder is the attic than the cellar?", "rooms", ROOMS_APART) == [
        "The cellar is 13.5 °C colder."
    ]
    assert said("How much warmer is the attic than the cellar?", "rooms", ROOMS_APART) == [
        "The attic is 13.5 °C warmer."
    ]
    # No difference written: no amount to say.
    assert not any(
        "13.5" in s for s in said("How much colder is the cellar than the attic?", "rooms", ROOMS)
    )
    # A thing the result does not name: the compare says nothing of it.
    assert said("How much colder is the garage than the attic?", "rooms", ROOMS_APART) == []


@pytest.mark.parametrize(
    ("question", "answer", "held"),
    [
        ("How much colder is the cellar than the attic?", "The cellar is 13.5 °C colder.", True),
        # A thing no result or call names is not the evidence's, whatever the numbers.
        ("How much colder is the garage than the attic?", "The garage is 13.5 °C colder.", False),
        ("Which is colder, the garage or the attic?", "The garage is colder.", False),
    ],
)
def test_the_daemons_grounding_holds_the_things_a_comparison_names(
    question: str, answer: str, held: bool
) -> None:
    registry = Registry()

    @registry.skill
    def rooms() -> dict[str, Any]:
        """The attic's and the cellar's temperatures, compared."""
        return ROOMS_APART

    replies = [
        json.dumps({"skill_name": "rooms", "arguments": {}}),
        json.dumps({"final_answer": answer}),
    ]
    state = Agent(MockModel(replies), registry, grounding=Grounding()).run(question, max_retries=0)
    assert (state.final_answer == answer) is held, list(state.stream)
