"""Answers bound to the evidence (daemon/agent/evidence.py): result lines and copy-only values.

The property tests draw skill results and questions at random and then strings the copy-only
pattern admits: none holds a number, as a reader picks numbers out, that the evidence lacks, and
a number with a unit only ever carries its reading's unit.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd.agent.claims import absent_value
from edge_agentd.agent.evidence import (
    Copyable,
    answer_numbers,
    answer_pattern,
    answer_schema,
    copyable,
    first_unwritten,
    numbers_in,
)
from edge_agentd.agent.resultlines import result_lines

BME = {
    "sensor": "bme280",
    "readings": [
        {"quantity": "temperature", "value": 22.7, "unit": "°C"},
        {"quantity": "humidity", "value": 41.5, "unit": "%RH"},
    ],
}


def admits(evidence: Copyable, answer: str) -> bool:
    return re.fullmatch(answer_pattern(evidence), answer) is not None


def test_a_result_reads_as_name_value_unit_lines() -> None:
    lines = result_lines({**BME, "memory": {"available_mib": 2367.0}})
    assert lines == [
        "sensor: bme280",
        "readings: 2 in all",
        "readings temperature: 22.7 °C",
        "readings humidity: 41.5 %RH",
        "memory available_mib: 2367.0",
    ]


def test_a_reading_is_copied_with_its_own_unit_and_no_number_is_made_up() -> None:
    evidence = copyable([BME], "What is the humidity?")
    assert admits(evidence, "The humidity is 41.5 %RH.")
    assert admits(evidence, "It is 22.7 °C and 41.5 %RH.")
    assert not admits(evidence, "The humidity is 41.5 degrees.")  # a unit it does not have
    assert not admits(evidence, "The humidity is 41.5%.")
    assert not admits(evidence, "The humidity is 42 %RH.")  # a number nothing gave
    assert not admits(evidence, "The humidity is 41.6 %RH.")


def test_a_bare_number_takes_only_punctuation_or_a_word_of_the_evidence() -> None:
    status = {"load_average": {"1min": 0.42}, "memory": {"available_mib": 2367.0}}
    evidence = copyable([status], "What is the load?")
    assert admits(evidence, "The load average is 0.42.")
    assert admits(evidence, "2367.0 MiB are available, the load is 0.42.")
    # One sentence: a small model free to go on repeats itself until the token cap.
    assert not admits(evidence, "The load is 0.42. The load is 0.42.")
    assert not admits(evidence, "The load average is 0.42 milliseconds.")
    assert not admits(evidence, "The load average is 0.420.42.")
    # Only a word of the number's own name may follow it, and only as a whole word.
    uptime = copyable([{"memory": {"used_percent": 37.6}, "uptime": {"seconds": 458000}}], "?")
    assert admits(uptime, "37.6 percent is used, up 458000 seconds.")
    assert not admits(uptime, "The memory is 37.6 seconds.")
    assert not admits(uptime, "Used for 37.6 percentages.")
    # A colon after a bare number takes a space: "10:10:10", built from the question's "10",
    # would read as a time no result holds.
    days = copyable([{"weekday": "Monday"}], "What weekday will it be in 10 days?")
    assert admits(days, "In 10 days it will be Monday.")
    assert admits(days, "In 10: Monday.")
    assert not admits(days, "In 10 days it will be Monday, 10:10:10.")
    assert not admits(days, "Monday, 10:10:10.")


def test_with_nothing_to_copy_no_digit_can_be_written() -> None:
    evidence = copyable([], "Will it rain tomorrow?")
    assert admits(evidence, "I cannot tell: no skill says whether it will rain.")
    assert not admits(evidence, "It will rain 5 mm.")
    schema = answer_schema(answer_pattern(evidence))
    assert schema["required"] == ["final_answer"]


scalars = st.one_of(
    st.integers(-100_000, 100_000),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3)),
    st.text(alphabet="abcXYZ0123456789-:. %°/", max_size=12),
)
readings = st.fixed_dictionaries(
    {
        "value": st.floats(-500, 5000, allow_nan=False).map(lambda x: round(x, 2)),
        "unit": st.sampled_from(["°C", "%RH", "hPa", "lx"]),
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
questions = st.text(alphabet="What is the 12.5 -3 reading? ab", max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(results, max_size=3), questions, st.data())
def test_no_admitted_answer_holds_a_number_absent_from_the_evidence(
    found: list[Any], question: str, data: st.DataObject
) -> None:
    evidence = copyable(found, question)
    pattern = answer_pattern(evidence)
    answer = data.draw(st.from_regex(pattern, fullmatch=True).filter(lambda a: len(a) < 400))
    allowed = numbers_in(evidence.values)
    for number in answer_numbers(answer):
        assert float(number.replace(",", "")) in allowed, (number, answer, evidence.values)


def test_an_empty_answer_cannot_be_written_with_or_without_evidence() -> None:
    # Random weights close the string at once; the grammar must not let that be an answer.
    for evidence in (
        Copyable(values=(), words=()),
        Copyable(values=("0.42", "2367.0"), words=(("min",), ("available", "mib"))),
        Copyable(values=("48.3 °C",), words=((),)),
    ):
        assert not admits(evidence, "")
        assert not admits(evidence, ".")
        assert admits(evidence, "I cannot tell.")
    assert admits(Copyable(values=("48.3 °C",), words=((),)), "48.3 °C")


def test_once_there_are_results_an_answer_states_one_of_their_values_or_cannot_tell() -> None:
    evidence = copyable([{"date": "2026-12-04", "weekday": "Friday", "days": 1}], "Next Friday?")
    # The weekday is one the question already says: stating it would answer nothing.
    assert "2026-12-04" in evidence.stated and "Friday" not in evidence.stated
    assert admits(evidence, "Next Friday is 2026-12-04.")
    assert admits(evidence, "It is 1 days away.")
    assert admits(evidence, "I cannot tell: the result does not say.")
    assert not admits(evidence, "The date is next Friday.")
    # A word a result holds as its value is stated too; a list item's label is not.
    days = copyable([{"weekday": "Saturday"}], "What weekday was it?")
    assert admits(days, "It was Saturday.") and not admits(days, "It was a day.")
    listed = copyable([{"readings": [{"quantity": "rain", "value": 3.5, "unit": "mm"}]}], "Rain?")
    assert "rain" not in listed.stated and admits(listed, "It rained 3.5 mm.")
    # Without results nothing is required.
    assert admits(copyable([], "Will it rain?"), "It may rain.")


def test_the_value_comes_within_twelve_words_and_never_glued_to_a_letter() -> None:
    evidence = copyable([BME], "How humid is it?")
    ramble = "The air in here is not dry and it is not wet and it is not "
    assert not admits(evidence, ramble + "41.5 %RH.")
    assert admits(evidence, "The air in here is 41.5 %RH, not dry.")
    assert not admits(evidence, "The BME22.7 °C sensor says so.")
    assert not admits(copyable([], "What is in 10 days?"), "In10 days")
    # A number of the question is its own only when it stands alone: not BME280's 280.
    assert "280" not in copyable([], "What does the BME280 show in 10 days?").values


def test_a_name_the_question_writes_with_digits_is_copied_whole_as_it_spells_it() -> None:
    evidence = copyable([BME], "What temperature does the BME280 sensor show?")
    assert admits(evidence, "The BME280 sensor shows 22.7 °C.")
    assert not admits(evidence, "The BME 280 sensor shows 22.7 °C.")  # 280 alone is no value
    assert not admits(evidence, "The BME281 sensor shows 22.7 °C.")
    # Stating the question's own name answers nothing: a value of the results is still due.
    assert not admits(evidence, "The BME280 sensor shows it.")
    probe = copyable([{"sensor": "28-0316a2791bff"}], "What is the ID of the 1-Wire sensor?")
    assert admits(probe, "The 1-Wire's ID is 28-0316a2791bff.")
    assert "1-Wire" not in probe.stated


def test_a_value_ending_in_a_letter_is_never_glued_to_what_follows() -> None:
    probe = {"sensor": "28-0316a2791bff", "readings": [{"value": 12.437, "unit": "°C"}]}
    evidence = copyable([probe], "What does the 1-Wire probe read?")
    assert admits(evidence, "The 1-Wire probe reads 12.437 °C.")
    assert admits(evidence, "It reads 12.437 °C/ 28-0316a2791bff")
    assert not admits(evidence, "The 1-Wireprobe reads 12.437 °C.")
    assert not admits(evidence, "It reads 12.437 °C28-0316a2791bff.")
    assert not admits(evidence, "It reads 12.437 °Cs.")


def test_a_bare_number_takes_only_whole_words_of_its_name() -> None:
    # "1min" names the window of the load average, not its unit: "0.42 min" reads as minutes.
    evidence = copyable([{"load_average": {"1min": 0.42}}], "What is the load?")
    assert admits(evidence, "The load average is 0.42.")
    assert not admits(evidence, "The load is 0.42 min.")



# Texts of digits, signs, separators, letters and line breaks: where one text ends and the next
# begins is where a number read across them would go wrong.
number_texts = st.lists(st.text(alphabet="0123456789,.-+ %°Ca_:\n", max_size=16), max_size=5)


@given(number_texts)
def test_texts_read_as_one_hold_the_numbers_each_holds_alone(texts: list[str]) -> None:
    # The grounding check scans the evidence's texts at once: it finds what a scan of each would.
    assert numbers_in(texts) == set().union(*(numbers_in([t]) for t in texts))


@given(number_texts, st.text(alphabet="0123456789,.- ", max_size=16))
def test_the_first_unwritten_number_is_the_first_whose_value_the_texts_lack(
    texts: list[str], answer: str
) -> None:
    # The check reads the evidence only until it has found each number of the answer.
    numbers, written = answer_numbers(answer), numbers_in(texts)
    lacking = [n for n in numbers if float(n.replace(",", "")) not in written]
    assert first_unwritten(numbers, "\n".join(texts)) == (lacking[0] if lacking else None)


def test_no_value_or_unit_is_read_across_two_texts() -> None:
    assert absent_value("BME280", ["BME", "280"]) == "BME280"
    assert absent_value("BME280", ["the BME280"]) is None
    # A unit that opens the next text is no unit of the number that ends this one.
    assert absent_value("21.5 °C", ["21.5 %RH", "°C"]) == "21.5 °C"
    assert absent_value("21.5 °C", ["21.5", "°C"]) is None
