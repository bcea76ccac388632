"""Another word for the subject, linked by a general rule (docs/design.md, "Bound to the
question"): the words of the call that gave a result (what a listed call with its arguments
gets: "the temperature from the 1-Wire probe in the loft" of ``read_probe(name=...)``) name
what that result is of, for a model that drives the loop too (guidance/answering.py); a unit
the question asks in ("in percent", "in litres") picks the lines written in it; and a polite
form around "how full the barrel is" is read as the question it holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge_agentd import Agent, FinalAnswerAction, Grounding, MockModel, Registry
from edge_agentd.agent.question import Question
from edge_agentd.guidance.answering import Answering
from edge_agentd.guidance.render import fitting_sentences

PROBE = {"id": "28-aa01", "readings": [{"quantity": "temperature", "value": 9.5, "unit": "°C"}]}
BARREL = {
    "volume": {"value": 120.0, "unit": "L"},
    "fill": {"value": 60.0, "unit": "%"},
    "capacity": {"value": 200.0, "unit": "L"},
}


def home() -> Registry:
    registry = Registry()

    @registry.skill(calls=lambda: [({"name": "28-aa01"}, "the temperature of the 1-Wire probe")])
    def read_probe(name: str) -> dict[str, Any]:
        """One probe's readings, by its id."""
        return PROBE

    @registry.skill
    def rain_barrel() -> dict[str, Any]:
        """Water in the rain barrel, in litres and in percent of full."""
        return BARREL

    return registry


class FirstChoice(MockModel):
    """A model that writes the first sentence of an answer it is given as a list."""

    def generate(self, prompt: str, **kwargs: Any) -> str:
        schema = kwargs.get("action_schema") or {}
        for branch in schema.get("oneOf", []):
            answer = branch.get("properties", {}).get("final_answer", {})
            if "enum" in answer and len(schema["oneOf"]) == 1:
                self.calls.append(kwargs)
                return json.dumps({"final_answer": answer["enum"][0]}, ensure_ascii=False)
        return super().generate(prompt, **kwargs)


def test_a_listed_calls_words_name_what_its_result_is_of_for_a_driving_model() -> None:
    call = json.dumps({"skill_name": "read_probe", "arguments": {"name": "28-aa01"}})
    model = FirstChoice([call], uses_action_schema=True)
    agent = Agent(model, home(), guidance=Answering(), grounding=Grounding())
    state = agent.run("Can you read the 1-Wire probe?", max_iterations=3)
    action = state.stream[-1]
    assert isinstance(action, FinalAnswerAction), list(state.stream)
    assert action.made_by == "engine"
    # The sentences it chose among (or the one said with no model turn).
    schemas = [c["action_schema"] for c in model.calls if "action_schema" in c]
    enums = [
        b["properties"]["final_answer"].get("enum", [])
        for s in schemas
        for b in s.get("oneOf", [])
        if "final_answer" in b.get("properties", {})
    ]
    offered = [action.answer, *(sentence for enum in enums for sentence in enum)]
    assert "The temperature is 9.5 °C." in offered, offered


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Could you be kind enough to tell me how full the rain barrel is, in percent?",
         ["The fill is 60.0 %."]),
        ("How much water is in the barrel, in litres?",
         ["The volume is 120.0 L.", "The capacity is 200.0 L."]),
        ("How much water is in the barrel, in percent?", ["The fill is 60.0 %."]),
    ],
)  # fmt: skip
def test_a_unit_asked_in_picks_the_lines_written_in_it(question: str, expected: list[str]) -> None:
    parsed = Question.parse(question)
    assert parsed.subject is not None
    said = fitting_sentences(parsed, [("rain_barrel", BARREL)], home())
    assert said == expected
