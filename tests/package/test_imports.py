"""No circle of imports of any length, no module using another's private names, and only cli/
parsing arguments or printing (docs/design.md, "Layers").

Read from each module's syntax tree, as test_layers.py reads the layers. Every import counts: lazy
ones inside functions, and those under ``if TYPE_CHECKING:`` too, since a circle of types is a
circle of meaning even when it never runs. The modules are a graph, its strongly connected
components (Tarjan's) are its circles, and each is shown as a path that closes.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest
from test_layers import MODULES, ROOT, module_name

PACKAGE = "edge_agentd"

KNOWN = {module_name(path) for path in MODULES}


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def module_imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules ``path`` imports, wherever the import stands. ``from edge_agentd.x
    import y`` imports ``x.y`` when that is a module of its own, else ``x``: a package's
    ``__init__`` is the edge only when one of its own names is taken."""
    names: set[str] = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                names.add(inner if inner in known else node.module)
    return {name for name in names if name in known}


def rings(imports: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of the import graph with more than one module (or a
    module importing itself), each sorted, found by Tarjan's algorithm without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)

    for start in sorted(imports):
        if start in index:
            continue
        visit(start)
        work = [(start, iter(sorted(imports[start])))]
        while work:
            node, edges = work[-1]
            for other in edges:
                if other not in imports:
                    continue
                if other not in index:
                    visit(other)
                    work.append((other, iter(sorted(imports[other]))))
                    break
                if other in on_stack:
                    low[node] = min(low[node], index[other])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    ring: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        ring.append(member)
                        if member == node:
                            break
                    if len(ring) > 1 or node in imports[node]:
                        found.append(sorted(ring))
    return sorted(found)


def closing_path(ring: list[str], imports: Mapping[str, set[str]]) -> list[str]:
    """One circle through the ring's first module, first and last the same: the shortest path
    back to it, found breadth first inside the ring."""
    start, members = ring[0], set(ring)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for other in sorted(imports[node] & members):
                if other == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if other not in came_from:
                    came_from[other] = node
                    following.append(other)
        frontier = following
    raise AssertionError(f"{ring} is no ring")


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def describe(ring: list[str], imports: Mapping[str, set[str]]) -> str:
    """The ring as a path that closes, and its other members when the path leaves some out."""
    path = closing_path(ring, imports)
    others = sorted(set(ring) - set(path))
    rest = f" (with {', '.join(map(_short, others))})" if others else ""
    return " -> ".join(map(_short, path)) + rest


IMPORTS = {module_name(path): module_imports(path, KNOWN) for path in MODULES}


def test_no_circle_of_imports_of_any_length() -> None:
    found = [describe(ring, IMPORTS) for ring in rings(IMPORTS)]
    assert found == [], "circles of imports:\n  " + "\n  ".join(found)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_names_defined(path: Path) -> set[str]:
    """The private names a module defines: its functions, classes, methods and attributes."""
    names: set[str] = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if _private(name)}


