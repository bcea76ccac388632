"""An answer no result's sentence fits waits while a skill the run has not called names what
was asked (in its own words, or in the values its arguments may take now): the model is asked
for a call of that skill alone, not of one it already made, until the run's last step."""

from __future__ import annotations

import json
from typing import Any

from edge_agentd import Agent, Grounding, MockModel, Registry
from edge_agentd.guidance.answering import Answering


def house() -> Registry:
    registry = Registry()

    @registry.skill
    def system_status() -> dict[str, Any]:
        """Load averages and uptime of this device."""
        return {"load": {"1m": 0.4}, "uptime_s": 3600}

    @registry.skill
    def power_meter() -> dict[str, Any]:
        """The house's energy use today and its power now."""
        return {"energy_today": {"value": 7.3, "unit": "kWh"}, "power": {"value": 420, "unit": "W"}}

    @registry.skill(choices=lambda: {"room": ["kitchen", "bathroom"]})
    def humidity(room: str) -> dict[str, Any]:
        """The relative humidity of a room."""
        return {"room": room, "humidity": {"value": 55, "unit": "%RH"}}

    return registry


def call(skill: str, **arguments: Any) -> str:
    return json.dumps({"skill_name": skill, "arguments": arguments})


def offered_calls(model: MockModel, step: int) -> set[str]:
    schema = model.calls[step]["action_schema"]
    return {b["properties"]["skill_name"]["const"] for b in schema["oneOf"]}


def test_the_answer_waits_for_the_call_that_names_the_subject() -> None:
    model = MockModel(
        [call("system_status"), call("power_meter"), '{"final_answer": "unused"}'],
        uses_action_schema=True,
    )
    agent = Agent(model, house(), guidance=Answering(), grounding=Grounding())
    state = agent.run("Energy used today?", max_iterations=4)
    # After the status, which says nothing of energy, only the power meter may be called.
    assert offered_calls(model, 1) == {"power_meter"}
    assert state.final_answer is not None and "7.3 kWh" in state.final_answer


def test_an_argument_s_values_name_the_subject_too() -> None:
    model = MockModel(
        [call("system_status"), call("humidity", room="kitchen")], uses_action_schema=True
    )
    agent = Agent(model, house(), guidance=Answering(), grounding=Grounding())
    agent.run("How humid is the kitchen?", max_iterations=4)
    assert offered_calls(model, 1) == {"humidity"}


def test_the_last_step_is_free() -> None:
    model = MockModel([call("system_status"), '{"final_answer": "I cannot tell."}'],
                      uses_action_schema=True)  # fmt: skip
    agent = Agent(model, house(), guidance=Answering(), grounding=Grounding())
    state = agent.run("Energy used today?", max_iterations=2)
    schema = model.calls[1]["action_schema"]
    assert any("final_answer" in b.get("properties", {}) for b in schema["oneOf"])
    assert state.outcome == "answered"


def probes() -> Registry:
    registry = Registry()
    readings = {"cpu": 48.3, "w1-01": 12.4}

    @registry.skill(
        choices=lambda: {"name": list(readings)},
        calls=lambda: [({"name": "cpu"}, "the CPU's temperature"),
                       ({"name": "w1-01"}, "the 1-Wire probe's temperature")],
    )  # fmt: skip
    def read_probe(name: str) -> dict[str, Any]:
        """A temperature sensor's reading, by its name."""
        return {"sensor": name, "value": readings[name], "unit": "°C"}

    return registry


def test_a_ready_call_not_made_of_a_skill_already_called_could_answer() -> None:
    # The wrong probe first: the skill's other ready call is of the thing asked, so the
    # answer waits for a call of it rather than "I cannot tell" with steps left.
    model = MockModel(
        [call("read_probe", name="cpu"), call("read_probe", name="w1-01")],
        uses_action_schema=True,
    )
    agent = Agent(model, probes(), guidance=Answering(), grounding=Grounding())
    state = agent.run("What temperature is the 1-Wire probe reporting?", max_iterations=4)
    assert offered_calls(model, 1) == {"read_probe"}
    assert not any("final_answer" in b.get("properties", {})
                   for b in model.calls[1]["action_schema"]["oneOf"])  # fmt: skip
    assert state.final_answer is not None and "12.4" in state.final_answer


def test_no_call_is_waited_for_once_every_ready_call_was_made() -> None:
    model = MockModel(
        [call("read_probe", name="cpu"), '{"final_answer": "I cannot tell."}'],
        uses_action_schema=True,
    )
    agent = Agent(model, probes(), guidance=Answering(), grounding=Grounding())
    # A garage probe no ready call is of: nothing to wait for.
    state = agent.run("What temperature is the garage probe reporting?", max_iterations=4)
    schema = model.calls[1]["action_schema"]
    assert any("final_answer" in b.get("properties", {}) for b in schema["oneOf"])
    assert state.final_answer == "I cannot tell."
