"""Registering skills: names, descriptions and schemas from plain functions; clashes refused."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from edge_agentd import Registry
from edge_agentd.agent.registry import SkillNameClash


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
    registry.add(lambda: 1, name="uptime", source="builtin")
    version = registry.version
    with pytest.raises(SkillNameClash, match="clashes with the one from builtin"):
        registry.add(lambda: 2, name="uptime", source="plugin.py")
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
        Registry().add(function, name=name)


@pytest.mark.parametrize("timeout", [0, -1, "2", True])
def test_bad_timeouts_are_refused(timeout: Any) -> None:
    with pytest.raises(TypeError):
        Registry().add(lambda: 1, name="x", timeout=timeout)


@pytest.mark.parametrize("flag", ["false", 1, None])
def test_a_reads_sentences_flag_that_is_no_bool_is_refused(flag: Any) -> None:
    with pytest.raises(TypeError, match="reads_sentences"):
        Registry().add(_read, name="x", reads_sentences=flag)


def _read(text: str) -> str:
    return text


def test_the_action_schema_is_cached_per_version_and_subset() -> None:
    registry = Registry()
    registry.add(lambda: 1, name="a")
    registry.add(lambda: 2, name="b")
    full = registry.action_schema()
    assert registry.action_schema() is full
    subset = registry.action_schema(frozenset({"b"}))
    assert [br["properties"].get("skill_name") for br in subset["oneOf"]] == [{"const": "b"}, None]
    registry.remove("a")
    assert len(registry.action_schema()["oneOf"]) == 2
