"""Answers the engine renders from the results, the guided model choosing among them
(daemon/guidance/render.py), for any skill: plugins written as docs/skills.md's ten-line example
(a docstring, a typed signature, values with units; no ``examples=``, no ``calls=``).

MockModel scripts ``likelihood`` and ``score`` by text: a key ``(marker, text)`` scores ``text``
after any prompt holding ``marker``, a plain key any continuation it begins (the longest wins),
so a test says which skill fits and which rendered sentence the model finds likeliest.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.evidence import answer_numbers, numbers_in
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.prompt import PLAIN
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import result_line_parts
from edge_agentd.guidance.asked import candidate_lines
from edge_agentd.guidance.declines import cannot_tell_sentence
from edge_agentd.guidance.followup import content_free
from edge_agentd.guidance.guidance import ANSWER_HEAD, Guidance
from edge_agentd.guidance.render import (
    MAX_SENTENCES,
    both_parts,
    fitting_sentences,
    sentences_for,
)
from edge_agentd.guidance.saying import TEMPLATE_WORDS, words_of

FREE = content_free(PLAIN)


def plugin_home() -> Registry:
    """Plugins as a user writes them from docs/skills.md: nothing for a small model's sake."""
    registry = Registry()

    @registry.skill(timeout=1.0)
    def front_door() -> dict[str, Any]:
        """Whether the front door is open or closed."""
        return {"door": "front", "state": "closed"}

    @registry.skill(timeout=1.0)
    def rain_barrel_level() -> dict[str, Any]:
        """Water left in the rain barrel, in litres."""
        return {"quantity": "volume", "value": 137.5, "unit": "L"}

    @registry.skill(timeout=1.0)
    def house_plants() -> dict[str, Any]:
        """The house plants and how moist their soil is."""
        return {
            "plants": [
                {"name": "basil", "moisture": {"value": 31.0, "unit": "%"}},
                {"name": "fern", "moisture": {"value": 58.0, "unit": "%"}},
            ]
        }

    @registry.skill(timeout=1.0)
    def living_room_co2() -> dict[str, Any]:
        """The CO2 level in the living room, in ppm."""
        return {"room": "living room", "co2": {"value": 870, "unit": "ppm"}}

    @registry.skill(timeout=1.0)
    def power_meter() -> dict[str, Any]:
        """The house's power draw right now."""
        return {"power": {"value": 412.0, "unit": "W"}}

    return registry


def asked_of(skill: str, question: str, **more: float) -> MockModel:
    """A model by which ``question`` fits ``skill``'s description (and no other) well above no
    skill's, and that scores each rendered sentence as ``more`` says (key: its start)."""
    scores: dict[Any, float] = {
        (f"The skill {skill}", f" {question}"): -2.0,
        (FREE, f" {question}"): -30.0,
        ANSWER_HEAD: 0.0,
    }
    scores |= {f"{ANSWER_HEAD}{start}": value for start, value in more.items()}
    return MockModel([], scores=scores)


def offered(model: MockModel) -> list[str]:
    """The sentences the model last chose among."""
    options = next(o for _, o in reversed(model.scored) if o[0].startswith(f"{ANSWER_HEAD}"))
    return [json.loads(option)["final_answer"] for option in options]


def test_a_yes_or_no_question_is_answered_yes_or_no_as_the_result_says_its_state() -> None:
    question = "Is the front door open?"
    model = asked_of("front_door", question)
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    # The skill says it reads "open or closed", and the result says "closed": "No".
    assert state.final_answer == "No, the front door is closed."
    final = state.stream.root[-1]
    assert final.type == "FinalAnswerAction" and final.made_by == "engine"
    # One sentence fits, so the engine said it: the model wrote nothing. The 270M had written
    # "Yes, the ... door is open." for this result when the words were its own.
    assert model.prompts == []


def test_a_reading_of_a_ten_line_plugin_is_stated_with_its_label_value_and_unit() -> None:
    question = "How much water is left in the rain barrel?"
    model = asked_of("rain_barrel_level", question)
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    # The label is the skill's own name (the result's reading has no key of its own).
    assert state.final_answer == "The rain barrel level is 137.5 L."
    assert state.stream.root[-1].made_by == "engine"


def test_a_text_that_says_which_one_is_not_followed_by_its_key_when_it_ends_with_it() -> None:
    question = "What is the CO2 level in the living room?"
    model = asked_of("living_room_co2", question)
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.final_answer is not None and "870 ppm" in state.final_answer
    # "living room" says which room: never "the living room room CO2".
    assert "The living room CO2 is 870 ppm." in offered(model)
    assert not any("room room" in sentence for sentence in offered(model))


