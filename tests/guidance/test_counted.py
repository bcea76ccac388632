"""A count answers "how many" only of the things it counts: a listing of every plant is no
count of the plants that need water."""

from __future__ import annotations

from typing import Any

import pytest

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
