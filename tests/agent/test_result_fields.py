"""A model that drives the loop in a tool format of its own reads each result as fields
(docs/design.md, "Results as lines"): each key of the result once, what it holds written on its
line without JSON's quotes, a reading as its value and unit. A guided model still reads
``name: value unit`` lines, the seed's action language still JSON, and Gemma 4's format its own
body."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_gguf import QWEN25_TEMPLATE

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.actions import HERMES
from edge_agentd.agent.events import SkillResultObservation
from edge_agentd.agent.gemmacalls import GEMMA4_CALLS
from edge_agentd.agent.prompt import ChatFormat, render_event
from edge_agentd.agent.resultlines import reading_text, result_fields
from edge_agentd.model.formats import format_from_template

READ_SENSOR = {
    "sensor": "bme280",
    "label": "bme280 (iio:device0)",
    "readings": [
        {"quantity": "humidity", "value": 41.5, "unit": "%RH"},
        {
            "quantity": "temperature",
            "value": 22.7,
            "unit": "°C",
            "also": {"value": 72.86, "unit": "°F", "unit_name": "Fahrenheit"},
        },
    ],
    "difference": {"value": 1.5, "unit": "°C"},
    "ok": True,
    "note": None,
}


def _qwen(calls: Any = HERMES) -> ChatFormat:
    fmt = format_from_template(QWEN25_TEMPLATE, name="qwen2")
    return ChatFormat(**{**{f: getattr(fmt, f) for f in fmt.__dataclass_fields__}, "calls": calls})


def test_a_result_is_its_fields() -> None:
    assert result_fields(READ_SENSOR) == (
        "sensor: bme280\n"
        "label: bme280 (iio:device0)\n"
        "readings: [{quantity:humidity,value:41.5 %RH},{quantity:temperature,"
        "value:22.7 °C,also:{value:72.86 °F,unit_name:Fahrenheit}}]\n"
        "difference: 1.5 °C\n"
        "ok: true\n"
        "note: null"
    )
    assert result_fields({"value": 48.3, "unit": "°C"}) == "48.3 °C"
    assert result_fields({"sensor": "cpu", "value": 48.3, "unit": "°C"}) == (
        "sensor: cpu\nvalue: 48.3 °C"
    )
    assert result_fields("12:00") == "12:00"
    assert result_fields([1, "a"]) == "[1,a]"
    assert result_fields({}) == "{}"
    # A text that would break a line, or show nothing, is written as JSON spells it.
    assert result_fields({"text": "a\nb", "": ""}) == 'text: "a\\nb"\n"": ""'
    assert result_fields({"value": 1, "unit": "°\nC"}) == 'value: 1\nunit: "°\\nC"'


def test_the_driving_models_own_format_reads_fields_and_every_other_keeps_its_form() -> None:
    event = SkillResultObservation(skill_name="read_sensor", result=READ_SENSOR, call_id="c1")
    fields = result_fields(READ_SENSOR)
    assert render_event(event, _qwen()) == (
        f"<|im_start|>user\n<tool_response>\n{fields}\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # A guided model reads lines in the same format; the seed's action language reads JSON.
    lines = render_event(event, _qwen(), lines=True)
    assert "<tool_response>\nsensor: bme280\nlabel: bme280 (iio:device0)\nreadings: 2 in all\n" in lines
    seed = render_event(event, _qwen(None))
    assert f"Result of read_sensor: {json.dumps(READ_SENSOR, ensure_ascii=False)}" in seed
    # Gemma 4's format writes its own body, as its template does.
    gemma = _qwen(GEMMA4_CALLS)
    assert GEMMA4_CALLS.response("read_sensor", READ_SENSOR, "") in render_event(event, gemma)
    assert fields not in render_event(event, gemma)


def test_a_driving_model_reads_fields_in_its_prompt() -> None:
    registry = Registry()

    @registry.skill
    def read_sensor() -> dict[str, Any]:
        """Current value of the sensor."""
        return READ_SENSOR

    class Qwen(MockModel):
        chat_format = _qwen()

    call = '<tool_call>\n{"name": "read_sensor", "arguments": {}}\n</tool_call>'
    model = Qwen([call, "The humidity is 41.5 %RH."])
    Agent(model, registry).run("What is the humidity?")
    assert f"<tool_response>\n{result_fields(READ_SENSOR)}\n</tool_response>" in model.prompts[1]


def _reading(node: dict[str, Any]) -> str | None:
    """A reading's text, where it is one line (else its value and unit are fields)."""
    text = reading_text(node)
    return text if text is not None and text.isprintable() else None


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
KEYS = st.sampled_from(["value", "unit"]) | st.text()  # readings too, and their look-alikes
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, JSON, min_size=1, max_size=6))
def test_each_key_is_one_line_and_every_text_is_shown(result: dict[str, Any]) -> None:
    shown = result_fields(result)
    reading = _reading(result) is not None
    if reading and result.keys() == {"value", "unit"}:
        assert shown == _reading(result)
    else:  # a reading's unit is written after its value, on the value's line
        assert len(shown.split("\n")) == len(result) - reading
    texts: list[str] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            unit = node["unit"] if _reading(node) is not None else None
            for key, value in node.items():
                if unit is not None and key == "unit":
                    texts.append(unit.strip())  # after the value, without its key
                else:
                    texts.append(key)
                    collect(value)
        elif isinstance(node, list):
            for item in node:
                collect(item)
        elif isinstance(node, str):
            texts.append(node)

    collect(result)
    for text in texts:
        assert (text if text and text.isprintable() else json.dumps(text, ensure_ascii=False)) in (
            shown
        )
