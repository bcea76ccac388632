"""The folders are the layers, and every import arrow points one way (docs/design.md, "Layers").

Each module's imports of ``edge_agentd`` are read from its syntax tree, lazy imports inside
functions included, and checked against the layer table in docs/design.md. A backwards import
fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DESIGN = ROOT / "docs" / "design.md"


def read_layer_table() -> dict[str, set[str]]:
    """design.md's layer table: for each layer, the layers it may import besides itself.

    The table is the source: a row's first cell names the layer (`agent/`, or `edge_agentd` for the
    package's own `__init__`), and its last cell lists what it may import, or says "nothing".
    """
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        name = cells[0].split("`")[1].rstrip("/")
        table["package" if name == "edge_agentd" else name] = set(
            part.strip().strip("`").rstrip("/") for part in cells[2].split(",")
        ) - {"nothing"}
    return table


ALLOWED = read_layer_table()


def layer(module: str) -> str:
    """A module's layer is its first folder under the package; the package's own modules are
    the layer "package"."""
    parts = module.split(".")
    if parts[0] != "edge_agentd":
        raise AssertionError(f"{module} is in no layer")
    if len(parts) == 1:
        return "package"
    room = "/".join(parts[1:3])
    if parts[1] == "service" and room in ALLOWED:
        return room  # one of the daemon's rooms
    if parts[1] == "service" and len(parts) > 3:
        raise AssertionError(f"{module} is in no layer: docs/design.md has no row for its room")
    if parts[1] in ALLOWED:
        return parts[1]
    raise AssertionError(f"{module} is in no layer: docs/design.md has no row for it")


def module_name(path: Path) -> str:
    if path.is_relative_to(ROOT / "skills"):
        parts = ["edge_agentd", "skills", *path.relative_to(ROOT / "skills").with_suffix("").parts]
    else:
        parts = ["edge_agentd", *path.relative_to(ROOT / "daemon").with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path}: use absolute imports, not relative ones")
            names.add(node.module or "")
    return {n for n in names if n == "edge_agentd" or n.startswith("edge_agentd.")}


MODULES = sorted([*(ROOT / "daemon").rglob("*.py"), *(ROOT / "skills").rglob("*.py")])


def test_every_module_is_in_a_layer() -> None:
    assert len(MODULES) > 40
    for path in MODULES:
        layer(module_name(path))


def test_the_package_root_holds_no_loose_modules() -> None:
    """Every module lives in a layer's folder; the root keeps only the public names."""
    loose = sorted(p.name for p in (ROOT / "daemon").glob("*.py") if p.name != "__init__.py")
    assert loose == []


def may_import(own: str, other: str) -> bool:
    """A layer imports itself and what its row names; a layer outside the daemon that may import
    ``service/`` may import its rooms too."""
    if other == own or other in ALLOWED[own]:
        return True
    outside = not own.startswith("service")
    return outside and other.startswith("service/") and "service" in ALLOWED[own]


def test_the_design_table_names_every_folder_and_only_known_layers() -> None:
    folders = {p.name for p in (ROOT / "daemon").iterdir() if (p / "__init__.py").exists()}
    rooms = {
        f"service/{p.name}"
        for p in (ROOT / "daemon" / "service").iterdir()
        if (p / "__init__.py").exists()
    }
    assert folders | rooms | {"skills", "package"} == set(ALLOWED)
    for allowed in ALLOWED.values():
        assert allowed <= set(ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down_the_layers(path: Path) -> None:
    own = layer(module_name(path))
    backwards = sorted(
        f"{name} ({layer(name)})"
        for name in imported(path)
        if not may_import(own, layer(name))
    )
    assert not backwards, f"{path.relative_to(ROOT)} ({own}) may not import {backwards}"


def test_the_checker_catches_a_backwards_import(tmp_path: Path) -> None:
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("def f():\n    from edge_agentd.service.server import Server\n")
    assert imported(sneaky) == {"edge_agentd.service.server"}
    assert layer("edge_agentd.service.server") not in ALLOWED["agent"]


def test_the_rooms_import_no_room_that_imports_them() -> None:
    """No two of the daemon's rooms may import each other, by the table: it is a ladder."""
    rooms = [name for name in ALLOWED if name.startswith("service")]
    for room in rooms:
        for other in ALLOWED[room] & set(rooms):
            assert room not in ALLOWED[other], f"{room} and {other} may import each other"


def test_a_room_importing_the_serving_loop_is_caught() -> None:
    assert layer("edge_agentd.service.journal.store") == "service/journal"
    assert layer("edge_agentd.service.server") == "service"
    assert not may_import("service/journal", "service")
    assert may_import("cli", "service/assembly")


MAX_MODULE_LINES = 400
"""A module longer than this is cut where it divides (the project's rule of thumb)."""


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_the_line_limit(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)}: {lines} lines"
