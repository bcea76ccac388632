"""Every install line we show or print installs this project, or a dependency by its own name.

This project is not on PyPI, and the names `edge-agent` and `edge_agent` there are another
project's: a `pip install edge-agent[...]` line would install a stranger's code into the daemon's
environment (dependency confusion). So an install line may name this project only by a path (the
checkout, `.`), and any other package only if pyproject.toml depends on it, in its dependencies or
an extra, or it is one of the packaging tools themselves.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PACKAGING_TOOLS = {"pip", "setuptools", "wheel"}

# Where install lines are written: the docs, the examples and config, the scripts, and the
# messages the daemon and the client print.
SOURCES = [
    REPO / "README.md",
    REPO / "Makefile",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "systemd").rglob("*")),
    *sorted((REPO / "scripts").rglob("*")),
    *sorted((REPO / "daemon").rglob("*.py")),
    *sorted((REPO / "skills").rglob("*.py")),
]
INSTALL = re.compile(r"\b(?:pip3?|pipx|uv pip)(?:\.exe)?\s+install\b([^\n`\"();]*)")
"""An install line runs to the end of its line, its code span or string, or a bracket or semicolon
of the prose around it."""
REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def normalized(name: str) -> str:
    """A distribution name as PyPI compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def allowed_names() -> set[str]:
    declared = [*PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        declared += extra
    names = {normalized(m.group(0)) for d in declared if (m := REQUIREMENT_NAME.match(d))}
    return names | PACKAGING_TOOLS


def install_lines() -> list[tuple[str, str]]:
    found = []
    for source in SOURCES:
        if not source.is_file() or source.suffix in {".pyc", ".gguf"}:
            continue
        text = source.read_text(encoding="utf-8", errors="replace")
        for match in INSTALL.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{source.relative_to(REPO)}:{line}", match.group(1)))
    return found


def named_packages(arguments: str) -> list[str]:
    """The packages an install line names by name, not by path or option."""
    try:
        words = shlex.split(arguments, comments=True)
    except ValueError:  # an unbalanced quote: the line is cut by a string's end in code
        words = arguments.replace("'", " ").split()
    names = []
    for word in words:
        if word.startswith(("-", ".", "/", "$", "~", "{", "<")) or "://" in word:
            continue  # an option, a path (the checkout), a variable, a placeholder
        match = REQUIREMENT_NAME.match(word)
        if match is not None:
            names.append(match.group(0))
    return names


def test_the_scan_finds_the_install_lines_it_is_meant_to_hold() -> None:
    places = {place.split(":")[0] for place, _ in install_lines()}
    # The docs' MQTT line, the installer's venv, the Makefile, and a message the daemon prints.
    assert {"docs/mqtt.md", "scripts/deploy/install.sh", "Makefile"} <= places
    assert "daemon/client/mqttclient.py" in places


@pytest.mark.parametrize(("place", "arguments"), install_lines())
def test_no_install_line_names_a_package_that_is_not_ours_or_a_dependency(
    place: str, arguments: str
) -> None:
    allowed = allowed_names()
    for name in named_packages(arguments):
        assert normalized(name) in allowed, (
            f"{place}: `pip install {arguments.strip()}` names {name!r}, which pyproject.toml "
            "does not depend on: install this project by its path, a dependency by its name"
        )


def test_our_own_name_is_never_a_requirement() -> None:
    """Not in an install line, and not in a plugin's `dependencies = [...]` as the docs show it."""
    ours = {normalized(PROJECT["name"]), "edge-agent"}
    for place, arguments in install_lines():
        assert not {normalized(n) for n in named_packages(arguments)} & ours, place
    for source in SOURCES:
        if source.is_file() and source.suffix in {".md", ".toml"}:
            text = source.read_text(encoding="utf-8")
            for listed in re.findall(r"dependencies\s*=\s*\[([^\]]*)\]", text):
                names = {normalized(n) for n in re.findall(r"[\"']([A-Za-z0-9._-]+)", listed)}
                assert not names & ours, f"{source.relative_to(REPO)} depends on {names & ours}"


def test_the_distribution_and_import_names_are_our_own() -> None:
    # edge-agent / edge_agent belong to another project on PyPI (a stdlib-only agent framework).
    assert normalized(PROJECT["name"]) == "edge-agentd"
    assert PROJECT["scripts"]["edge-agent"].startswith("edge_agentd.")


def test_the_scan_would_catch_a_strangers_name() -> None:
    allowed = allowed_names()
    bad = [n for n in named_packages(" 'edge-agent[mqtt]'") if normalized(n) not in allowed]
    assert bad == ["edge-agent"]
    assert named_packages(' --quiet --upgrade "$target"') == []
    assert named_packages(" -e '.[bench]'") == []
