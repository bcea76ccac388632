"""What the docs say the built-in skills return is what they return: docs/skills.md's table (each
signature and each result's shape) and every skill result shown in README.md and docs/, produced
here by the real skills over a fake sysfs (edge_agentd.skills.demo's SysfsTree)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from edge_agentd.agent.registry import Registry
from edge_agentd.skills import register_builtins
from edge_agentd.skills.demo import SysfsTree, w1_slave_text

REPO = Path(__file__).resolve().parents[2]
SKILLS_DOC = REPO / "docs" / "skills.md"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# The calls each documented skill is checked with: every kind of sensor, a quantity, no sensors.
CALLS: dict[str, list[dict[str, Any]]] = {
    "cpu_temperature": [{}],
    "list_sensors": [{}, {"quantity": "humidity"}],
    "read_sensor": [
        {"name": "thermal_zone0"},
        {"name": "bme280"},
        {"name": "bme280", "quantity": "pressure"},
        {"name": "28-000005e2fdc3"},
    ],
    "compare_sensors": [
        {"first": "thermal_zone0", "second": "bme280"},
        {"first": "28-000005e2fdc3", "second": "bme280", "quantity": "temperature"},
    ],
    "system_status": [{}],
    "now": [{}],
    "resolve_date": [{"text": "tomorrow"}, {"text": "8/15"}],
}
NOT_CALLED = {"weather": "it asks open-meteo.com; tests/skills/test_skills_weather.py has its shape"}


@pytest.fixture
def skills(tmp_path: Path) -> Registry:
    """The built-ins over a fake Raspberry Pi: the CPU zone at 48.312 °C, a BME280, a DS18B20."""
    sysfs = SysfsTree(tmp_path / "sys")
    sysfs.thermal_zone(0)
    sysfs.iio_device(
        0,
        "bme280",
        {
            "in_temp_input": "21500",
            "in_humidityrelative_input": "45000",
            "in_pressure_input": "101.3",
        },
    )
    sysfs.w1_probe("28-000005e2fdc3", w1_slave_text(19250))
    registry = Registry()
    register_builtins(registry, sysfs_root=sysfs.root, weather=True)
    return registry


def rows() -> dict[str, tuple[str, str]]:
    """docs/skills.md's built-in table: skill name -> (its signature, what it returns)."""
    text = SKILLS_DOC.read_text(encoding="utf-8")
    table = text.split("## The built-in skills", 1)[1].split("\n## ", 1)[0]
    found = {}
    for line in table.splitlines():
        row = re.match(r"\| `((\w+)\(.*?\))` \| (.*) \|$", line)
        if row:
            found[row.group(2)] = (row.group(1), row.group(3))
    return found


def skeleton(shape: str) -> Any:
    """`{"sensor", "readings": [{"value"}], "unit": "°C"}` as JSON: a bare key maps to None."""
    return json.loads(re.sub(r'([{,]\s*)("[^"]*")(?=\s*[,}])', r"\1\2: null", shape))


def fits(shown: Any, real: Any, allowed: set[str], where: str) -> None:
    """``real`` has the keys ``shown`` has (and only those, but for ``allowed``), at every
    level, and the values the doc spells out (not a placeholder such as `YYYY-MM-DD`)."""
    if isinstance(shown, dict):
        assert isinstance(real, dict), (where, real)
        assert set(shown) <= set(real), (where, set(shown) - set(real))
        assert set(real) - set(shown) <= allowed, (where, set(real) - set(shown))
        for key, value in shown.items():
            fits(value, real[key], allowed, f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(real, list) and real, (where, real)
        for item in real:
            fits(shown[0], item, allowed, f"{where}[]")
    elif shown is not None and not re.fullmatch(r"[A-Z-]+", str(shown)):
        assert real == shown, where


def test_the_table_lists_every_built_in_with_its_parameters(skills: Registry) -> None:
    documented = rows()
    assert set(documented) == set(skills.names())
    for name, (signature, _) in documented.items():
        spec = skills.get(name)
        assert spec is not None
        schema = spec.parameters_schema
        real = [
            p if p in schema.get("required", ()) else f"{p}={json.dumps(d.get('default'))}"
            for p, d in schema.get("properties", {}).items()
        ]
        shown = [p.strip() for p in signature[len(name) + 1 : -1].split(",") if p.strip()]
        shown = [p.replace("=None", "=null") for p in shown]
        assert shown == real, f"docs/skills.md says {signature}; the skill takes {real}"


def test_each_result_has_the_shape_the_table_shows(skills: Registry, tmp_path: Path) -> None:
    documented = rows()
    assert set(documented) - set(CALLS) == set(NOT_CALLED)
    for name, calls in CALLS.items():
        _, returns = documented[name]
        spec = skills.get(name)
        assert spec is not None
        named = set(re.findall(r"`(\w+)`", returns))
        shape = re.search(r"`(\{.*?\})`", returns)
        for arguments in calls:
            real = skills.call(spec, arguments)
            where = f"{name}({arguments})"
            if shape is not None:
                fits(skeleton(shape.group(1)), real, named, where)
            else:  # described in words: each key it names is in the result
                keys = _keys(real)
                assert {n for n in named if n != name} <= keys, (where, named - keys)
    # With no sensors at all, list_sensors' `note` (which the row names) says where it looked.
    empty = Registry()
    register_builtins(empty, sysfs_root=tmp_path / "nothing")
    listed = empty.call(empty.get("list_sensors"), {})  # type: ignore[arg-type]
    assert listed["sensors"] == [] and "looked in" in listed["note"]


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _results_shown() -> list[tuple[str, dict[str, Any]]]:
    """Every SkillResultObservation of a built-in written out in README.md or docs/."""
    found = []
    for doc in DOCS:
        for line in doc.read_text(encoding="utf-8").splitlines():
            if '"SkillResultObservation"' not in line or not line.lstrip().startswith("{"):
                continue
            message = json.loads(line)
            event = message.get("event", message)
            found.append((f"{doc.name}: {event['skill_name']}", event))
    return found


def test_every_result_the_docs_show_is_what_the_skill_returns(skills: Registry) -> None:
    shown = _results_shown()
    # protocol.md's example run shows results; the README's examples show answers only.
    assert "protocol.md" in {where.split(":")[0] for where, _ in shown}
    for where, event in shown:
        spec = skills.get(event["skill_name"])
        assert spec is not None, where
        assert skills.call(spec, {}) == event["result"], where
