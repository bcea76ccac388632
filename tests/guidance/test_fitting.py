"""Sentences a person would say, bound to the question (daemon/guidance/render.py,
fitting.py, labels.py; docs/design.md, "Small models", "Rendered answers" and "Bound to the
question"), for plugins written as docs/skills.md's ten-line example: no ``examples=``, no
``calls=``, keys as a plugin's author writes them.

Each rule with real result dicts; every sentence is also put to grounding (the loop's
validator, for a model that drives the loop and writes that sentence), which must take it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.evidence import answer_numbers, numbers_in
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.question import Question
from edge_agentd.agent.resultlines import result_line_parts
from edge_agentd.guidance.declines import cannot_tell_sentence
from edge_agentd.guidance.guidance import ANSWER_HEAD, Guidance
from edge_agentd.guidance.render import (
    fitting_sentences,
)
from edge_agentd.guidance.saying import TEMPLATE_WORDS, says_template, words_of


def plugin_home() -> Registry:
    """Plugins a user might write: a car charger, a door, a weather station, a mailbox, a
    status with units in its keys, and a temperature probe that is not there."""
    registry = Registry()

    @registry.skill(timeout=1.0)
    def ev_charger() -> dict[str, Any]:
        """The electric car's charger: whether the car is plugged in, its state of charge and
        the charging power."""
        return {"plugged_in": True, "state_of_charge_percent": 64, "charging_power_kw": 7.2}

    @registry.skill(timeout=1.0)
    def front_door() -> dict[str, Any]:
        """Whether the front door is open or closed."""
        return {"door": "front", "state": "closed"}

    @registry.skill(timeout=1.0)
    def weather_station() -> dict[str, Any]:
        """Readings of the weather station on the balcony."""
        return {
            "readings": [
                {"quantity": "pressure", "value": 1009.2, "unit": "hPa"},
                {"quantity": "humidity", "value": 41.5, "unit": "%RH"},
            ]
        }

    @registry.skill(timeout=1.0)
    def mailbox() -> dict[str, Any]:
        """Whether there is mail in the mailbox."""
        return {"mail": False}

    @registry.skill(timeout=1.0)
    def box_status() -> dict[str, Any]:
        """Memory and uptime of the box."""
        return {
            "memory": {"available_mib": 2587.9, "used_percent": 31.8},
            "uptime": {"seconds": 273600, "text": "3 d 4 h 0 min"},
        }

    @registry.skill(timeout=1.0)
    def probe() -> dict[str, Any]:
        """The water tank probe's temperature."""
        raise OSError("no thermal zone was found under /sys/class/thermal")

    return registry


def results_of(*skills: str) -> list[tuple[str, Any]]:
    registry = plugin_home()
    return [(name, registry.call(registry.get(name), {})) for name in skills]  # type: ignore[arg-type]


def fitting(question: str, *skills: str) -> list[str]:
    return fitting_sentences(Question.parse(question), results_of(*skills), plugin_home())


def taken_by_grounding(question: str, skill: str, sentence: str) -> bool:
    """Whether the loop's grounding takes ``sentence`` as the answer of a model that called
    ``skill`` for ``question`` and wrote it (a plain run: its validator is the only check)."""
    replies = [json.dumps({"skill_name": skill, "arguments": {}})]
    replies.append(json.dumps({"final_answer": sentence}))
    state = Agent(MockModel(replies), plugin_home(), grounding=Grounding()).run(
        question, max_retries=0
    )
    return state.outcome == "answered" and state.final_answer == sentence


