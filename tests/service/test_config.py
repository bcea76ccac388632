"""systemd/config.example.toml is the config's documentation: every key `Settings` accepts is in
it with its real default, the file parses to the defaults, and what is only an example stays
commented out. And `[skills.timeouts]` cannot silently lose skills: a name no skill has stops the
start with the file, the line and the closest name; a plugin's skills take their timeouts too."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from edge_agentd.agent.registry import Registry
from edge_agentd.service.assembly.assemble import load_skills
from edge_agentd.service.config.settings import ConfigError, Settings, parse_settings
from edge_agentd.skills import BUILTIN_NAMES

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "systemd" / "config.example.toml"

# `[x]`, `[[x]]`, `# [x]` or `# [[x]]`: a table's header, commented out or not.
_HEADER = re.compile(r"^(#\s*)?\[(\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?\s*(#.*)?$")


class Entry:
    """One `key = value` line of the example, commented out or not, in its table."""

    def __init__(self, table: tuple[str, ...], key: str, value: Any, commented: bool) -> None:
        self.table, self.key, self.value, self.commented = table, key, value, commented


def entries() -> tuple[list[Entry], dict[tuple[str, ...], bool]]:
    """Every key line and every table header (table -> commented out) of the example."""
    found: list[Entry] = []
    tables: dict[tuple[str, ...], bool] = {}
    table: tuple[str, ...] = ()
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        header = _HEADER.match(line)
        if header is not None:
            table = tuple(header.group(3).split("."))
            tables[table] = bool(header.group(1))
            continue
        commented = line.startswith("#")
        text = re.sub(r"^#\s?", "", line) if commented else line
        if not re.match(r"[A-Za-z0-9_]+ = ", text):
            continue  # prose
        try:
            ((key, value),) = tomllib.loads(text).items()
        except tomllib.TOMLDecodeError:
            continue  # prose that happens to hold an `=`
        found.append(Entry(table, key, value, commented))
    return found, tables


def _model(annotation: Any) -> Any:
    """The section model behind ``X | None``, ``dict[str, X]`` or ``list[X]``, else None."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        return _model(kinds[0]) if len(kinds) == 1 else None
    if origin is dict:
        return _model(get_args(annotation)[1])
    if origin is list:
        return _model(get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def documented_keys() -> list[tuple[tuple[str, ...], str, Any, bool]]:
    """Every key Settings accepts: (its table, its name, its default, whether its table is one of
    many, as a workflow is: `[workflows.NAME]`, `[[triggers]]`)."""
    keys = []
    for section, field in Settings.model_fields.items():
        model = _model(field.annotation)
        assert model is not None, f"[{section}] is not a table of keys"
        many = get_origin(field.annotation) in (dict, list)
        for field_name, inner in model.model_fields.items():
            name = inner.alias or field_name  # the key as the file writes it: `for`, `every`
            if _model(inner.annotation) is None and get_origin(inner.annotation) is not dict:
                keys.append(((section,), name, inner.get_default(call_default_factory=True), many))
            else:  # a table inside the section, as [skills.timeouts] is
                keys.append(((section, name), "", None, False))
    return keys


def test_the_example_parses_to_the_defaults() -> None:
    example = parse_settings(EXAMPLE.read_text(encoding="utf-8"), str(EXAMPLE))
    assert example.model_dump() == Settings().model_dump()


def test_every_key_is_in_the_example_with_its_default() -> None:
    found, tables = entries()
    for table, key, default, many in documented_keys():
        if not key:
            assert table in tables, f"[{'.'.join(table)}] is not in the example"
            continue
        where = f"[{'.'.join(table)}] {key}"
        lines = [
            e
            for e in found
            if e.key == key and (e.table[: len(table)] == table if many else e.table == table)
        ]
        assert lines, f"{where} is not in the example"
        if many:
            # One of many tables the user names (`[workflows.NAME]`): what it shows is an example.
            assert all(e.commented for e in lines), f"{where} is an example: comment it out"
        elif default is None:
            # Unset by default: only an example value, commented out, may be shown.
            assert all(e.commented for e in lines), f"{where} is set, but its default is unset"
        else:
            assert any(e.value == default for e in lines), f"{where}: its default is {default!r}"
            assert all(e.commented for e in lines if e.value != default), where


def test_example_only_sections_stay_commented_out() -> None:
    _, tables = entries()
    many = {
        section
        for section, field in Settings.model_fields.items()
        if get_origin(field.annotation) in (dict, list) or field.default is None
    }
    assert {"mqtt", "workflows"} <= many
    for table, commented in tables.items():
        if table[0] in many:
            assert commented, f"[{'.'.join(table)}] is an example: it must stay commented out"


def test_the_commented_workflow_works_once_uncommented() -> None:
    # What the example shows for a workflow is a working one: uncommented, it parses and names
    # skills that exist.
    text = EXAMPLE.read_text(encoding="utf-8")
    found = re.search(r"^# \[workflows\.", text, re.M)
    assert found is not None, "the example lost its workflow"
    start = found.start()
    uncommented = re.sub(r"^# (?=\[|[a-z_]+ = )", "", text[start:], flags=re.M)
    workflows = parse_settings(text[:start] + uncommented).make_workflows()
    assert len(workflows) == 1
    (workflow,) = workflows.values()
    assert workflow.skills and set(workflow.skills) <= set(BUILTIN_NAMES)


# -- [skills.timeouts] ----------------------------------------------------------------------------

PLUGIN = '''
def register(registry):
    @registry.skill(timeout=5.0)
    def water_level() -> dict:
        """Water left in the rain barrel, in litres."""
        return {"value": 120, "unit": "L"}
'''


def _settings(tmp_path: Path, text: str) -> Settings:
    return parse_settings(f"[skills]\nsysfs_root = {str(tmp_path)!r}\n{text}", "edge.toml")


def test_a_timeout_naming_no_skill_names_the_file_the_line_and_the_closest_name(
    tmp_path: Path,
) -> None:
    config = _settings(tmp_path, "entry_points = false\n\n[skills.timeouts]\nread_sensors = 4.0\n")
    with pytest.raises(ConfigError) as caught:
        load_skills(Registry(), config)
    assert str(caught.value) == (
        "edge.toml: line 6: skills.timeouts.read_sensors: no skill named `read_sensors` "
        "(did you mean `read_sensor`?)"
    )


def test_a_timeout_for_a_built_in_that_is_off_says_so(tmp_path: Path) -> None:
    config = _settings(tmp_path, "entry_points = false\ntimeouts = { weather = 15.0 }\n")
    with pytest.raises(ConfigError, match=r"line 4: .*`weather` \(a built-in skill this config"):
        load_skills(Registry(), config)


def test_timeouts_apply_to_built_ins_and_plugin_skills(tmp_path: Path) -> None:
    plugins = tmp_path / "skills.d"
    plugins.mkdir()
    (plugins / "barrel.py").write_text(PLUGIN, encoding="utf-8")
    config = _settings(
        tmp_path,
        f"entry_points = false\ndirectories = [{str(plugins)!r}]\n"
        "[skills.timeouts]\nread_sensor = 4.5\nwater_level = 9.0\n",
    )
    registry = Registry()
    assert load_skills(registry, config) == []
    timeouts = {spec.name: spec.timeout_s for spec in registry}
    # The config wins over the 2 s default and over the 5 s the plugin chose; the order stays.
    assert (timeouts["read_sensor"], timeouts["water_level"], timeouts["now"]) == (4.5, 9.0, 2.0)
    assert registry.names()[-1] == "water_level" and registry.names()[0] == BUILTIN_NAMES[0]
    water = registry.get("water_level")
    assert water is not None and registry.call(water, {}) == {"value": 120, "unit": "L"}


def test_a_timeout_for_a_skipped_plugin_names_the_plugin(tmp_path: Path) -> None:
    plugins = tmp_path / "skills.d"
    plugins.mkdir()
    (plugins / "barrel.py").write_text("raise RuntimeError('no bus')\n", encoding="utf-8")
    config = _settings(
        tmp_path,
        f"entry_points = false\ndirectories = [{str(plugins)!r}]\n"
        "[skills.timeouts]\nwater_level = 9.0\n",
    )
    with pytest.raises(ConfigError, match=r"no skill named `water_level`.*skipped.*barrel\.py"):
        load_skills(Registry(), config)


@settings(max_examples=40, deadline=None)
@given(name=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1))
def test_any_timeout_name_is_applied_or_refused_clearly(name: str) -> None:
    key = json.dumps(name, ensure_ascii=False)
    config = parse_settings(f"[skills]\nentry_points = false\n[skills.timeouts]\n{key} = 3.0\n")
    registry = Registry()
    if name in BUILTIN_NAMES[:-1]:  # every built-in but the weather, which is off
        load_skills(registry, config)
        spec = registry.get(name)
        assert spec is not None and spec.timeout_s == 3.0
        return
    with pytest.raises(ConfigError, match=r"skills\.timeouts\..* no skill named"):
        load_skills(registry, config)


