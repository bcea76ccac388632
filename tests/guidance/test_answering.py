"""One model turn where one is enough (issue 41): a model that drives the loop chooses its calls,
and once it has results its answer is the engine's sentence that fits the question: said with no
second model turn when one fits, chosen by the model's decoding when several do, its own words
when none does or when asked for (docs/design.md, "One model turn")."""

from __future__ import annotations

import json
from typing import Any

from edge_agentd import Agent, FinalAnswerAction, Grounding, MockModel, Registry
from edge_agentd.guidance.answering import Answering


def home() -> Registry:
    registry = Registry()

    @registry.skill
    def front_door() -> dict[str, str]:
        """Whether the front door is open or closed."""
        return {"door": "front", "state": "closed"}

    @registry.skill
    def climate() -> dict[str, Any]:
        """The temperature and humidity of the living room."""
        return {
            "temperature": {"value": 21.5, "unit": "°C"},
            "humidity": {"value": 41.5, "unit": "%RH"},
        }

    return registry


def call(skill: str) -> str:
    return json.dumps({"skill_name": skill, "arguments": {}})


class FirstChoice(MockModel):
    """A model that decodes under the schema it is given: where the answer is a list of
    sentences, it writes the first (a grammar's forced choice); else its scripted reply."""

    def generate(self, prompt: str, **kwargs: Any) -> str:
        schema = kwargs.get("action_schema") or {}
        for branch in schema.get("oneOf", []):
            answer = branch.get("properties", {}).get("final_answer", {})
            if "enum" in answer and len(schema["oneOf"]) == 1:
                self.prompts.append(prompt)
                self.calls.append(kwargs)
                return json.dumps({"final_answer": answer["enum"][0]}, ensure_ascii=False)
        return super().generate(prompt, **kwargs)


def answered(state: Any) -> FinalAnswerAction:
    action = state.stream[-1]
    assert isinstance(action, FinalAnswerAction)
    return action


def test_the_one_sentence_that_fits_is_said_with_no_second_model_turn() -> None:
    model = MockModel([call("climate")], uses_action_schema=True)
    agent = Agent(model, home(), guidance=Answering(), grounding=Grounding())
    state = agent.run("What is the humidity?")
    action = answered(state)
    assert state.outcome == "answered"
    assert "41.5" in action.answer and "humidity" in action.answer.lower()
    assert "21.5" not in action.answer  # the temperature is another thing than was asked
    assert action.made_by == "engine"
    assert len(model.prompts) == 1  # the call; the answer took no model turn


def test_several_sentences_are_the_grammar_of_one_decoded_choice() -> None:
    model = FirstChoice([call("climate")], uses_action_schema=True)
    agent = Agent(model, home(), guidance=Answering(), grounding=Grounding())
    state = agent.run("What does the living room read?")
    offered = model.calls[-1]["action_schema"]["oneOf"]
    assert len(offered) == 1  # the answer alone: no more calls
    sentences = offered[0]["properties"]["final_answer"]["enum"]
    assert len(sentences) >= 2
    action = answered(state)
    assert action.answer == sentences[0] and action.made_by == "engine"
    assert all("_" not in sentence for sentence in sentences)


def test_with_no_sentence_about_the_question_the_model_goes_on() -> None:
    replies = [call("climate"), call("front_door"), '{"final_answer": "No, it is closed."}']
    model = MockModel(replies, uses_action_schema=True)
    agent = Agent(model, home(), guidance=Answering(), grounding=Grounding())
    state = agent.run("Is the front door open?")
    # After the climate's result nothing fits, so the model called again; after the door's,
    # one sentence fits and the engine says it.
    assert len(model.prompts) == 2
    action = answered(state)
    assert action.made_by == "engine"
    assert action.answer.startswith("No") and "closed" in action.answer


def test_a_driving_model_may_keep_its_own_words() -> None:
    replies = [call("climate"), '{"final_answer": "The humidity is 41.5 %RH."}']
    model = MockModel(replies, uses_action_schema=True)
    agent = Agent(model, home(), guidance=Answering(own_words=True), grounding=Grounding())
    state = agent.run("What is the humidity?")
    action = answered(state)
    assert action.made_by == "model" and len(model.prompts) == 2


def test_its_prompt_is_the_plain_one() -> None:
    plain = Agent(MockModel([]), home(), grounding=Grounding()).system_prompt()
    driving = Agent(MockModel([]), home(), guidance=Answering(), grounding=Grounding())
    assert driving.system_prompt() == plain


def test_an_adjective_asks_for_its_quantity_and_nothing_else_answers_it() -> None:
    # "How warm is it?" asks the temperature (the language's quality nouns); "How loud is it in
    # the room?" names a quantity no result has: nothing fits, and the model goes on.
    model = MockModel([call("climate")], uses_action_schema=True)
    agent = Agent(model, home(), guidance=Answering(), grounding=Grounding())
    action = answered(agent.run("How warm is it?"))
    assert action.made_by == "engine" and "21.5" in action.answer and "41.5" not in action.answer
    model = MockModel([call("climate"), '{"final_answer": "The humidity is 41.5 %RH."}',
                       '{"final_answer": "I cannot tell."}'], uses_action_schema=True)  # fmt: skip
    agent = Agent(model, home(), guidance=Answering(), grounding=Grounding())
    state = agent.run("How loud is it in the room?")
    refused = [e for e in state.stream if e.type == "ValidationErrorObservation"]
    assert [e.error_type for e in refused] == ["unknown_subject"]
    assert state.final_answer == "I cannot tell."


def test_a_skill_may_say_how_its_result_is_said() -> None:
    registry = Registry()

    @registry.skill(says="The {label} reads {value} right now.")
    def rain_gauge() -> dict[str, Any]:
        """Rain fallen today in the garden."""
        return {"rain": {"value": 3.5, "unit": "mm"}}

    model = MockModel([call("rain_gauge")], uses_action_schema=True)
    agent = Agent(model, registry, guidance=Answering(), grounding=Grounding())
    action = answered(agent.run("How much rain fell?"))
    assert action.answer == "The rain reads 3.5 mm right now."
    assert action.made_by == "engine"


def test_a_question_about_many_things_is_not_answered_by_one_sentence() -> None:
    replies = [call("climate"), call("front_door"),
               '{"final_answer": "It is 21.5 °C and the front door is closed."}']  # fmt: skip
    model = MockModel(replies, uses_action_schema=True)
    agent = Agent(model, home(), guidance=Answering(), grounding=Grounding())
    action = answered(agent.run("How warm is it everywhere?"))
    assert action.made_by == "model" and len(model.prompts) == 3