# -- sentences a person would say --------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "skill", "expected"),
    [
        # A unit a key ends with goes after the value, not into the name.
        ("What is the charging power?", "ev_charger", ["The charging power is 7.2 kW."]),
        ("What is the state of charge?", "ev_charger", ["The state of charge is 64 %."]),
        # A single word a unit followed gives way to the path that says more, and the
        # question's other words pick the line of its subject they name.
        ("How much memory is available?", "box_status", ["The memory available is 2587.9 MiB."]),
        ("How much of the memory is used?", "box_status", ["The memory used is 31.8 %."]),
        # A duration in its unit's word, and a key that says only a value's form ("text")
        # is said as what its object is.
        ("What is the uptime?", "box_status", None),
    ],
)
def test_a_key_is_said_in_words_with_its_unit_after_the_value(
    question: str, skill: str, expected: list[str] | None
) -> None:
    said = fitting(question, skill)
    if expected is not None:
        assert said == expected
    for sentence in said:
        assert "_" not in sentence and " mib" not in sentence and " percent" not in sentence
        assert taken_by_grounding(question, skill, sentence), sentence
    if question == "What is the uptime?":
        assert said == ["The uptime is 273600 seconds.", "The uptime is 3 d 4 h 0 min."]


@pytest.mark.parametrize(
    ("question", "skill", "expected"),
    [
        ("Is the front door open?", "front_door", "No, the front door is closed."),
        ("Is the front door closed?", "front_door", "Yes, the front door is closed."),
        ("Tell me whether the front door is open", "front_door", "No, the front door is closed."),
        ("Is the car plugged in?", "ev_charger", "Yes, the car is plugged in."),
        ("Could you check if the car is plugged in?", "ev_charger", "Yes, the car is plugged in."),
        ("Is there mail?", "mailbox", "No, there is no mail."),
    ],
)
def test_a_yes_or_no_question_is_answered_yes_or_no_from_the_state_a_result_writes(
    question: str, skill: str, expected: str
) -> None:
    assert fitting(question, skill) == [expected]
    assert taken_by_grounding(question, skill, expected)


def test_a_yes_or_no_question_whose_state_no_result_writes_gets_no_sentence() -> None:
    # No lock flag or state, and no skill's word says "locked": nothing to say yes or no by.
    assert fitting("Is the car locked?", "ev_charger") == []
    assert fitting("Is the front door locked?", "front_door") == []
    assert cannot_tell_sentence(Question.parse("Is the car locked?")) == (
        "I cannot tell: no skill here says whether the car is locked."
    )


def test_a_flag_outside_a_yes_or_no_question_reads_yes_or_no() -> None:
    said = fitting("What does the car say?", "ev_charger")
    assert "Plugged in: yes." in said
    assert not any(" true" in s or " false" in s for s in said)


def test_a_list_is_said_as_a_list_and_its_count_only_to_how_many() -> None:
    registry = Registry()

    @registry.skill(timeout=1.0)
    def garden() -> dict[str, Any]:
        """The plants in the garden."""
        return {"plants": [{"name": "basil"}, {"name": "fern"}, {"name": "mint"}]}

    results = [("garden", {"plants": [{"name": "basil"}, {"name": "fern"}, {"name": "mint"}]})]
    listed = fitting_sentences(Question.parse("List the plants."), results, registry)
    assert listed == ["The plants are basil, fern and mint."]
    counted = fitting_sentences(Question.parse("How many plants are there?"), results, registry)
    assert counted == ["There are 3 plants."]


def test_a_skill_may_say_its_result_its_own_way() -> None:
    class Spec:
        description = "The rain gauge on the shed."

        class options:  # stands for SkillOptions, with its optional ``says``
            says = "The {label} reads {value} today."

    results = [("rain_gauge", {"rain_mm": 3.5})]
    said = fitting_sentences(Question.parse("How much rain fell?"), results, {"rain_gauge": Spec})
    assert said == ["The rain reads 3.5 mm today."]
    # A template with a digit, a field of its own or no value is not one: the default is used.
    assert says_template("The {label} is {value} in 2024.") is None
    assert says_template("The {label} is {other}.") is None
    assert says_template("Look at {label}.") is None
    assert says_template("{label}: {value}") == "{label}: {value}"