def private_uses(path: Path, others_private: set[str]) -> list[str]:
    """Where ``path`` reaches for another module's private name: ``from edge_agentd.x import
    _name``, ``module._name``, or ``thing._name`` for a ``_name`` only another module defines."""
    own = private_names_defined(path)
    modules: set[str] = set()  # the local names bound to one of the package's modules
    found: list[str] = []
    tree = _parse(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                if f"{node.module}.{alias.name}" in KNOWN:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        on_module = isinstance(node.value, ast.Name) and node.value.id in modules
        if on_module or (node.attr in others_private and node.attr not in own):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return sorted(found, key=lambda where: int(where.split()[1].rstrip(":")))


PRIVATE = {path: private_names_defined(path) for path in MODULES}


def _others_private(path: Path) -> set[str]:
    """The private names every module but ``path`` defines."""
    return set().union(*(PRIVATE[other] for other in MODULES if other != path))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_uses_another_modules_private_names(path: Path) -> None:
    assert private_uses(path, _others_private(path)) == []


def test_the_checker_catches_a_ring_of_three_through_types_and_a_private_import(
    tmp_path: Path,
) -> None:
    first, second, third = (tmp_path / f"{n}.py" for n in ("first", "second", "third"))
    first.write_text("from edge_agentd.fake.second import helper\n")
    second.write_text("def f():\n    from edge_agentd.fake.first import _hidden\n    return _hidden\n")
    third.write_text(
        "from typing import TYPE_CHECKING\n"
        "from edge_agentd.fake import second\n"
        "if TYPE_CHECKING:\n    from edge_agentd.fake.first import Hint\n"
    )
    known = {f"edge_agentd.fake.{n}" for n in ("first", "second", "third")} | {"edge_agentd.fake"}
    imports = {f"edge_agentd.fake.{p.stem}": module_imports(p, known) for p in (first, second, third)}
    assert imports["edge_agentd.fake.third"] == {"edge_agentd.fake.second", "edge_agentd.fake.first"}
    # first and second import each other; third only leans on them
    assert rings(imports) == [["edge_agentd.fake.first", "edge_agentd.fake.second"]]
    first.write_text("from edge_agentd.fake.third import helper\n")
    second.write_text("from edge_agentd.fake.first import helper\n")
    third.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from edge_agentd.fake.second import Hint\n"
    )
    imports = {f"edge_agentd.fake.{p.stem}": module_imports(p, known) for p in (first, second, third)}
    ring = ["edge_agentd.fake.first", "edge_agentd.fake.second", "edge_agentd.fake.third"]
    assert rings(imports) == [ring]  # a ring of three, closed by a type-only import
    assert describe(ring, imports) == "fake.first -> fake.third -> fake.second -> fake.first"
    second.write_text("def f():\n    from edge_agentd.fake.first import _hidden\n    return _hidden\n")
    assert private_uses(second, set()) == ["line 2: from edge_agentd.fake.first import _hidden"]


def test_a_module_importing_itself_is_a_ring() -> None:
    assert rings({"a": {"a"}, "b": {"a"}}) == [["a"]]
    assert describe(["a"], {"a": {"a"}}) == "a -> a"


def test_the_checker_catches_a_private_attribute(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(
        "from edge_agentd.client import zmqclient\n"
        "def f(client):\n    client._connected()\n    return zmqclient._secret\n"
    )
    assert private_uses(user, {"_connected"}) == [
        "line 3: client._connected",
        "line 4: zmqclient._secret",
    ]


CLI = ROOT / "daemon" / "cli"

WRITES_A_STREAM: dict[str, str] = {}
"""Modules outside cli/ that may print or touch sys.stdout/sys.stderr, each with why it is not a
command's parsing or printing."""


def parses_or_prints(path: Path) -> list[str]:
    """Where ``path`` parses arguments (imports argparse) or prints: ``print(``, or ``sys.stdout``
    / ``sys.stderr`` (``from sys import stderr`` too). Logging is not printing."""
    found: list[str] = []
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import argparse" for a in node.names if a.name == "argparse"
            ]
        elif isinstance(node, ast.ImportFrom) and node.module in ("argparse", "sys"):
            names = [a.name for a in node.names]
            if node.module == "argparse" or {"stdout", "stderr"} & set(names):
                found.append(f"line {node.lineno}: from {node.module} import {', '.join(names)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
        ):
            found.append(f"line {node.lineno}: print(")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            found.append(f"line {node.lineno}: sys.{node.attr}")
    return sorted(found, key=lambda where: int(where.split()[1].rstrip(":")))


@pytest.mark.parametrize(
    "path",
    [path for path in MODULES if not path.is_relative_to(CLI)],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_only_cli_parses_arguments_or_prints(path: Path) -> None:
    if module_name(path) in WRITES_A_STREAM:
        return
    assert parses_or_prints(path) == []


def test_the_exempt_modules_still_exist_and_print() -> None:
    for module, reason in WRITES_A_STREAM.items():
        path = next(path for path in MODULES if module_name(path) == module)
        assert reason and parses_or_prints(path), f"{module} need not be exempt any more"


def test_the_checker_catches_parsing_and_printing(tmp_path: Path) -> None:
    chatty = tmp_path / "chatty.py"
    chatty.write_text(
        "import argparse\nimport sys\nfrom sys import stderr\n"
        "def f():\n    print('hi')\n    sys.stdout.write('x')\n    sys.stderr.flush()\n"
        "    import logging\n    logging.getLogger().warning('fine')\n"
    )
    assert parses_or_prints(chatty) == [
        "line 1: import argparse",
        "line 3: from sys import stderr",
        "line 5: print(",
        "line 6: sys.stdout",
        "line 7: sys.stderr",
    ]