def test_a_list_is_stated_as_its_names_or_its_count() -> None:
    question = "Which plants are there?"
    model = asked_of("house_plants", question, **{"The plants are": 1.0})
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    # A list asked for is said as a list; its count answers "how many".
    assert state.final_answer == "The plants are basil and fern."
    model = asked_of("house_plants", "How many plants are there?")
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(
        "How many plants are there?"
    )
    assert state.final_answer == "There are 2 plants."


def test_the_model_chooses_among_the_sentences_by_its_likelihood() -> None:
    question = "What is the moisture of the fern?"
    model = asked_of("house_plants", question, **{"The fern moisture is": 2.0})
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.final_answer == "The fern moisture is 58.0 %."
    # The basil's line is another plant's: the question names the fern.
    assert not any("basil" in sentence for sentence in offered(model))
    # The choice was one batch of branches after the conversation, each a whole action.
    prompt, options = next((p, o) for p, o in reversed(model.scored) if o[0] != ANSWER_HEAD)
    assert prompt.endswith(PLAIN.model_prefix) or "The question was" in prompt
    assert all(o.startswith(ANSWER_HEAD) and o.endswith('"}') for o in options)


def test_a_question_about_what_no_result_names_is_answered_i_cannot_tell() -> None:
    question = "What does the garage door sensor read?"
    model = asked_of("front_door", question)
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert [e.type for e in state.stream.root][:2] == ["CallSkillAction", "SkillResultObservation"]
    # "garage" is no word of the front door's skill or result: no sentence of it is offered.
    assert state.final_answer == "I cannot tell: no result gives the garage door sensor."
    assert state.stream.root[-1].made_by == "engine"


def test_with_no_result_the_answer_is_i_cannot_tell() -> None:
    registry = Registry()

    @registry.skill
    def cellar_sensor() -> dict[str, Any]:
        """The cellar's humidity."""
        raise OSError("the sensor is unplugged")

    question = "How damp is the cellar?"
    model = asked_of("cellar_sensor", question)
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)
    assert [e.type for e in state.stream.root] == [
        "CallSkillAction",
        "ToolErrorObservation",
        "FinalAnswerAction",
    ]
    # The skill's own error says why, in its words (the exception's type is no reader's).
    assert state.final_answer == "I cannot tell: the sensor is unplugged."


def test_a_question_in_two_parts_gets_a_sentence_of_each_result_in_its_order() -> None:
    question = "What is the power draw and what is the rain barrel level?"
    first, second = " What is the power draw", " What is the rain barrel level?"
    scores: dict[Any, float] = {
        ("The skill power_meter", first): -1.0,
        ("The skill rain_barrel_level", second): -1.0,
        (FREE, first): -30.0,
        ANSWER_HEAD: 0.0,
    }
    model = MockModel([], scores=scores)
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    calls = [e.skill_name for e in state.stream.root if e.type == "CallSkillAction"]
    assert calls == ["power_meter", "rain_barrel_level"]
    assert state.final_answer == "The power is 412.0 W and the rain barrel level is 137.5 L."
    assert both_parts("The a is 1.", "The b is 2.") == "The a is 1 and the b is 2."


def test_a_label_from_the_question_is_used_only_when_the_line_holds_its_words() -> None:
    humidity = {"readings": [{"quantity": "humidity", "value": 41.5, "unit": "%RH"}]}
    lines = candidate_lines(humidity, "What is the air pressure?")
    rendered = sentences_for(
        [("read_sensor", humidity, lines)], Question.parse("What is the air pressure?")
    )
    assert "The humidity is 41.5 %RH." in rendered
    assert not any("pressure" in sentence for sentence in rendered)
    cpu = {"sensor": "thermal_zone0", "value": 48.3, "unit": "°C"}
    asked = "What is the CPU temperature?"
    rendered = sentences_for(
        [("cpu_temperature", cpu, candidate_lines(cpu, asked))], Question.parse(asked)
    )
    assert "The CPU temperature is 48.3 °C." in rendered