# -- bound to the question ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Humidity?", ["The humidity is 41.5 %RH."]),
        ("Can you tell me the humidity?", ["The humidity is 41.5 %RH."]),
        ("How humid is it?", ["The humidity is 41.5 %RH."]),
        ("Would you mind telling me the pressure?", ["The pressure is 1009.2 hPa."]),
        # Nothing here reads loudness, or the garage: no sentence of the pressure or humidity.
        ("How loud is it in the room?", []),
        ("What is the garage humidity?", []),
        ("The garage door?", []),
    ],
)
def test_only_sentences_whose_own_label_names_the_subject_are_offered(
    question: str, expected: list[str]
) -> None:
    assert fitting(question, "weather_station") == expected


def test_the_skills_words_name_the_thing_when_no_line_does_and_an_adjective_picks_the_line() -> (
    None
):
    # No key says "car" or "battery"; the skill's description says "car"; "charged" starts
    # the key state_of_charge, not charging_power.
    question = "How charged is the car's battery?"
    assert fitting(question, "ev_charger") == ["The state of charge is 64 %."]
    assert taken_by_grounding(question, "ev_charger", "The state of charge is 64 %.")


def test_a_question_with_no_subject_gets_every_sentence() -> None:
    said = fitting("Compare them", "weather_station")
    assert {"The pressure is 1009.2 hPa.", "The humidity is 41.5 %RH."} <= set(said)


def test_cannot_tell_says_why_in_words() -> None:
    assert cannot_tell_sentence(Question.parse("Could you check the garage door?")) == (
        "I cannot tell: no skill here reads the garage door."
    )
    # A comparison with a number names the thing compared, whole, and asks no state of it: not
    # "no result says whether the 1-minute load is average".
    whether = Question.parse("Tell me whether the 1-minute load average is above 2.")
    assert cannot_tell_sentence(whether, results=True) == (
        "I cannot tell: no result gives the 1-minute load average."
    )
    question = "What is the water tank temperature?"
    registry = plugin_home()
    model = MockModel([], scores={("The skill probe", f" {question}"): 0.0, ANSWER_HEAD: 0.0})
    for other in ("ev_charger", "front_door", "weather_station", "mailbox", "box_status"):
        registry.remove(other)
    state = Agent(
        model, registry, guidance=Guidance(cannot_tell_margin=None), grounding=Grounding()
    ).run(question)
    # Every call failed: the skill's own error is why.
    assert state.final_answer == (
        "I cannot tell: no thermal zone was found under /sys/class/thermal."
    )


