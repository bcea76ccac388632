"""A count answers "how many" only of the things it counts: a listing of every plant is no
count of the plants that need water."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd import Registry
from edge_agentd.agent.question import Question
from edge_agentd.guidance.render import fitting_sentences

PLANTS: dict[str, Any] = {
    "count": 3,
    "plants": [
        {"name": "fern", "needs": [{"need": "water"}]},
        {"name": "basil", "needs": [{"need": "water"}, {"need": "light"}]},
        {"name": "cactus", "needs": [{"need": "light"}]},
    ],
}


def _said(question: str) -> list[str]:
    registry = Registry()

    @registry.skill
    def garden() -> dict[str, Any]:
        """The garden's plants and what each needs."""
        return PLANTS

    return fitting_sentences(Question.parse(question), [("garden", PLANTS)], registry)


@pytest.mark.parametrize("question", ["How many plants are there?", "How many plants are listed?"])
def test_a_count_of_every_thing_answers_how_many_of_them(question: str) -> None:
    assert "There are 3 plants." in _said(question)


@pytest.mark.parametrize(
    "question", ["How many plants need water?", "How many plants can use light?"]
)
def test_a_count_of_more_things_than_asked_about_is_not_offered(question: str) -> None:
    assert not any("3" in sentence for sentence in _said(question))


def _said_of(question: str, result: dict[str, Any], called: list[str] | None = None) -> list[str]:
    registry = Registry()

    @registry.skill
    def garden(need: str = "") -> dict[str, Any]:
        """The garden's plants, those with a need if one is given, and where each stands."""
        return result

    return fitting_sentences(
        Question.parse(question), [("garden", result)], registry, called=[called or []]
    )


NEEDING_WATER: dict[str, Any] = {
    "count": 1,
    "need": "water",
    "plants": [{"name": "fern", "spot": "kitchen", "kind": "indoor", "needs": ["water"]}],
}


def test_a_count_key_counts_the_list_beside_it_and_says_so() -> None:
    # One plant listed shows no count of its own: the ``count`` key says how many, of the
    # plants, and the listed plant's spot or kind answers no how-many question.
    said = _said_of("How many plants can use water?", NEEDING_WATER, called=["water"])
    assert said == ["The number of plants is 1."]
    two = {**PLANTS, "count": 2, "plants": PLANTS["plants"][:2]}
    assert _said_of("How many plants are there?", two) == ["There are 2 plants."]


def test_an_empty_listing_says_there_are_none_not_a_count_of_zero() -> None:
    said = _said_of("How many plants are there?", {"count": 0, "plants": [], "note": "none"})
    assert said == ["There are no plants."]


TEXTS = st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=8)


@settings(max_examples=60)
@given(
    # Items whose fields differ from their names: an item that is nothing but its name shows
    # no line of its own (a leftover the closing note names).
    st.lists(
        st.fixed_dictionaries({"name": TEXTS, "spot": TEXTS, "kind": TEXTS}).filter(
            lambda item: len(set(item.values())) == len(item)
        ),
        max_size=4,
    ),
    st.sampled_from(["plants", "pumps", "lamps"]),
)
def test_nothing_but_a_number_answers_how_many(items: list[dict[str, str]], things: str) -> None:
    result = {"count": len(items), things: items}
    said = _said_of(f"How many {things} are there?", result)
    texts = {value for item in items for value in item.values()}
    for sentence in said:
        assert not any(f" {text}" in sentence for text in texts), (sentence, result)
    # Where the list has things, what is said is their number.
    if items:
        assert said and all(str(len(items)) in s for s in said), (said, result)


def test_a_number_keyed_by_what_is_counted_says_how_many() -> None:
    home = {"people_home": 2, "open_doors": 1, "temperature": {"value": 21.5, "unit": "°C"}}
    assert _said_of("How many people are home?", home) == ["There are 2 people home."]
    assert _said_of("How many doors are open?", home) == ["The number of open doors is 1."]


def test_a_reading_of_a_counted_thing_is_no_number_of_them() -> None:
    # Each pump's power is a number about a pump, not how many pumps there are.
    pumps = {
        "readings": [
            {"pump": "well", "value": 40.0, "unit": "W"},
            {"pump": "pond", "value": 55.0, "unit": "W"},
        ]
    }
    said = _said_of("How many pumps are there?", pumps)
    assert not any("40" in s or "55" in s for s in said), said
    # A question asked in a unit is answered by an amount in it.
    hours = {"runtime": {"hours": 12.5, "text": "12 h 30 min"}}
    assert "12.5" in " ".join(_said_of("How many hours has the pump run?", hours))
