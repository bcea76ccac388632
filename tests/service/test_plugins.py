"""Plugin loading: skills directories and installed entry points, good and broken."""

from __future__ import annotations

import logging
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from edge_agentd import Agent, MockModel, SkillResultObservation
from edge_agentd.agent.registry import Registry
from edge_agentd.service.assembly.plugins import ENTRY_POINT_GROUP, PluginProblem, load_plugins

GOOD = """
from edge_agentd.agent.registry import Registry


def register(registry: Registry) -> None:
    @registry.skill
    def soil_moisture(bed: str = "tomatoes") -> dict:
        \"\"\"Soil moisture of a garden bed, in percent.\"\"\"
        return {"bed": bed, "value": 41.5, "unit": "%"}

    @registry.skill(timeout=5.0, source="garden-kit", reads_sentences=True)
    def water_level(text: str = "now") -> dict:
        \"\"\"Water left in the rain barrel, in litres.\"\"\"
        return {"value": 120, "unit": "L"}
"""

CLASHING = """
def register(registry):
    @registry.skill
    def pump_status() -> str:
        \"\"\"Whether the pump runs.\"\"\"
        return "off"

    @registry.skill
    def now() -> str:
        \"\"\"A second clock, which the built-in one already is.\"\"\"
        return "noon"
"""

BROKEN = {
    "syntax.py": "def register(registry)\n    pass\n",
    "missing_import.py": "import no_such_module_for_edge_agentd\n\ndef register(registry): pass\n",
    "no_register.py": "VALUE = 1\n",
    "raises.py": "def register(registry):\n    raise RuntimeError('sensor bus not found')\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "not_callable.py": "register = 42\n",
}


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def registry(make_registry: Callable[..., Registry]) -> Registry:
    return make_registry(builtins=True)


def test_a_good_plugin_file_adds_its_skills_with_its_path(
    registry: Registry, tmp_path: Path
) -> None:
    path = write(tmp_path / "skills.d", "garden.py", GOOD)
    assert load_plugins(registry, [tmp_path / "skills.d"], entry_points=False) == []
    soil, water = registry.get("soil_moisture"), registry.get("water_level")
    assert soil is not None and water is not None
    assert soil.source == str(path)
    assert water.source == "garden-kit"  # a source the plugin named itself is kept
    assert (soil.timeout_s, water.timeout_s) == (2.0, 5.0)
    assert (soil.reads_sentences, water.reads_sentences) == (False, True)
    assert soil.description == "Soil moisture of a garden bed, in percent."
    assert registry.names()[-2:] == ["soil_moisture", "water_level"]
    assert registry.call(soil, {"bed": "herbs"}) == {"bed": "herbs", "value": 41.5, "unit": "%"}