def test_the_guided_answer_to_a_fragment_is_the_bound_sentence_not_the_likelier_one() -> None:
    # The model finds the pressure sentence far likelier; it is not about humidity, so it is
    # not offered: one sentence fits, and the engine says it.
    question = "Humidity?"
    model = MockModel(
        [],
        scores={
            ("The skill weather_station", f" {question}"): 0.0,
            ANSWER_HEAD: 0.0,
            f"{ANSWER_HEAD}The pressure": 50.0,
        },
    )
    state = Agent(model, plugin_home(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.final_answer == "The humidity is 41.5 %RH."
    assert state.stream.root[-1].made_by == "engine"


# -- every word and number is the evidence's, and grounding takes it ----------------------------

scalars = st.one_of(
    st.integers(-500, 5000),
    st.floats(-50, 5000, allow_nan=False).map(lambda x: round(x, 2)),
    st.booleans(),
    st.sampled_from(["open", "closed", "front", "on", "3 d 4 h"]),
)
keys = st.sampled_from(
    [
        "state",
        "door",
        "power_kw",
        "available_mib",
        "level_percent",
        "plugged_in",
        "text",
        "uptime_s",
        "seconds",
        "name",
        "mail",
        "charge",
    ]
)
results = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(keys, inner, min_size=1, max_size=4)
    ),
    max_leaves=8,
)
questions = st.sampled_from(
    [
        "Is the front door open?",
        "Is the car plugged in?",
        "What is the power?",
        "How charged is the car's battery?",
        "Please read the level.",
        "Is there mail?",
        "Uptime?",
        "What does it say?",
        "How loud is it in the room?",
    ]
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results, questions)
# A list under a key that names a unit: the engine says its items in that unit, and so does
# grounding (found by this test in a fresh run).
@example({"power_kw": [1, {"power_kw": 0}]}, "What is the power?")
# And a list inside that list: its items are in the unit too (found by this test in a fresh run).
@example({"power_kw": [0, [1]]}, "What is the power?")
# An empty list of values in a unit holds no things to be none of (found by this test).
@example({"level_percent": []}, "Please read the level.")
def test_every_fitting_sentence_is_of_the_evidence_and_grounding_takes_it(
    result: Any, question: str
) -> None:
    registry = Registry()

    @registry.skill(timeout=1.0)
    def gadget() -> Any:
        """The gadget by the front door, and the car: whatever it says."""
        return result

    said = fitting_sentences(Question.parse(question), [("gadget", result)], registry)
    texts = [question, "gadget", str(gadget.__doc__)]
    texts += [line.text for line in result_line_parts(result)]
    texts += [" ".join(words_of(text)) for text in texts]
    words = {w.casefold() for text in texts for w in words_of(text)} | TEMPLATE_WORDS
    for sentence in said:
        for word in words_of(sentence):
            assert word.casefold() in words, (word, sentence)
        for number in answer_numbers(sentence):
            assert float(number.replace(",", "")) in numbers_in(texts), (number, sentence)
        replies = [json.dumps({"skill_name": "gadget", "arguments": {}})]
        replies.append(json.dumps({"final_answer": sentence}))
        state = Agent(MockModel(replies), registry, grounding=Grounding()).run(
            question, max_retries=0
        )
        assert state.final_answer == sentence, (sentence, result, state.stream.root[-1])


def sensor_home() -> Registry:
    """A Pi's sensor skill as a plugin might write it, with no probe but a thermal zone, and a
    weather station."""
    registry = plugin_home()

    @registry.skill(timeout=1.0)
    def read_sensor(name: str) -> dict[str, Any]:
        """Current value of one sensor, with units."""
        # The only sensor there is, whatever was asked for (a model may pass any text).
        return {"sensor": "thermal_zone0", "quantity": "temperature", "value": 51.687, "unit": "°C"}

    return registry


@pytest.mark.parametrize(
    ("question", "skill", "expected"),
    [
        # The model finds the thermal zone's sentence likely: it names no DS18B20 probe. A
        # skill was called and answered, so the reason is that no result gives it.
        (
            "Please read the DS18B20 probe.",
            "read_sensor",
            "I cannot tell: no result gives the DS18B20 probe.",
        ),
        # Nothing reads loudness; the weather station's pressure is not offered.
        (
            "How loud is it in the room?",
            "weather_station",
            "I cannot tell: no result says how loud it is.",
        ),
        (
            "Is the car locked?",
            "ev_charger",
            "I cannot tell: no result says whether the car is locked.",
        ),
    ],
)
def test_a_guided_answer_is_i_cannot_tell_when_no_sentence_is_about_the_question(
    question: str, skill: str, expected: str
) -> None:
    model = MockModel(
        [],
        scores={
            (f"The skill {skill}", f" {question}"): 0.0,
            ANSWER_HEAD: 0.0,
            f"{ANSWER_HEAD}The": 50.0,  # any stated value is far likelier to the model
        },
    )
    guidance = Guidance(cannot_tell_margin=None)
    state = Agent(model, sensor_home(), guidance=guidance, grounding=Grounding()).run(question)
    assert [e.skill_name for e in state.stream.root if e.type == "CallSkillAction"][:1] == [skill]
    assert state.final_answer == expected
    assert state.stream.root[-1].made_by == "engine"


