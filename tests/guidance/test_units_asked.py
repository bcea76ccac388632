"""A value asked for in another unit ("in kilowatts", "How many gallons ...") is said in it by
the engine (daemon/agent/units.py): converted from the skill's value, held by grounding as that
value's, and never made up where the units measure different things."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.amounts import number_and_unit
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.question import Question
from edge_agentd.agent.units import UNITS, asked_units, convert, said_in, said_number
from edge_agentd.guidance.render import fitting_sentences

RESULTS: dict[str, Any] = {
    "meter": {"power_w": 1840, "energy_today_kwh": 7.3},
    "tank": {"volume_l": 137.5, "capacity_l": 300.0, "fill_percent": 45.8},
    "box": {"memory": {"total_mib": 3793.3, "available_mib": 2367.0, "used_percent": 37.6}},
    "probe": {"sensor": "probe", "readings": [{"quantity": "temperature", "value": 20.0,
                                               "unit": "°C"}]},
}  # fmt: skip


def home() -> Registry:
    registry = Registry()

    @registry.skill
    def meter() -> dict[str, Any]:
        """The house's electricity meter: power drawn now and energy used today."""
        return RESULTS["meter"]

    @registry.skill
    def tank() -> dict[str, Any]:
        """The rain water tank: the water in it and its capacity."""
        return RESULTS["tank"]

    @registry.skill
    def box() -> dict[str, Any]:
        """Memory of this box."""
        return RESULTS["box"]

    @registry.skill
    def probe() -> dict[str, Any]:
        """The garden probe's temperature."""
        return RESULTS["probe"]

    return registry


def _said(question: str, skill: str) -> list[str]:
    return fitting_sentences(Question.parse(question), [(skill, RESULTS[skill])], home())


def _run(question: str, skill: str, answer: str) -> Any:
    replies = [
        json.dumps({"skill_name": skill, "arguments": {}}),
        json.dumps({"final_answer": answer}),
    ]
    return Agent(MockModel(replies), home(), grounding=Grounding()).run(question, max_retries=0)


@pytest.mark.parametrize(
    ("question", "skill", "expected"),
    [
        ("How much power is the house drawing, in kilowatts?", "meter", "1.84 kW"),
        ("How many watt-hours of energy were used today?", "meter", "7300 Wh"),
        ("How much memory is available in GB?", "box", "2.482 GB"),
        ("How much memory is available, in GiB?", "box", "2.312 GiB"),
        ("How many gallons of water are in the tank?", "tank", "36.32 gal"),
        ("What is the garden temperature in degrees Fahrenheit?", "probe", "68 °F"),
    ],
)
def test_a_value_is_said_in_the_unit_asked_and_grounding_holds_it(
    question: str, skill: str, expected: str
) -> None:
    said = _said(question, skill)
    assert said and any(expected in sentence for sentence in said), said
    chosen = next(sentence for sentence in said if expected in sentence)
    state = _run(question, skill, chosen)
    assert state.final_answer == chosen, list(state.stream)


def test_lines_in_no_unit_of_that_measure_are_not_offered() -> None:
    # The fill in percent is no volume: asked in gallons, only the volumes are said.
    said = _said("How many gallons of water are in the tank?", "tank")
    assert said and all("gal" in sentence for sentence in said), said
    assert not any("%" in sentence for sentence in said)


def test_a_converted_value_the_engine_did_not_compute_is_refused() -> None:
    question = "How much power is the house drawing, in kilowatts?"
    state = _run(question, "meter", "The power is 1.9 kW.")
    assert state.final_answer is None
    state = _run(question, "meter", "The power is 1840 kW.")
    assert state.final_answer is None


def test_units_of_different_measures_do_not_convert() -> None:
    assert convert(1840, "W", "kWh") is None
    assert convert(3.0, "L", "GB") is None
    assert convert(1.0, "furlongs", "km") is None
    assert said_in("45.8 %", ["gal"]) == "45.8 %"
    # Power asked in gallons: said as the skill has it, never as a volume.
    assert _said("How much power is the house drawing, in gallons?", "meter") == [
        "The power is 1840 W."
    ]


def test_which_words_ask_for_a_unit() -> None:
    assert asked_units("How much memory is available in GB?", ENGLISH) == ("GB",)
    assert asked_units("How many gallons of water are left?", ENGLISH) == ("gal",)
    assert asked_units("What is it in degrees Celsius?", ENGLISH) == ("°C",)
    # A number of days is a time from now, not a unit to say a value in.
    assert asked_units("What weekday will it be in 10 days?", ENGLISH) == ()
    assert asked_units("What is the power?", ENGLISH) == ()


@given(
    value=st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
    pair=st.sampled_from(
        [(a, b) for a in UNITS for b in UNITS if UNITS[a].measure == UNITS[b].measure]
    ),
)
def test_a_conversion_goes_back_to_its_value(value: float, pair: tuple[str, str]) -> None:
    there = convert(value, *pair)
    assert there is not None
    back = convert(there, pair[1], pair[0])
    assert back is not None and math.isclose(back, value, rel_tol=1e-9, abs_tol=1e-6)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_converted_number_is_written_plainly_and_close(value: float) -> None:
    text = said_number(value)
    assert "e" not in text.casefold() and text.strip() == text
    shown = float(text)
    # Four significant digits, and never fewer than the whole part's.
    assert math.isclose(shown, value, rel_tol=1e-3, abs_tol=1e-4) or abs(value) < 1e-4


def test_one_reader_reads_a_number_and_the_unit_after_it() -> None:
    # As the engine writes a value it renders: a signed number and any symbol.
    assert number_and_unit("2367.0 MiB", None) == ("2367.0", "MiB")
    assert number_and_unit("-3.5 °C", None) == ("-3.5", "°C")
    assert number_and_unit("12 km/h", None) == ("12", "km/h")
    # As the language writes an amount: in words, however they are joined.
    assert number_and_unit("5-minute", ENGLISH) == ("5", "minute")
    assert number_and_unit("5min", ENGLISH) == ("5", "min")
    assert number_and_unit("-3.5 °C", ENGLISH) is None
    # Whole, or nothing.
    assert number_and_unit("5 minutes ago", ENGLISH) is None
    assert number_and_unit("about 5 MiB", None) is None


@given(st.text(max_size=60))
def test_the_reader_of_a_number_and_its_unit_takes_any_text(text: str) -> None:
    for language in (ENGLISH, None):
        found = number_and_unit(text, language)
        assert found is None or (found[0] in text and found[1] in text)
