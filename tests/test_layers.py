"""The folders are the layers, and every import arrow points one way (docs/design.md, "Layers").

Each module's imports of ``edge_agent`` are read from its syntax tree, lazy imports inside
functions included, and checked against the table below. A backwards import fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Which layer a module is in: the first matching prefix wins.
LAYER_OF = [
    ("edge_agent.agent", "agent"),
    ("edge_agent.model", "model"),
    ("edge_agent.service", "service"),
    ("edge_agent.skills", "skills"),
    ("edge_agent.wire", "protocol"),
    ("edge_agent.framing", "protocol"),
    ("edge_agent.endpoints", "protocol"),
    ("edge_agent.client", "client"),
    ("edge_agent.mqttwire", "protocol"),
    ("edge_agent.mqttclient", "client"),
    ("edge_agent.mqttargs", "client"),
    ("edge_agent.progress", "client"),
    ("edge_agent.cli", "cli"),
    ("edge_agent", "package"),
]

# What each layer may import, besides itself.
ALLOWED = {
    "agent": set(),
    "model": {"agent"},
    "skills": {"agent"},
    "protocol": set(),
    "service": {"agent", "model", "skills", "protocol"},
    "client": {"protocol"},
    "cli": {"client", "protocol", "service", "agent"},
    "package": {"agent", "model"},
}


def layer(module: str) -> str:
    for prefix, name in LAYER_OF:
        if module == prefix or module.startswith(prefix + "."):
            return name
    raise AssertionError(f"{module} is in no layer")


def module_name(path: Path) -> str:
    if path.is_relative_to(ROOT / "skills"):
        parts = ["edge_agent", "skills", *path.relative_to(ROOT / "skills").with_suffix("").parts]
    else:
        parts = ["edge_agent", *path.relative_to(ROOT / "daemon").with_suffix("").parts]
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
    return {n for n in names if n == "edge_agent" or n.startswith("edge_agent.")}


MODULES = sorted([*(ROOT / "daemon").rglob("*.py"), *(ROOT / "skills").rglob("*.py")])


def test_every_module_is_in_a_layer() -> None:
    assert len(MODULES) > 40
    for path in MODULES:
        layer(module_name(path))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down_the_layers(path: Path) -> None:
    own = layer(module_name(path))
    backwards = sorted(
        f"{name} ({layer(name)})"
        for name in imported(path)
        if layer(name) != own and layer(name) not in ALLOWED[own]
    )
    assert not backwards, f"{path.relative_to(ROOT)} ({own}) may not import {backwards}"


def test_the_checker_catches_a_backwards_import(tmp_path: Path) -> None:
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("def f():\n    from edge_agent.service.server import Server\n")
    assert imported(sneaky) == {"edge_agent.service.server"}
    assert layer("edge_agent.service.server") not in ALLOWED["agent"]