def test_a_result_of_thousands_of_lines_is_bound_from_its_first_ones() -> None:
    huge = {f"k{i}": {"state": f"s{i}x", "name": f"n{i}x"} for i in range(5000)}
    said = fitting_sentences(Question.parse("What is the state?"), [("gadget", huge)])
    assert 0 < len(said) <= 32
    assert fitting_sentences(Question.parse("Is the k1 open?"), [("gadget", huge)]) == []


def test_the_line_whose_own_key_is_the_thing_is_said_not_its_siblings_or_children() -> None:
    clock = {"date": "2026-12-06", "time": "10:30:44", "weekday": "Sunday"}
    said = fitting_sentences(Question.parse("What time is it?"), [("clock", clock)])
    assert said == ["The time is 10:30:44."]
    sensors = {
        "sensors": [
            {"name": "cpu", "kind": "thermal_zone", "unit": "°C"},
            {"name": "bme280", "kind": "iio", "unit": "%RH"},
        ]
    }
    question = Question.parse("How many sensors are there?")
    assert fitting_sentences(question, [("list_sensors", sensors)]) == ["There are 2 sensors."]


def test_a_key_that_opens_with_a_number_says_which_one_and_a_written_out_value_names_nothing() -> (
    None
):
    status = {
        "load_average": {"1min": 0.42, "5min": 0.3},
        "uptime": {"seconds": 1983, "text": "33 min"},
    }
    loads = fitting_sentences(Question.parse("What is the load average?"), [("status", status)])
    # The amount a key glues in says which one, said before the noun as a person says it.
    assert loads == ["The 1-minute load average is 0.42.", "The 5-minute load average is 0.3."]
    uptime = fitting_sentences(Question.parse("What is the uptime?"), [("status", status)])
    assert uptime == ["The uptime is 1983 seconds.", "The uptime is 33 min."]
    for sentence in loads + uptime:
        assert "status" not in sentence  # no "The system status are 0.42."


def test_a_line_is_named_by_the_objects_it_is_in_not_by_a_sibling_item() -> None:
    probe = {
        "sensor": "28-0316a2791bff",
        "label": "DS18B20",
        "readings": [{"quantity": "temperature", "value": 12.437, "unit": "°C"}],
    }
    said = fitting_sentences(Question.parse("What does the DS18B20 probe read?"), [("s", probe)])
    assert "The temperature is 12.437 °C." in said
    sensors = {
        "sensors": [
            {"name": "attic", "readings": [{"quantity": "humidity", "value": 61.0, "unit": "%"}]},
            {"name": "cellar", "readings": [{"quantity": "humidity", "value": 83.0, "unit": "%"}]},
        ]
    }
    said = fitting_sentences(Question.parse("What is the cellar humidity?"), [("s", sensors)])
    assert said and all("83.0" in s for s in said) and not any("61.0" in s for s in said)


def test_a_unit_is_no_answer_but_to_a_question_about_the_unit() -> None:
    from edge_agentd.agent.question import Question
    from edge_agentd.guidance.render import fitting_sentences

    listed = {
        "sensors": [{"name": "bme280", "measures": [{"quantity": "humidity", "unit": "%RH"}]}]
    }
    assert not any(
        "%RH" in s
        for s in fitting_sentences(Question.parse("Humidity?"), [("list_sensors", listed)])
    )
    asked = fitting_sentences(
        Question.parse("What unit is the humidity in?"), [("list_sensors", listed)]
    )
    assert any("%RH" in s for s in asked)


def test_a_count_is_no_answer_but_to_how_many() -> None:
    from edge_agentd.agent.question import Question
    from edge_agentd.guidance.render import fitting_sentences

    listed = {"count": 1, "quantity": "humidity", "sensors": [{"name": "bme280"}]}
    said = fitting_sentences(
        Question.parse("Please check the humidity for me."), [("list_sensors", listed)]
    )
    assert not any(" 1" in s for s in said)
    counted = fitting_sentences(
        Question.parse("How many sensors are there?"), [("list_sensors", listed)]
    )
    assert any("1" in s for s in counted)
