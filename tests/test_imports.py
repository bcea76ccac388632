"""No two modules import each other, none uses another's private names, and only cli/ parses
arguments or prints (docs/design.md, "Layers").

Read from each module's syntax tree, lazy imports inside functions included, as test_layers.py
reads the layers. An import under ``if TYPE_CHECKING:`` never runs, so it makes no circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_layers import MODULES, ROOT, module_name

PACKAGE = "edge_agentd"

KNOWN = {module_name(path) for path in MODULES}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` but what sits under ``if TYPE_CHECKING:`` (its ``else`` runs)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from runtime_nodes(other)
            continue
        yield child
        yield from runtime_nodes(child)


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def runtime_imports(path: Path, known: set[str]) -> set[str]:
    """The package's modules ``path`` imports when it runs: ``from edge_agentd.x import y``
    imports ``x``, or ``x.y`` when that is a module of its own."""
    names: set[str] = set()
    for node in runtime_nodes(_parse(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if f"{node.module}.{alias.name}" in known
            )
    return {name for name in names if name in known}


def circles(imports: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Each pair of modules that import each other, once."""
    return sorted(
        (module, other)
        for module, imported in imports.items()
        for other in imported
        if module < other and module in imports.get(other, set())
    )


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


def test_no_two_modules_import_each_other() -> None:
    imports = {module_name(path): runtime_imports(path, KNOWN) for path in MODULES}
    assert circles(imports) == []


PRIVATE = {path: private_names_defined(path) for path in MODULES}


def _others_private(path: Path) -> set[str]:
    """The private names every module but ``path`` defines."""
    return set().union(*(PRIVATE[other] for other in MODULES if other != path))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_uses_another_modules_private_names(path: Path) -> None:
    assert private_uses(path, _others_private(path)) == []


def test_the_checker_catches_a_circle_and_a_private_import(tmp_path: Path) -> None:
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("from edge_agentd.fake.second import helper\n")
    second.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from edge_agentd.fake.third import Hint\n"
        "def f():\n    from edge_agentd.fake.first import _hidden\n    return _hidden\n"
    )
    known = {"edge_agentd.fake.first", "edge_agentd.fake.second", "edge_agentd.fake.third"}
    imports = {
        "edge_agentd.fake.first": runtime_imports(first, known),
        "edge_agentd.fake.second": runtime_imports(second, known),
    }
    assert imports["edge_agentd.fake.second"] == {"edge_agentd.fake.first"}  # not the hint
    assert circles(imports) == [("edge_agentd.fake.first", "edge_agentd.fake.second")]
    assert private_uses(second, set()) == ["line 5: from edge_agentd.fake.first import _hidden"]


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
