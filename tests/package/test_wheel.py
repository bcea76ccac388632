"""The installed daemon is the tested daemon: the wheel built from this tree holds all of it, and
installed into a fresh venv (not editable, the checkout out of reach) it serves and answers.

Every other test runs the editable checkout, which imports whatever the tree has; a wheel holds
only what pyproject.toml lists. A package left out of that list (as edge_agentd.service.triggers
once was) passed every test and yet stopped `edge-agent serve` on every installed machine with
ModuleNotFoundError. These tests build and install the wheel as install.sh does (tests/
wheel_harness.py says how, and why from a wheelhouse).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_harness import stop_daemon
from wheel_harness import (
    REPO,
    fresh_venv,
    only_wheel,
    tree_files,
    wheel_files,
    wheel_metadata,
)

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
# Building the wheelhouse and installing a venv from it: generous, for a loaded 2-core machine.
INSTALL_LIMIT_S = 1200


def _package_folder(package: str, package_dir: dict[str, str]) -> Path:
    """The folder setuptools builds ``package`` from: its longest mapped prefix's folder, then
    the rest of its name as subfolders."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in package_dir:
            return REPO / package_dir[prefix] / Path(*parts[cut:])
    return REPO / Path(*parts)


def _packages_in_tree(package_dir: dict[str, str]) -> set[str]:
    """Every folder of a mapped source folder that holds a module, named as a package."""
    found: set[str] = set()
    for package, folder in package_dir.items():
        root = REPO / folder
        for module in root.rglob("*.py"):
            relative = module.parent.relative_to(root)
            found.add(".".join([package, *relative.parts]))
    return found


def test_pyproject_lists_every_package_of_the_tree_and_nothing_else() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    package_dir: dict[str, str] = setuptools["package-dir"]
    listed = set(setuptools["packages"])
    in_tree = _packages_in_tree(package_dir)
    assert sorted(in_tree - listed) == [], "folders with modules that the wheel would leave out"
    assert sorted(listed - in_tree) == [], "listed packages with no modules in the tree"
    for package in listed:
        assert (_package_folder(package, package_dir) / "__init__.py").is_file(), package


def test_the_package_list_check_sees_a_missing_package() -> None:
    # The check above compares two sets; this is the mistake it exists for.
    setuptools = PYPROJECT["tool"]["setuptools"]
    in_tree = _packages_in_tree(setuptools["package-dir"])
    assert "edge_agentd.service.triggers" in in_tree
    assert "edge_agentd.skills" in in_tree and "edge_agentd" in in_tree
    assert _package_folder("edge_agentd.service.mqtt", setuptools["package-dir"]) == (
        REPO / "daemon" / "service" / "mqtt"
    )
    assert _package_folder("edge_agentd.skills", setuptools["package-dir"]) == REPO / "skills"


@pytest.fixture(scope="module")
def wheel(wheelhouse: Path) -> Path:
    return only_wheel(wheelhouse)


@pytest.mark.timeout(INSTALL_LIMIT_S)
def test_the_wheel_holds_every_file_of_the_tree(wheel: Path) -> None:
    shipped = wheel_files(wheel)
    tree = tree_files()
    missing = sorted(tree - shipped)
    assert missing == [], f"the tree has these and the wheel {wheel.name} lacks them"
    # Nothing else either: a file the tree no longer has (a stale build/lib) is not shipped.
    assert sorted(shipped - tree) == []
    # The typing marker, and the command the unit, install.sh and the README run.
    assert "edge_agentd/py.typed" in shipped
    entry_points = wheel_metadata(wheel, "entry_points.txt")
    assert "edge-agent = edge_agentd.cli.main:main" in entry_points
    assert wheel_metadata(wheel, "METADATA").startswith("Metadata-Version:")
    assert "Name: edge-agentd\n" in wheel_metadata(wheel, "METADATA")


@pytest.fixture(scope="module")
def installed(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The bin folder of a fresh venv holding the wheel, as a user's pip installs it."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    yield fresh_venv(venv, wheelhouse)
    shutil.rmtree(venv)  # about 200 MB, and pytest keeps the last three runs' folders


def _outside_env(state: Path) -> dict[str, str]:
    """The environment of a user's shell: nothing that leads Python to the checkout."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))
    }
    env["XDG_STATE_HOME"] = str(state)
    return env


def _run(command: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float = 120) -> str:
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout_s
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A working folder outside the checkout."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    assert REPO not in folder.resolve().parents
    yield folder


@pytest.mark.timeout(INSTALL_LIMIT_S)
def test_the_installed_wheel_serves_and_answers_without_the_checkout(
    installed: Path, outside: Path
) -> None:
    env = _outside_env(outside / "state")
    # The code that runs is the venv's own copy, not the checkout's.
    where = _run(
        [str(installed / "python"), "-c", "import edge_agentd; print(edge_agentd.__file__)"],
        cwd=outside,
        env=env,
    )
    venv = installed.parent
    assert Path(where.strip()).is_relative_to(venv), where
    assert not [
        pth for pth in venv.rglob("*.pth") if str(REPO) in pth.read_text(errors="replace")
    ], "the venv points back at the checkout"

    replies = outside / "replies.json"
    replies.write_text(
        json.dumps(
            [
                json.dumps({"skill_name": "now", "arguments": {}}),
                json.dumps({"final_answer": "Served by the installed wheel."}),
            ]
        )
    )
    endpoint = f"ipc://{outside / 'agent.sock'}"
    daemon = subprocess.Popen(
        [
            str(installed / "edge-agent"),
            "serve",
            "--model",
            f"mock:{replies}",
            "--endpoint",
            endpoint,
            "--log-level",
            "WARNING",
        ],
        cwd=outside,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    client = str(installed / "edge-agent")
    try:
        _wait_until_it_answers_status(daemon, client, endpoint, outside, env)
        asked = _run(
            [client, "ask", "--json", "--timeout", "120", "--endpoint", endpoint, "What time?"],
            cwd=outside,
            env=env,
            timeout_s=300,
        )
    finally:
        output = stop_daemon(daemon, timeout=60)
    reply = json.loads(asked)
    assert reply["answer"] == "Served by the installed wheel.", reply
    skills_run = [e for e in reply["events"] if e["type"] == "SkillResultObservation"]
    assert [e["skill_name"] for e in skills_run] == ["now"], reply
    assert daemon.returncode == 0, output
    assert "Traceback" not in output, output


def _wait_until_it_answers_status(
    daemon: subprocess.Popen[str], client: str, endpoint: str, cwd: Path, env: dict[str, str]
) -> None:
    """Polls the installed client's `status` until the daemon answers it; fails at once if the
    daemon exits (as it did with a package missing from the wheel)."""
    for _ in range(600):
        if daemon.poll() is not None:
            output = daemon.stdout.read() if daemon.stdout else ""
            pytest.fail(f"the installed daemon exited with {daemon.returncode}:\n{output}")
        status = subprocess.run(
            [client, "status", "--json", "--timeout", "2", "--endpoint", endpoint],
            check=False,
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=120,
        )
        if status.returncode == 0:
            return
    pytest.fail(f"the installed daemon never answered status: {status.stdout}{status.stderr}")
