"""Registering skills: names, descriptions and schemas from plain functions; clashes refused."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest

from edge_agentd import Registry, get_registry, skill
from edge_agentd.agent.registry import SkillNameClash, SkillOptions


def test_name_description_and_schema_come_from_the_function() -> None:
    registry = Registry()

    @registry.skill
    def read_sensor(name: str, unit: Literal["C", "F"] = "C") -> dict[str, Any]:
        """Read one sensor.

        Returns its value with units.
        """
        return {}

    spec = registry.get("read_sensor")
    assert spec is not None
    assert spec.description == "Read one sensor. Returns its value with units."
    assert spec.parameters_schema == {
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "unit": {"default": "C", "enum": ["C", "F"], "type": "string"},
        },
        "required": ["name"],
        "type": "object",
    }
    assert spec.timeout_s == 2.0
    assert spec.source == __name__
    assert read_sensor("x") == {}  # the decorator returns the plain function


def test_options_override_the_defaults() -> None:
    registry = Registry()

    @registry.skill(name="clock", description="What time it is.", timeout=5, source="builtin")
    def now() -> str:
        return "noon"

    spec = registry.get("clock")
    assert spec is not None
    assert (spec.description, spec.timeout_s, spec.source) == ("What time it is.", 5.0, "builtin")
    assert registry.get("now") is None


def test_a_clashing_name_is_refused_and_the_first_skill_kept() -> None:
    registry = Registry()
    registry.add(lambda: 1, SkillOptions(name="uptime", source="builtin"))
    version = registry.version
    with pytest.raises(SkillNameClash, match="clashes with the one from builtin"):
        registry.add(lambda: 2, SkillOptions(name="uptime", source="plugin.py"))
    assert registry.version == version
    spec = registry.get("uptime")
    assert spec is not None and spec.function() == 1


def _untyped(x):  # type: ignore[no-untyped-def]
    return x


def _star(*values: int) -> int:
    return 0


@pytest.mark.parametrize(
    ("function", "name"),
    [(_untyped, None), (_star, None), (lambda: 1, "not an identifier"), (42, "x")],
)
def test_bad_skills_are_refused_at_registration(function: Any, name: str | None) -> None:
    with pytest.raises(TypeError):
        Registry().add(function, SkillOptions(name=name))


@pytest.mark.parametrize("timeout", [0, -1, "2", True])
def test_bad_timeouts_are_refused(timeout: Any) -> None:
    with pytest.raises(TypeError):
        Registry().add(lambda: 1, SkillOptions(name="x", timeout=timeout))


@pytest.mark.parametrize("flag", ["false", 1, None])
def test_a_reads_sentences_flag_that_is_no_bool_is_refused(flag: Any) -> None:
    with pytest.raises(TypeError, match="reads_sentences"):
        Registry().add(_read, SkillOptions(name="x", reads_sentences=flag))


def _read(text: str) -> str:
    return text


def test_the_action_schema_is_cached_per_version_and_subset() -> None:
    registry = Registry()
    registry.add(lambda: 1, SkillOptions(name="a"))
    registry.add(lambda: 2, SkillOptions(name="b"))
    full = registry.action_schema()
    assert registry.action_schema() is full
    subset = registry.action_schema(frozenset({"b"}))
    assert [br["properties"].get("skill_name") for br in subset["oneOf"]] == [{"const": "b"}, None]
    registry.remove("a")
    assert len(registry.action_schema()["oneOf"]) == 2


def _with_each_option(decorate: Any, function_name: str) -> Any:
    """Decorate a fresh function with every one of SkillOptions' fields at its default value."""
    defaults = {
        field.name: field.default
        for field in dataclasses.fields(SkillOptions)
        if field.name != "name"
    }

    def function() -> int:
        return 1

    function.__name__ = function_name
    return decorate(name=function_name, **defaults)(function)


def test_the_module_skill_and_registry_skill_take_the_same_options() -> None:
    registry = Registry()
    _with_each_option(registry.skill, "by_registry")
    spec = registry.get("by_registry")
    assert spec is not None and spec.options == SkillOptions(name="by_registry")
    try:
        _with_each_option(skill, "edge_agent_test_every_option")
        assert get_registry().get("edge_agent_test_every_option") is not None
    finally:
        get_registry().remove("edge_agent_test_every_option")
    for decorate in (registry.skill, skill):
        with pytest.raises(TypeError, match="unexpected keyword"):
            decorate(timout=3)


def test_the_module_skill_takes_examples_and_calls() -> None:
    def listed() -> list[tuple[dict[str, Any], str]]:
        return [({"name": "cpu"}, "the CPU's temperature")]

    @skill(examples=["How warm is the  CPU?"], calls=listed, source="test")
    def edge_agent_test_probe(name: str) -> str:
        return name

    try:
        spec = get_registry().get("edge_agent_test_probe")
        assert spec is not None
        assert spec.examples == ("How warm is the CPU?",)
        assert spec.ready_calls() == [({"name": "cpu"}, "the CPU's temperature")]
        assert edge_agent_test_probe("x") == "x"
    finally:
        get_registry().remove("edge_agent_test_probe")