def test_the_cannot_tell_sentence_names_the_subject_in_the_questions_words() -> None:
    assert cannot_tell_sentence(Question.parse("What is the CO2 level in the kitchen?")) == (
        "I cannot tell: no skill here reads the CO2 level."
    )
    no_subject = Question.parse("On what day of the week does Halloween fall?")
    assert cannot_tell_sentence(no_subject) == "I cannot tell: no skill here says what was asked."
    # Where skills were called and answered, a skill reads something: no result says it.
    assert cannot_tell_sentence(no_subject, results=True) == (
        "I cannot tell: no result says what was asked."
    )
    assert cannot_tell_sentence(Question.parse("Is the car locked?"), results=True) == (
        "I cannot tell: no result says whether the car is locked."
    )
    assert cannot_tell_sentence(Question.parse("What is the CO2 level?"), results=True) == (
        "I cannot tell: no result gives the CO2 level."
    )
    assert cannot_tell_sentence(Question.parse("Is the car locked?")) == (
        "I cannot tell: no skill here says whether the car is locked."
    )
    assert cannot_tell_sentence(Question.parse("How loud is it in the room?")) == (
        "I cannot tell: no skill here says how loud it is."
    )
    reason = "SensorError: No thermal zone was found under /sys/class/thermal"
    assert cannot_tell_sentence(no_subject, reason) == (
        "I cannot tell: no thermal zone was found under /sys/class/thermal."
    )


scalars = st.one_of(
    st.integers(-5000, 5000),
    st.floats(-500, 5000, allow_nan=False).map(lambda x: round(x, 2)),
    st.booleans(),
    st.none(),
    st.text(alphabet="abcXYZ0123456789-:. %°/'\"\\", max_size=14),
)
readings = st.fixed_dictionaries(
    {
        "value": st.floats(-500, 5000, allow_nan=False).map(lambda x: round(x, 2)),
        "unit": st.sampled_from(["°C", "%RH", "hPa", "L", "W"]),
    }
)
results = st.recursive(
    st.one_of(scalars, readings),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(alphabet="abc_xyz1", min_size=1, max_size=8), inner, max_size=4),
    ),
    max_leaves=12,
)
questions = st.text(alphabet="What is the door state 12.5 -3 reading? ab", max_size=40)
AMOUNT = ENGLISH.amount or re.compile(r"(?!)")
skill_names = st.from_regex(r"[a-z][a-z_]{0,15}", fullmatch=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(skill_names, results), max_size=3), questions)
def test_every_rendered_word_and_number_comes_from_a_result_or_the_question(
    found: list[tuple[str, Any]], question: str
) -> None:
    groups = [(name, result, candidate_lines(result, question)) for name, result in found]
    rendered = [
        *sentences_for(groups, Question.parse(question)),
        cannot_tell_sentence(Question.parse(question)),
        cannot_tell_sentence(Question.parse(question), results=True),
    ]
    texts = [question, *(name for name, _ in found)]
    texts += [line.text for _, result in found for line in result_line_parts(result)]
    # A label shows a key's words apart ("1a" of ``_1a``): a name, as the key is.
    texts += [" ".join(words_of(text)) for text in texts]
    # An amount a key glues ("5min") is said apart before its noun ("5-minute").
    texts += [AMOUNT.sub(r"\1 \2", text) for text in texts]
    words = {w.casefold() for text in texts for w in words_of(text)} | TEMPLATE_WORDS
    numbers = numbers_in(texts)
    for sentence in rendered:
        assert '"' not in sentence and "\\" not in sentence and sentence.isprintable()
        for word in words_of(sentence):
            assert word.casefold() in words, (word, sentence, texts)
        for number in answer_numbers(sentence):
            assert float(number.replace(",", "")) in numbers, (number, sentence, texts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results, questions, st.floats(-50, 50), st.floats(-50, 50))
def test_a_guided_answer_is_always_one_of_the_rendered_sentences(
    result: Any, question: str, fits: float, choice: float
) -> None:
    registry = Registry()

    @registry.skill
    def gadget() -> Any:
        """Whatever the gadget says."""
        return result

    scores = {("The skill gadget", f" {question}"): fits, ANSWER_HEAD: 0.0}
    scores[f"{ANSWER_HEAD}The"] = choice
    model = MockModel([], scores=scores)
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.outcome == "answered"
    assert state.stream.root[-1].made_by == "engine"
    lines = candidate_lines(result, question)
    answered = any(e.type == "SkillResultObservation" for e in state.stream.root)
    if answered:
        rendered = sentences_for(
            [("gadget", result, result_line_parts(result))], Question.parse(question)
        )
        rendered += sentences_for([("gadget", result, lines)], Question.parse(question))
    else:
        rendered = []
    cannot = cannot_tell_sentence(Question.parse(question), results=answered)
    assert state.final_answer in [*rendered, cannot]


