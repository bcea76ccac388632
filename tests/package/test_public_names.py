"""The package's public names: the literal table of daemon/__init__.py that the lazy imports and
``__all__`` read at run time, held equal to its TYPE_CHECKING block, which type checkers read as
imports; and both kept without the package's source."""

from __future__ import annotations

import ast
import importlib
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

import edge_agentd

INIT = Path(__file__).resolve().parents[2] / "daemon" / "__init__.py"


def _type_checking_imports() -> dict[str, str]:
    """name -> module, from the ``if TYPE_CHECKING:`` block of daemon/__init__.py."""
    found: dict[str, str] = {}
    for node in ast.parse(INIT.read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module is not None
                for alias in statement.names:
                    # `X as X` is what tells a type checker that X is exported.
                    assert alias.asname == alias.name, alias.name
                    found[alias.name] = statement.module
    return found


def test_the_table_the_lazy_imports_read_is_the_type_checking_block() -> None:
    assert _type_checking_imports() == edge_agentd._HOMES
    assert edge_agentd.__all__ == sorted(_type_checking_imports())
    assert set(edge_agentd.__all__) <= set(dir(edge_agentd))


@pytest.mark.parametrize("name", sorted(_type_checking_imports()))
def test_each_public_name_is_the_object_in_its_home(name: str) -> None:
    home = importlib.import_module(_type_checking_imports()[name])
    assert getattr(edge_agentd, name) is getattr(home, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        edge_agentd.no_such_name  # noqa: B018


def test_a_star_import_gives_every_name_and_importing_loads_none() -> None:
    code = (
        "import sys, edge_agentd\n"
        "assert 'pydantic' not in sys.modules and 'edge_agentd.agent' not in sys.modules\n"
        "namespace = {}\n"
        "exec('from edge_agentd import *', namespace)\n"
        "print(sorted(k for k in namespace if not k.startswith('__')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(sorted(edge_agentd.__all__))


def test_the_public_names_need_no_source(tmp_path: Path) -> None:
    """An install of compiled files alone (no ``.py``) still has every public name: the table
    is data in the compiled module, not read from the source at run time."""
    package = tmp_path / "edge_agentd"
    package.mkdir()
    compiled = package / "__init__.pyc"
    py_compile.compile(str(INIT), cfile=str(compiled), doraise=True)
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import edge_agentd\n"
        "assert edge_agentd.__file__.endswith('.pyc'), edge_agentd.__file__\n"
        "print(edge_agentd.__all__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(sorted(_type_checking_imports()))