def test_broken_plugins_are_reported_and_skipped(
    registry: Registry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "skills.d"
    for name, text in BROKEN.items():
        write(directory, name, text)
    write(directory, "garden.py", GOOD)
    write(directory, "_helpers.py", "raise RuntimeError('never imported')\n")
    write(directory, "notes.txt", "not python")
    before = registry.names()
    with caplog.at_level(logging.WARNING, logger="edge_agentd.service.assembly.plugins"):
        problems = load_plugins(registry, [directory], entry_points=False)
    by_file = {Path(p.source).name: p.error for p in problems}
    assert sorted(by_file) == sorted(BROKEN)
    assert by_file["syntax.py"].startswith("SyntaxError:")
    assert by_file["missing_import.py"] == (
        "ModuleNotFoundError: No module named 'no_such_module_for_edge_agentd'"
    )
    assert by_file["no_register.py"] == "TypeError: it defines no register(registry) function"
    assert by_file["raises.py"] == "RuntimeError: sensor bus not found"
    assert by_file["exits.py"] == "SystemExit: 3"
    assert by_file["not_callable.py"] == "TypeError: it defines no register(registry) function"
    assert registry.names() == [*before, "soil_moisture", "water_level"]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"skipped plugin {directory / 'raises.py'}: RuntimeError: sensor bus not found" in logged
    assert not any(name.startswith("edge_agent_plugin_syntax") for name in sys.modules)


def test_a_clashing_plugin_is_rolled_back_whole(registry: Registry, tmp_path: Path) -> None:
    path = write(tmp_path, "pump.py", CLASHING)
    before = registry.names()
    builtin_now = registry.get("now")
    (problem,) = load_plugins(registry, [tmp_path], entry_points=False)
    assert problem == PluginProblem(
        str(path), f"SkillNameClash: skill 'now' from {path} clashes with the one from builtin"
    )
    assert registry.names() == before  # pump_status, registered first, was removed again
    assert registry.get("now") is builtin_now


def test_two_plugins_with_one_name_keep_the_first(registry: Registry, tmp_path: Path) -> None:
    write(tmp_path, "a_garden.py", GOOD)
    write(tmp_path, "b_garden.py", GOOD)
    (problem,) = load_plugins(registry, [tmp_path], entry_points=False)
    assert Path(problem.source).name == "b_garden.py"
    assert problem.error == (
        f"SkillNameClash: skill 'soil_moisture' from {tmp_path / 'b_garden.py'} clashes with the "
        f"one from {tmp_path / 'a_garden.py'}"
    )
    soil = registry.get("soil_moisture")
    assert soil is not None and soil.source == str(tmp_path / "a_garden.py")


def test_missing_directory_and_same_file_twice(registry: Registry, tmp_path: Path) -> None:
    write(tmp_path / "d", "garden.py", GOOD)
    (tmp_path / "link").symlink_to(tmp_path / "d")
    problems = load_plugins(
        registry, [tmp_path / "d", tmp_path / "link", tmp_path / "absent"], entry_points=False
    )
    assert problems == [
        PluginProblem(
            str(tmp_path / "absent"),
            "cannot list the skills directory: No such file or directory",
        )
    ]


def test_caller_bugs_raise(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="needs a Registry"):
        load_plugins(object(), [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of directories"):
        load_plugins(Registry(), str(tmp_path))  # type: ignore[arg-type]


# -- entry points ----------------------------------------------------------------------------


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site directory holding three plugin distributions, the way pip would install them."""
    site = tmp_path / "site"
    write(site, "garden_kit.py", GOOD)
    write(
        site,
        "weather_station.py",
        """
        def register(registry):
            @registry.skill
            def rain_gauge() -> dict:
                \"\"\"Rain in the last hour, in millimetres.\"\"\"
                return {"value": 0.4, "unit": "mm"}
        """,
    )
    entry_points = {
        "garden_kit-1.0": "garden = garden_kit:register\n",
        "weather_station-2.1": "station = weather_station\n",  # a module with register()
        "broken_kit-0.1": "broken = no_such_module_for_edge_agentd:register\n",
    }
    for dist, line in entry_points.items():
        info = site / f"{dist}.dist-info"
        info.mkdir()
        name, version = dist.split("-")
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{line}")
    monkeypatch.syspath_prepend(str(site))
    yield site
    for module in ("garden_kit", "weather_station"):
        sys.modules.pop(module, None)


def test_entry_points_are_loaded_and_named(registry: Registry, installed: Path) -> None:
    problems = load_plugins(registry, [], entry_points=True)
    assert problems == [
        PluginProblem(
            "entry-point:broken",
            "ModuleNotFoundError: No module named 'no_such_module_for_edge_agentd'",
        )
    ]
    sources = {spec.name: spec.source for spec in registry}
    assert sources["soil_moisture"] == "entry-point:garden"
    assert sources["water_level"] == "garden-kit"
    assert sources["rain_gauge"] == "entry-point:station"


def test_entry_points_can_be_turned_off(registry: Registry, installed: Path) -> None:
    before = registry.names()
    assert load_plugins(registry, [], entry_points=False) == []
    assert registry.names() == before


def test_a_plugin_skill_runs_through_the_agent(registry: Registry, tmp_path: Path) -> None:
    write(tmp_path, "garden.py", GOOD)
    assert load_plugins(registry, [tmp_path], entry_points=False) == []
    model = MockModel(
        [
            '{"skill_name": "soil_moisture", "arguments": {"bed": "herbs"}}',
            '{"final_answer": "The herb bed is at 41.5 % moisture."}',
        ]
    )
    state = Agent(model, registry).run("How wet is the herb bed?")
    assert state.final_answer == "The herb bed is at 41.5 % moisture."
    observation = state.stream.root[1]
    assert isinstance(observation, SkillResultObservation)
    assert observation.result == {"bed": "herbs", "value": 41.5, "unit": "%"}
    assert "soil_moisture" in model.prompts[0]


def test_the_ten_line_example_in_the_docs_loads(registry: Registry, tmp_path: Path) -> None:
    docs = (Path(__file__).parents[2] / "docs" / "skills.md").read_text()
    section = docs.split("## Writing a skill in ten lines", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len([line for line in example.splitlines() if line.strip()]) <= 10
    write(tmp_path, "garden.py", example)
    assert load_plugins(registry, [tmp_path], entry_points=False) == []
    spec = registry.get("rain_barrel_level")
    assert spec is not None
    assert (spec.description, spec.timeout_s) == ("Water left in the rain barrel, in litres.", 1.0)
    assert spec.source == str(tmp_path / "garden.py")
