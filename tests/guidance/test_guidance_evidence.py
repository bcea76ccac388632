"""The evidence-bound helps of guidance, each driven by a scripted model: results as lines,
answers the engine renders from them, and "I cannot tell" when no skill fits; a large model
gets none of them.

MockModel scripts ``likelihood`` by text: a key ``(marker, text)`` scores ``text`` after any
prompt holding ``marker`` (unscripted: -1000), so a test says how well the question fits a skill
and the content-free baseline.
"""

from __future__ import annotations

import json
import re
from typing import Any

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.prompt import PLAIN
from edge_agentd.guidance.answering import Answering
from edge_agentd.guidance.guidance import ANSWER_HEAD, Guidance, content_free
from edge_agentd.service.config.strategy import guidance_for

QUESTION = "How damp is the cellar?"


def cellar() -> Registry:
    registry = Registry()

    @registry.skill
    def cellar_sensor() -> dict[str, Any]:
        """The cellar's humidity and temperature."""
        return {
            "readings": [
                {"quantity": "humidity", "value": 61.0, "unit": "%RH"},
                {"quantity": "temperature", "value": 9.5, "unit": "°C"},
            ]
        }

    return registry


def fits(score: float) -> dict[Any, float]:
    """The question after the skill's description scores ``score``; after no skill, -20."""
    return {
        ("The skill cellar_sensor", f" {QUESTION}"): score,
        (content_free(PLAIN), f" {QUESTION}"): -20.0,
        ANSWER_HEAD: 0.0,
    }


def answer_pattern(model: MockModel) -> str:
    schema = model.calls[-1]["action_schema"]
    # An answer's own schema (guided), or the final answer's branch of an action's.
    [branch] = [b for b in schema.get("oneOf", [schema]) if "final_answer" in b["properties"]]
    pattern = branch["properties"]["final_answer"]["pattern"]
    assert isinstance(pattern, str)
    return pattern


def offered(model: MockModel) -> list[str]:
    """The answers the model chose among, last scored."""
    options = next(o for _, o in reversed(model.scored) if o[0].startswith(ANSWER_HEAD))
    return [json.loads(option)["final_answer"] for option in options]


def test_the_answer_is_a_sentence_the_engine_renders_from_the_result() -> None:
    scores = fits(-5.0) | {f"{ANSWER_HEAD}The humidity": 1.0}
    model = MockModel([], scores=scores)
    agent = Agent(model, cellar(), guidance=Guidance(), grounding=Grounding())
    state = agent.run(QUESTION)
    assert state.final_answer == "The humidity is 61.0 %RH."
    assert state.stream.root[-1].made_by == "engine"
    assert [e.type for e in state.stream.root][:2] == ["CallSkillAction", "SkillResultObservation"]
    # "damp" asks the humidity (the language's quality_nouns): of the cellar's lines, the humidity's
    # alone is offered, so the engine states it without asking the model to choose; the
    # question's subject ("cellar") is known to the skill, so "I cannot tell" is not offered.
    assert not any(options[0].startswith(ANSWER_HEAD) for _, options in model.scored)
    # The result turn shows the reading as lines; the event keeps the whole result.
    prompt = agent.render_prompt(state)
    assert "Result of cellar_sensor:\nreadings: 2 in all\nreadings humidity: 61.0 %RH\n" in prompt
    assert state.stream.root[1].result["readings"][0]["value"] == 61.0


def test_no_skill_that_fits_better_than_none_means_i_cannot_tell() -> None:
    model = MockModel([], scores=fits(-19.5))
    state = Agent(model, cellar(), guidance=Guidance(), grounding=Grounding()).run(QUESTION)
    assert [e.type for e in state.stream.root] == ["FinalAnswerAction"]
    assert state.final_answer == "I cannot tell: no skill here reads the cellar."
    assert state.stream.root[-1].made_by == "engine"
    assert model.prompts == []  # nothing was generated: the one sentence needs no choice
    # Off, the skill is called however badly it fits.
    model = MockModel([], scores=fits(-19.5))
    state = Agent(
        model, cellar(), guidance=Guidance(cannot_tell_margin=None), grounding=Grounding()
    ).run(QUESTION)
    assert state.stream.root[0].type == "CallSkillAction"


def test_result_lines_can_be_turned_off() -> None:
    model = MockModel([], scores=fits(-5.0))
    agent = Agent(model, cellar(), guidance=Guidance(result_lines=False), grounding=Grounding())
    state = agent.run(QUESTION)
    assert 'Result of cellar_sensor: {"readings":' in agent.render_prompt(state)


class SizedModel(MockModel):
    def __init__(self, size: int, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.size = size

    @property
    def info(self) -> dict[str, Any]:
        return {**super().info, "file_size_bytes": self.size}


def test_a_model_of_a_gibibyte_or_more_gets_none_of_these_helps_by_default() -> None:
    replies = ['{"skill_name": "cellar_sensor", "arguments": {}}', '{"final_answer": "61 %."}']
    model = SizedModel(3 << 30, replies, uses_action_schema=True)
    # Its own words asked for (``[model] answers = "model"``): only grounding holds them.
    agent = Agent(
        model, cellar(), guidance=guidance_for("auto", model, "model"), grounding=Grounding()
    )
    state = agent.run(QUESTION)
    assert isinstance(agent.guidance, Answering) and agent.guidance.own_words
    assert state.final_answer == "61 %."
    # The result as JSON, and the answer under the registry's own action schema, held only to
    # the loop's grounding: no value required, none invented.
    assert 'Result of cellar_sensor: {"readings":' in model.prompts[-1]
    assert re.fullmatch(answer_pattern(model), "Damp.")
    assert not re.fullmatch(answer_pattern(model), "It is 62 %RH.")
    assert "How answers read" not in model.prompts[0]


def test_a_part_the_question_already_names_is_not_what_it_asks() -> None:
    from edge_agentd.guidance.focus import asked_parts, result_parts

    parts = result_parts(
        {"sensor": "28-00000a1b2c3d", "label": "DS18B20", "readings": [{"value": -4.5}]}
    )
    query = "Sensor 28-00000A1B2C3D reads -4.5 °C. What temperature does the freezer read?"
    assert [path for path, _ in asked_parts(parts, query)] == ["label", "readings[0]"]
    # Numbers stay (a yes/no question may quote the value it asks about), and so does a short
    # string, and when the question names every part, none is dropped.
    numbers = result_parts({"load": 0.42, "unit": "min"})
    assert asked_parts(numbers, "Is the load 0.42 per min?") == numbers
    names = result_parts({"a": "kitchen", "b": "cellar"})
    assert asked_parts(names, "kitchen or cellar?") == names
