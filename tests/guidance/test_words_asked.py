"""The words of a question pick the line a person means: the key that is the word itself before
one it only begins, a verb's participle in a key, a number compared in a unit's name, what a
preposition ends. And an empty listing answers "No" to whether any of its things is so."""

from __future__ import annotations

import json
import string
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import CallSkillAction, SkillResultObservation
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.question import Question
from edge_agentd.guidance.candidates import candidates_for
from edge_agentd.guidance.compared import asked_about
from edge_agentd.guidance.followup import call_words
from edge_agentd.guidance.render import fitting_sentences
from edge_agentd.model.formats import GEMMA3

AQUARIUM: dict[str, Any] = {"light": "on", "lighting_schedule": "sunrise", "pump": "running"}
CISTERN: dict[str, Any] = {"water": {"total_l": 500, "used_l": 120, "left_l": 380}}
GARDEN: dict[str, Any] = {"soil_moisture_percent": 25, "uptime": {"days": 3.5, "hours": 84}}


def _said(
    question: str, skill: str, result: dict[str, Any], called: list[list[str]] | None = None
) -> list[str]:
    registry = Registry()

    @registry.skill(name=skill)
    def anything() -> dict[str, Any]:
        """What the appliance says of itself."""
        return result

    return fitting_sentences(Question.parse(question), [(skill, result)], registry, called or ())


def test_the_key_that_is_the_word_goes_before_one_it_begins() -> None:
    assert _said("Aquarium light?", "aquarium", AQUARIUM) == ["The light is on."]
    assert _said("What is the aquarium light?", "aquarium", AQUARIUM) == ["The light is on."]
    # Where no key is the word, one it begins still answers.
    schedule = {"lighting_schedule": "sunrise", "pump": "running"}
    assert _said("Aquarium light?", "aquarium", schedule) == ["The lighting schedule is sunrise."]


def test_a_verb_names_the_key_written_in_its_participle() -> None:
    for question in ("Water in use?", "How much water is in use?"):
        assert _said(question, "cistern", CISTERN) == ["The water used is 120 L."], question


def test_a_number_compared_in_a_unit_s_name_compares_the_value_in_its_symbol() -> None:
    said = _said("Is the soil moisture below 30 percent?", "garden", GARDEN)
    assert said == ["Yes, the soil moisture is 25 %."]
    said = _said("Is the soil moisture above 30 percent?", "garden", GARDEN)
    assert said == ["No, the soil moisture is 25 %."]
    # "a day" compares the value written in days, not those in hours or seconds.
    said = _said("Is the garden's uptime over a day?", "garden", GARDEN)
    assert said == ["Yes, the uptime is 3.5 days."]


def test_a_compared_question_is_about_the_phrase_before_its_comparison() -> None:
    asked = asked_about(Question.parse("Is the 15-minute load average below 1?", ENGLISH))
    assert asked.subject is not None
    assert (asked.subject.head, asked.state) == ("average", None)
    assert asked.subject.which == ("15-minute", "load")
    # A question that compares nothing is left as it is.
    plain = Question.parse("Is the front door open?", ENGLISH)
    assert asked_about(plain) is plain


def test_a_preposition_ends_the_phrase() -> None:
    for word in ("below", "beneath", "behind", "near", "around", "beside", "toward"):
        parsed = Question.parse(f"Is the pump {word} the pond running?", ENGLISH)
        assert parsed.subject is not None and parsed.subject.head == "pump", (word, parsed)


def test_none_of_an_empty_listing_is_so() -> None:
    empty: dict[str, Any] = {"count": 0, "plants": []}
    assert _said("Are any plants thirsty?", "plants", empty) == ["No, there are no plants."]
    assert _said("Tell me whether a plant is thirsty.", "plants", empty) == [
        "No, there are no plants."
    ]
    # Not to a question that says "not", whose answer would then be "Yes".
    assert _said("Are the plants not thirsty?", "plants", empty) == []
    assert _said("Aren't any plants thirsty?", "plants", empty) == []
    # Not of a listing a call narrowed, or one filtered by a word asked: it may have left out
    # the very things asked about.
    assert _said("Are any plants thirsty?", "plants", empty, called=[["balcony"]]) == []
    filtered = {"count": 0, "need": "water", "plants": []}
    assert _said("Do any plants need water?", "plants", filtered) == []
    # Nor of a list of other things.
    assert _said("Are any doors open?", "plants", empty) == []


@given(
    thing=st.text(string.ascii_lowercase, min_size=3, max_size=9).map(lambda w: f"{w}s"),
    state=st.sampled_from(["thirsty", "connected", "open", "running", "awake"]),
    any_word=st.sampled_from(["any", "the"]),
)
def test_an_empty_listing_never_says_yes(thing: str, state: str, any_word: str) -> None:
    """Whatever the things and the state, an empty list of them says no one is so, or
    nothing; never "Yes"."""
    said = _said(f"Are {any_word} {thing} {state}?", "things", {thing: []})
    assert all(not s.startswith(ENGLISH.yes) for s in said), said
    assert said in ([], [f"No, there are no {thing}."]), said


def test_a_call_s_words_are_its_arguments_and_what_it_gets() -> None:
    """Not its candidate's description, whose skill words name every call of it and whose
    turn marker ("user") would read as something the call asked for."""
    registry = Registry()

    @registry.skill(calls=lambda: [({"bed": "roses"}, "the moisture of the rose bed")])
    def soil_probe(bed: str) -> dict[str, Any]:
        """The soil moisture of one garden bed."""
        return {"bed": bed, "moisture_percent": 31}

    @registry.skill
    def plant_list() -> dict[str, Any]:
        """Every plant the garden knows."""
        return {"count": 0, "plants": []}

    candidates = [c for spec in registry.select(None) for c in candidates_for(spec, GEMMA3)]
    events = [
        CallSkillAction(skill_name="soil_probe", arguments={"bed": "roses"}),
        SkillResultObservation(skill_name="soil_probe", result={"moisture_percent": 31}),
        CallSkillAction(skill_name="plant_list", arguments={}),
        SkillResultObservation(skill_name="plant_list", result={"count": 0, "plants": []}),
    ]
    assert call_words(events, candidates) == [["roses", "the moisture of the rose bed"], []]


def test_a_compared_value_s_yes_or_no_is_grounded() -> None:
    """Grounding reads "Is the soil moisture below 30 %?" as comparing the soil moisture, not
    as asking a state "moisture" no result writes; a state asked before a comparison is still
    held to the results."""
    registry = Registry()

    @registry.skill
    def garden() -> dict[str, Any]:
        """The garden's soil moisture and its gate."""
        return {"soil_moisture_percent": 25, "gate": "closed"}

    def answered(question: str, answer: str) -> bool:
        replies = [json.dumps({"skill_name": "garden", "arguments": {}})]
        replies.append(json.dumps({"final_answer": answer}))
        agent = Agent(MockModel(replies), registry, grounding=Grounding())
        state = agent.run(question, max_retries=0)
        return state.outcome == "answered" and state.final_answer == answer

    question = "Is the soil moisture below 30 percent?"
    said = fitting_sentences(Question.parse(question), [("garden", garden())], registry)
    assert "Yes, the soil moisture is 25 %." in said, said
    assert all(answered(question, sentence) for sentence in said)
    # "open" is a state the question asks, wherever a comparison follows: no result says it.
    assert not answered("Is the gate open for more than 3 hours?", "Yes, the gate is open.")
