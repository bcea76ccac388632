"""Every tool's input schema converts with ``voluptuous-openapi``'s ``convert_to_voluptuous``, as
Home Assistant converts each (one it cannot convert drops the whole list): every built-in skill,
hostile plugin signatures, and any schema hypothesis makes."""

from __future__ import annotations

import datetime
import enum
from decimal import Decimal
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from voluptuous_openapi import convert_to_voluptuous

from edge_agentd.agent.registry import Registry
from edge_agentd.service.mcp.tools import ha_schema, model_tools, skill_tools
from edge_agentd.skills import register_builtins


def entries(registry: Registry) -> list[dict[str, Any]]:
    return [
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters_schema}
        for spec in registry
    ]


def test_every_built_in_skill_and_the_model_tools_convert() -> None:
    registry = Registry()
    register_builtins(registry, weather=True)
    tools = skill_tools(entries(registry), None) + model_tools(8.0)
    assert {tool["name"] for tool in tools} == set(registry.names()) | {"ask", "result"}
    for tool in tools:
        convert_to_voluptuous(tool["inputSchema"])
    read_sensor = next(tool for tool in tools if tool["name"] == "read_sensor")
    # Made safe, not emptied: the arguments and which are required stay.
    assert read_sensor["inputSchema"]["required"] == ["name"]
    assert set(read_sensor["inputSchema"]["properties"]) == {"name", "quantity"}


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Place(BaseModel):
    room: str
    floor: int = 0


class Tree(BaseModel):
    name: str
    children: list[Tree] = Field(default_factory=list)


def hostile_skills() -> Registry:
    """Plugin signatures whose pydantic schemas use what the converter refuses or never saw:
    untyped values, tuples (prefixItems), sets (uniqueItems), multipleOf, nested and recursive
    models ($ref, $defs), enums, literals, unions, dates, decimals, bytes."""
    registry = Registry()

    def anything(value: Any, maybe: Any = None) -> str:
        """Anything at all."""
        return "ok"

    def shapes(
        pair: tuple[int, str], tags: set[str], step: Annotated[int, Field(multiple_of=5)]
    ) -> str:
        """Tuples, sets and multiples."""
        return "ok"

    def nested(place: Place, tree: Tree | None = None, places: list[Place] | None = None) -> str:
        """Nested and recursive models."""
        return "ok"

    def choices(
        colour: Colour, mode: Literal["on", "off", 3], either: int | str | None = None
    ) -> str:
        """Enums, literals and unions."""
        return "ok"

    def odd(
        when: datetime.datetime, amount: Decimal, blob: bytes, table: dict[str, list[int]]
    ) -> str:
        """Dates, decimals, bytes and maps of lists."""
        return "ok"

    def bare(values: list, mapping: dict) -> str:  # type: ignore[type-arg]
        """Containers with no element type."""
        return "ok"

    for function in (anything, shapes, nested, choices, odd, bare):
        registry.add(function)
    return registry


def test_hostile_plugin_signatures_convert() -> None:
    tools = skill_tools(entries(hostile_skills()), None)
    assert len(tools) == 6
    for tool in tools:
        convert_to_voluptuous(tool["inputSchema"])
        assert tool["inputSchema"]["type"] == "object"
    nested = next(tool for tool in tools if tool["name"] == "nested")["inputSchema"]
    assert nested["properties"]["place"]["properties"]["room"] == {
        "title": "Room",
        "type": "string",
    }


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "object", "properties": {"x": {}}},
        {"type": "array"},
        {"type": "object", "properties": {"x": {"type": "array", "items": [{"type": "string"}]}}},
        {"type": "object", "properties": {"x": {"allOf": [{"$ref": "#/$defs/A"}]}},
         "$defs": {"A": {"type": "integer", "multipleOf": 2}}},
        {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}},
        {"type": "object", "properties": {"x": {"type": "string", "pattern": "(["}}},
        {"type": "object", "properties": {"x": {"enum": "red"}}},
        {"type": "object", "properties": {"x": {"type": ["string", "null", "rubbish"]}}},
        {"type": "object", "properties": {"x": {"const": 3}}},
        {"type": "object", "required": "x", "properties": []},
        "not a schema",
    ],
)  # fmt: skip
def test_broken_schemas_are_made_safe(schema: Any) -> None:
    safe = ha_schema(schema)
    assert safe["type"] == "object"
    convert_to_voluptuous(safe)


KEYS = ["type", "properties", "items", "anyOf", "oneOf", "allOf", "enum", "const", "$ref",
        "required", "additionalProperties", "multipleOf", "uniqueItems", "minimum", "maximum",
        "minLength", "maxLength", "pattern", "format", "nullable", "description", "$defs"]  # fmt: skip
TYPES = ["string", "number", "integer", "boolean", "object", "array", "null", "rubbish"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=6),
    st.sampled_from(TYPES), st.sampled_from(["#/$defs/a", "#/properties", "#", "x"]),
)  # fmt: skip
schemas = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=5),
        st.dictionaries(st.text(max_size=4), children, max_size=3),
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(schemas)
def test_any_schema_a_plugin_could_give_is_made_safe(schema: Any) -> None:
    safe = ha_schema(schema)
    assert safe["type"] == "object"
    convert_to_voluptuous(safe)