def test_a_result_of_thousands_of_lines_renders_a_bounded_set_at_once() -> None:
    huge = {f"k{i}": {"state": f"s{i}x", "name": f"n{i}x"} for i in range(5000)}
    question = "What is the state?"
    rendered = sentences_for(
        [("gadget", huge, candidate_lines(huge, question))], Question.parse(question)
    )
    assert 0 < len(rendered) <= MAX_SENTENCES


def test_a_reading_asked_in_its_other_form_is_stated_in_that_form_only() -> None:
    cpu = {
        "value": 48.3,
        "unit": "°C",
        "also": {"value": 118.94, "unit": "°F", "unit_name": "Fahrenheit"},
    }
    asked = "What is the CPU temperature in Fahrenheit?"
    rendered = sentences_for(
        [("cpu_temperature", cpu, candidate_lines(cpu, asked))], Question.parse(asked)
    )
    assert "The CPU temperature is 118.94 °F." in rendered
    assert not any("°C" in sentence or "also" in sentence for sentence in rendered)
    plain = sentences_for(
        [("cpu_temperature", cpu, candidate_lines(cpu, "How hot?"))], Question.parse("How hot?")
    )
    assert plain == ["The cpu temperature is 48.3 °C."]


def test_a_list_items_name_is_no_part_of_a_label() -> None:
    # The 270M chose "The sensors 0316a2791bff measures temperature unit is °C." when a path
    # through a list item was a label: the item's name is a value, not a key.
    sensors = {
        "count": 2,
        "sensors": [
            {"name": "thermal_zone0", "measures": [{"quantity": "temperature", "unit": "°C"}]},
            {"name": "28-0316a2791bff", "measures": [{"quantity": "temperature", "unit": "°C"}]},
        ],
    }
    asked = "How many temperature sensors are there?"
    rendered = sentences_for(
        [("list_sensors", sensors, result_line_parts(sensors))], Question.parse(asked)
    )
    assert "The count is 2." in rendered and "There are 2 sensors." in rendered
    assert not any("0316a2791bff measures" in sentence for sentence in rendered)


def test_a_state_held_since_a_time_is_said_as_a_person_says_it() -> None:
    registry = Registry()

    @registry.skill(timeout=1.0)
    def doors() -> dict[str, Any]:
        """Whether the front door is open or closed, and since when."""
        return {"door": "front", "state": "closed", "since": "09:15"}

    question = "How long has the front door been closed?"
    model = asked_of("doors", question)
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.final_answer == "The front door has been closed since 09:15."
    offered = fitting_sentences(Question.parse(question), [("doors", doors())])
    assert offered and not any(" since is " in s for s in offered)
    # The time alone, with no state beside it, says nothing of what held.
    alone = fitting_sentences(
        Question.parse(question), [("doors", {"door": "front", "since": "09:15"})]
    )
    assert not any(" since is " in s for s in alone)


def test_a_question_asking_since_when_is_answered_with_the_state_and_its_time() -> None:
    registry = Registry()

    @registry.skill(timeout=1.0)
    def window_contact() -> dict[str, Any]:
        """Whether the kitchen window is open or closed, and since when."""
        return {"window": "kitchen", "state": "open", "since": "07:40"}

    for question in (
        "Since when has the kitchen window been open?",
        "When was the kitchen window opened?",
    ):
        model = asked_of("window_contact", question)
        state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)
        assert state.final_answer == "The kitchen window has been open since 07:40.", question


def test_the_reading_the_question_names_is_the_one_stated_under_its_name() -> None:
    # Two meters in one result, each a reading under a serial number with a label of its own.
    both = {
        "quantity": "power",
        "meters": [
            {"serial": "04-77a1", "label": "heat pump", "value": 1400, "unit": "W"},
            {"serial": "09-13c2", "label": "dryer", "value": 2100, "unit": "W"},
        ],
    }
    said = fitting_sentences(Question.parse("What is the power of the dryer?"), [("meters", both)])
    assert said == ["The dryer is 2100 W."]
    # The other meter's reading is another thing's: never offered for the dryer.
    assert not any("1400" in s for s in said)
    said = fitting_sentences(
        Question.parse("What is the power of the heat pump?"), [("meters", both)]
    )
    assert said and all("1400 W" in s and "2100" not in s for s in said)
