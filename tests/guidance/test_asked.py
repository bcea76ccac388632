"""The value an answer must state (daemon/guidance/asked.py, daemon/agent/evidence.py): the line of
each result whose name the question is likeliest after, a reading's other form only when the
question names its unit, and a list's count only where someone would ask it.

Scripted models stand in for the 270M: they score the line names a test names, so each test says
which line a model judged the question to ask about and checks what the answer may then state.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd.agent.evidence import answer_numbers, answer_pattern, copyable, numbers_in
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.loop import Agent
from edge_agentd.agent.question import head_noun
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.resultlines import result_line_parts, result_lines
from edge_agentd.guidance.asked import asked_lines, candidate_lines
from edge_agentd.guidance.guidance import ANSWER_HEAD, Guidance
from edge_agentd.model.scripted import MockModel

NOW = {"date": "2026-12-04", "time": "12:35:06", "weekday": "Friday"}
CPU = {
    "sensor": "thermal_zone0",
    "value": 48.312,
    "unit": "°C",
    "also": {"value": 118.96, "unit": "°F", "unit_name": "Fahrenheit"},
}


def admits(pattern: str, answer: str) -> bool:
    return re.fullmatch(pattern, answer) is not None


def test_the_line_the_question_is_likeliest_after_is_the_one_to_state() -> None:
    question = "How late is it?"
    model = MockModel([], scores={("Result of now: time\n", f" {question}"): -1.0})
    asked = asked_lines(model, question, [("now", NOW)])
    assert asked is not None and [line.text for line in asked] == ["time: 12:35:06"]
    # Each line was scored by its name alone, the digits of its value left out.
    scored = [prompt for prompt, _ in model.scored]
    assert any("Result of now: weekday\n" in p for p in scored)
    assert not any("12:35:06" in p for p in scored)
    pattern = answer_pattern(copyable([NOW], question, asked))
    assert admits(pattern, "It is 12:35:06.")
    assert not admits(pattern, "It is Friday.")  # a value of the result, not the one asked
    assert admits(pattern, "I cannot tell.")
    # Unnarrowed, any value of the result may be the one stated.
    assert admits(answer_pattern(copyable([NOW], question)), "It is Friday.")


def test_lines_within_the_margin_of_the_best_may_each_be_stated() -> None:
    question = "Which day is it?"
    scores = {("now: date\n", f" {question}"): -1.0, ("now: weekday\n", f" {question}"): -2.0}
    asked = asked_lines(MockModel([], scores=scores), question, [("now", NOW)])
    assert asked is not None
    assert sorted(line.name for line in asked) == ["date", "weekday"]


def test_a_name_likelier_as_the_answering_part_outweighs_shared_words() -> None:
    # The question shares "today" with days_from_today, and is a little likelier after it;
    # read the other way, "date" is much likelier the part that answers this question than
    # the part that answers a question with no content, and the two directions add up.
    question = "When is next Friday, as a date?"
    result = {"date": "2026-12-11", "weekday": "Friday", "days_from_today": 7}
    scores = {
        ("resolve_date: date\n", f" {question}"): -6.0,
        ("resolve_date: days from today\n", f" {question}"): -3.0,
        (f"Question: {question}\n", " date"): -1.0,
        ("Question: What is it?\n", " date"): -8.0,
        (f"Question: {question}\n", " days from today"): -6.0,
        ("Question: What is it?\n", " days from today"): -6.0,
    }
    asked = asked_lines(MockModel([], scores=scores), question, [("resolve_date", result)])
    assert asked is not None and [line.name for line in asked] == ["date"]
    # Without the second direction, the shared word would have chosen.
    first_only = {key: value for key, value in scores.items() if "Question:" not in key[0]}
    asked = asked_lines(MockModel([], scores=first_only), question, [("resolve_date", result)])
    assert asked is not None and [line.name for line in asked] == ["days_from_today"]


def test_each_result_has_its_own_asked_line() -> None:
    question = "What are the time and the CPU temperature?"
    scores = {("now: time\n", f" {question}"): -1.0}
    asked = asked_lines(MockModel([], scores=scores), question, [("now", NOW), ("cpu", CPU)])
    assert asked is not None
    assert {line.text for line in asked} >= {"time: 12:35:06", "value: 48.312 °C"}


def test_a_model_that_cannot_score_narrows_nothing() -> None:
    class NoScores(MockModel):
        def likelihood(self, prompts: Any, text: str) -> list[float]:
            from edge_agentd.agent.protocol import ScoringUnsupported

            raise ScoringUnsupported("no scores here")

    assert asked_lines(NoScores([]), "How late is it?", [("now", NOW)]) is None


def test_the_noun_a_what_question_asks_for_names_its_line_before_any_scoring() -> None:
    # Both directions put days_from_today first (as the 270M's did for every "what date"
    # question of the dev half); the question's own noun says it asks for the date.
    question = "What date is next Friday?"
    result = {"date": "2026-12-11", "weekday": "Friday", "days_from_today": 7}
    scores = {
        ("resolve_date: days from today\n", f" {question}"): -1.0,
        (f"Question: {question}\n", " days from today"): -1.0,
    }
    model = MockModel([], scores=scores)
    asked = asked_lines(model, question, [("resolve_date", result)])
    assert asked is not None and [line.name for line in asked] == ["date"]
    assert model.scored == []  # named by the question: nothing was scored
    sensors = {"sensors": [{"name": "bme280", "kind": "iio"}, {"name": "w1", "kind": "w1"}]}
    asked = asked_lines(model, "Which sensors are there?", [("list_sensors", sensors)])
    assert asked is not None and [line.name for line in asked] == ["sensors"]
    pattern = answer_pattern(copyable([result], question, [line for line in asked]))
    assert not admits(pattern, "Next Friday is 7 days from today.")


def test_the_noun_a_how_many_question_counts_names_its_line() -> None:
    # Without the noun, the scores had chosen seconds for "How many hours ...?".
    status = {"uptime": {"seconds": 458000, "hours": 127.2, "days": 5.3}}
    model = MockModel([], scores={})
    for question in ("How many hours has it been up?", "how many  hours since the boot?"):
        asked = asked_lines(model, question, [("system_status", status)])
        assert asked is not None and [line.name for line in asked] == ["uptime hours"]
    assert model.scored == []
    assert head_noun("How many sensors does it have?") == "sensors"
    assert head_noun("How much of the RAM is used?") == "ram"
    assert head_noun("How humid is it?") is None
    # A possessive stands where an article would: the noun after it is the one asked for.
    assert head_noun("What is today's date?") == "date"
    assert head_noun("What is my Pi's uptime?") == "uptime"
    # Straight after "what", "'s" is "is": "What time's it?" asks for the time.
    assert head_noun("What time's it?") == "time"
    assert head_noun("Which sensor's warmest?") == "sensor"
    # With a modal the noun comes before "be"; a pronoun is no noun.
    assert head_noun("What will the date be in 30 days?") == "date"
    assert head_noun("Which would the warmest be?") == "warmest"
    assert head_noun("What will the probe read?") is None
    assert head_noun("What will it be?") is None
    assert head_noun("What is it?") is None


def test_a_noun_that_ends_several_names_or_none_leaves_the_choice_to_the_scores() -> None:
    scores = {("now: weekday\n", " What day is it?"): -1.0}
    asked = asked_lines(MockModel([], scores=scores), "What day is it?", [("now", NOW)])
    assert asked is not None and [line.name for line in asked] == ["weekday"]
    two = {"memory": {"total_mib": 1024, "free_mib": 512}, "disk": {"free_mib": 9000}}
    scores = {("status: disk free mib\n", " What is free?"): -1.0}
    asked = asked_lines(MockModel([], scores=scores), "What is free?", [("status", two)])
    # A key is a whole word: "free_mib" is not the noun "free".
    assert asked is not None and "disk free_mib" in [line.name for line in asked]


@given(st.text(max_size=80))
def test_the_head_noun_of_any_text_is_a_word_of_it_or_none(text: str) -> None:
    noun = head_noun(text)
    assert noun is None or (noun.isalpha() and noun in text.casefold())


def test_a_name_the_question_states_is_not_what_it_asks() -> None:
    result = {"sensor": "bme280", "readings": [{"quantity": "humidity", "value": 41.5,
                                                "unit": "%RH"}]}  # fmt: skip
    lines = [line.text for line in candidate_lines(result, "What does the BME280 read?")]
    assert "sensor: bme280" not in lines
    assert "readings humidity: 41.5 %RH" in lines


def test_another_form_of_a_reading_is_stated_only_when_the_question_names_its_unit() -> None:
    plain = copyable([CPU], "What is the CPU temperature?")
    assert "118.96 °F" not in plain.values and "48.312 °C" in plain.stated
    for question in ("What is the CPU temperature in Fahrenheit?", "The CPU in °F?"):
        named = copyable([CPU], question)
        assert "118.96 °F" in named.stated and "48.312 °C" not in named.stated
        pattern = answer_pattern(named)
        assert admits(pattern, "The CPU is at 118.96 °F.")
        assert not admits(pattern, "The CPU is at 48.312 °C.")
    # The line of the other form is a candidate only when its unit is asked for.
    assert [line.text for line in candidate_lines(CPU, "How hot is it?")] == ["value: 48.312 °C"]
    assert "also: 118.96 °F" in [line.text for line in candidate_lines(CPU, "In Fahrenheit?")]
    # The unit's name is no value to state on its own.
    assert "Fahrenheit" not in copyable([CPU], "In Fahrenheit?").stated


def test_a_count_is_shown_only_for_a_list_someone_would_count() -> None:
    sensors = {
        "sensors": [
            {"name": "bme280", "measures": [{"quantity": "humidity"}, {"quantity": "pressure"}]},
            {"name": "w1", "measures": [{"quantity": "temperature"}]},
        ],
        "readings": [{"quantity": "humidity", "value": 41.5, "unit": "%RH"}],
    }
    lines = result_lines(sensors)
    assert "sensors: 2 in all: bme280, w1" in lines  # each item's name beside the count
    assert not [line for line in lines if "measures:" in line]  # inside a list's items
    assert not [line for line in lines if line.startswith("readings:")]  # a list of one
    evidence = copyable([sensors], "How many sensors are there?")
    assert "2" in evidence.values and "1" not in evidence.values


def test_a_guided_run_states_the_asked_line() -> None:
    registry = Registry()

    @registry.skill
    def clock_now() -> dict[str, str]:
        """The local date, time and weekday."""
        return dict(NOW)

    question = "What time is it?"
    scores = {
        ("The skill clock_now", f" {question}"): -1.0,
        ("Result of clock_now: time\n", f" {question}"): -1.0,
        ANSWER_HEAD: 0.0,
    }
    model = MockModel([], scores=scores)
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)
    # The asked line alone is stated: one sentence, no choice to make.
    assert state.final_answer == "The time is 12:35:06."
    assert not [o for _, o in model.scored if o[0].startswith(f"{ANSWER_HEAD}The")]
    # Turned off, the sentences are still bound to the question: the line whose own key is
    # its subject ("time") is stated, however likely the model finds the weekday.
    model = MockModel([], scores=scores | {f"{ANSWER_HEAD}The weekday": 1.0})
    state = Agent(model, registry, guidance=Guidance(state_asked=False), grounding=Grounding()).run(
        question
    )
    assert state.final_answer == "The time is 12:35:06."


readings = st.fixed_dictionaries(
    {
        "value": st.floats(-500, 5000, allow_nan=False).map(lambda x: round(x, 2)),
        "unit": st.sampled_from(["°C", "%RH", "hPa"]),
    },
    optional={
        "also": st.fixed_dictionaries(
            {
                "value": st.floats(-500, 5000, allow_nan=False).map(lambda x: round(x, 2)),
                "unit": st.sampled_from(["°F", "K"]),
                "unit_name": st.sampled_from(["Fahrenheit", "Kelvin"]),
            }
        )
    },
)
results = st.recursive(
    st.one_of(st.integers(-1000, 1000), st.text(alphabet="ab1-:", max_size=8), readings),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(alphabet="abc_", min_size=1, max_size=6), inner, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results, st.sampled_from(["What is it?", "In Fahrenheit?", "in K 12?"]), st.data())
def test_no_answer_bound_to_asked_lines_holds_a_number_absent_from_the_evidence(
    result: Any, question: str, data: st.DataObject
) -> None:
    lines = result_line_parts(result)
    asked = data.draw(st.lists(st.sampled_from(lines), max_size=2)) if lines else []
    evidence = copyable([result], question, asked)
    answer = data.draw(
        st.from_regex(answer_pattern(evidence), fullmatch=True).filter(lambda a: len(a) < 300)
    )
    allowed = numbers_in(evidence.values)
    for number in answer_numbers(answer):
        assert float(number.replace(",", "")) in allowed, (number, answer, evidence.values)


def test_a_how_many_question_about_a_list_states_its_count_not_its_names() -> None:
    result = {
        "sensors": [
            {"name": "thermal_zone0", "kind": "thermal_zone"},
            {"name": "bme280", "kind": "iio"},
            {"name": "28-0316a2791bff", "kind": "w1"},
        ]
    }
    model = MockModel([], scores={})
    question = "How many sensors measure temperature?"
    asked = asked_lines(model, question, [("list_sensors", result)])
    assert asked is not None and [(line.name, line.node) for line in asked] == [("sensors", 3)]
    pattern = answer_pattern(copyable([result], question, asked))
    assert admits(pattern, "There are 3 sensors.")
    # The answer the 270M wrote: names, none of them the count asked for.
    assert not admits(pattern, "The sensors are 28-0316a2791bff, 28-0316a2791bff.")
    # Asked which, the names are what to state.
    asked = asked_lines(model, "Which sensors are there?", [("list_sensors", result)])
    pattern = answer_pattern(copyable([result], "Which sensors are there?", asked))
    assert admits(pattern, "The sensors are thermal_zone0, bme280, 28-0316a2791bff.")