def test_serve_stops_with_78_on_a_timeout_typo(tmp_path: Path) -> None:
    config = tmp_path / "edge.toml"
    config.write_text("[skills.timeouts]\nread_sensors = 4.0\n", encoding="utf-8")
    config.chmod(0o644)
    mock = tmp_path / "mock.json"
    mock.write_text(json.dumps(['{"final_answer": "x"}']), encoding="utf-8")
    served = subprocess.run(
        [
            *(sys.executable, "-m", "edge_agentd.cli", "serve", "--config", str(config)),
            *("--model", f"mock:{mock}", "--endpoint", f"ipc://{tmp_path}/agent.sock"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert served.returncode == 78, served.stderr
    assert f"{config}: line 2: skills.timeouts.read_sensors:" in served.stderr
    assert "did you mean `read_sensor`?" in served.stderr
    assert not (tmp_path / "agent.sock").exists()


def _shown_error(doc: Path) -> str:
    found = re.search(r"```text\nconfig error: (.*?)\n```", doc.read_text(encoding="utf-8"))
    assert found is not None, f"{doc.name} lost its config error example"
    return found.group(1)


def test_the_config_errors_the_docs_show_are_the_real_ones(tmp_path: Path) -> None:
    shown = _shown_error(REPO / "README.md")
    path = shown.split(": ", 1)[0]
    with pytest.raises(ConfigError) as caught:
        parse_settings("[daemon]\nqueue_limit = 8\nqueue_limt = 8\n", path)
    assert str(caught.value) == shown

    shown = _shown_error(REPO / "docs" / "skills.md")
    text = "[skills]\nentry_points = false\n\n[skills.timeouts]\nread_sensor = 4.0\nread_sensors = 4.0\n"
    with pytest.raises(ConfigError) as caught:
        load_skills(Registry(), parse_settings(text, shown.split(": ", 1)[0]))
    assert str(caught.value) == shown
