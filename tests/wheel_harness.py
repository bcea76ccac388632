"""The package as pip ships it: the wheel built from this tree, and a wheelhouse to install it from.

Every other test imports the checkout (an editable install). These helpers let a test install what
a user gets instead: ``build_wheelhouse`` builds edge-agentd's wheel from a clean copy of the tree
and has pip fetch the wheels of everything it depends on next to it; ``fresh_venv`` installs it
from there into a new venv, not editable, with pip knowing of nothing but that wheelhouse.

Why a wheelhouse, not the index: llama-cpp-python has no wheel on PyPI and compiles llama.cpp for
about six minutes. ``make .venv/.installed`` compiled it once and left the wheel in pip's cache;
``pip wheel`` here, pinned to the versions the test venv holds, finds the same release and takes
that cached wheel. The venvs the tests make then install offline from the wheelhouse, each in
seconds, with nothing from the checkout: the wheel's own files and its declared dependencies.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The source folders and the import package each one becomes (pyproject's package-dir).
SOURCE_PACKAGES = {"daemon": "edge_agentd", "skills": "edge_agentd/skills"}
# Left behind by builds, venvs and tools: never part of what is built (as .gitignore says).
_NOT_SOURCE = (
    ".git",
    ".venv",
    "build",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
)
# pip and setuptools too: install.sh upgrades both in its venv before installing the checkout.
_TOOLS = ("pip", "setuptools")
PIP_TIMEOUT_S = 900


def _run(command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(
        command,
        check=False,
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_S,
        env=env,
        cwd=cwd,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    return done.stdout


def clean_copy(destination: Path) -> Path:
    """This tree as a fresh clone has it: no venv, no earlier build (a stale build/lib would put
    modules the tree no longer has into the wheel)."""
    shutil.copytree(REPO, destination, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    return destination


def build_wheelhouse(directory: Path) -> Path:
    """edge-agentd's wheel and a wheel of every package it, pip and setuptools need, in
    ``directory``; returns the path of edge-agentd's wheel."""
    directory.mkdir(parents=True, exist_ok=True)
    source = clean_copy(directory.parent / "source")
    # The test venv's setuptools builds it (pyproject's build backend): no index needed for that.
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(directory),
            str(source),
        ]
    )
    shutil.rmtree(source)
    wheel = only_wheel(directory)
    constraints = directory.parent / "constraints.txt"
    constraints.write_text("".join(f"{pin}\n" for pin in tested_versions()))
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--wheel-dir",
            str(directory),
            "--constraint",
            str(constraints),
            str(wheel),
            *_TOOLS,
        ]
    )
    return wheel


def tested_versions() -> list[str]:
    """``name==version`` of every package in the test venv but edge-agentd: the versions the
    tests ran with, so pip takes the same releases (llama-cpp-python's from pip's cache).
    Read from the installed metadata, since `pip freeze` writes ``name @ URL`` for a package
    installed from a file, which pip refuses as a constraint."""
    pins = {
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
        if dist.metadata["Name"] and dist.metadata["Name"].lower() != "edge-agentd"
    }
    return sorted(pins)


def only_wheel(directory: Path) -> Path:
    found = sorted(directory.glob("edge_agentd-*.whl"))
    if len(found) != 1:
        raise RuntimeError(f"expected one edge_agentd wheel in {directory}, found {found}")
    return found[0]


def offline_pip_env(wheelhouse: Path) -> dict[str, str]:
    """An environment in which pip reads no config, asks no index, and finds only the
    wheelhouse, and in which nothing points Python back at the checkout."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))
    }
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


def fresh_venv(venv: Path, wheelhouse: Path, *, python: str = sys.executable) -> Path:
    """A new venv with edge-agentd installed from the wheelhouse (a regular install, as
    install.sh does); returns its bin directory."""
    env = offline_pip_env(wheelhouse)
    _run([python, "-m", "venv", str(venv)], env=env)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "edge-agentd"], env=env)
    return venv / "bin"


def tree_files() -> set[str]:
    """Every file of the source folders, named as it lands in the wheel (edge_agentd/...)."""
    files: set[str] = set()
    for folder, package in SOURCE_PACKAGES.items():
        root = REPO / folder
        for path in root.rglob("*"):
            relative = path.relative_to(root)
            if path.is_dir() or "__pycache__" in relative.parts or path.suffix == ".pyc":
                continue
            files.add(f"{package}/{relative.as_posix()}")
    return files


def wheel_files(wheel: Path) -> set[str]:
    """The package files in the wheel (its .dist-info metadata left out)."""
    with zipfile.ZipFile(wheel) as archive:
        return {
            name
            for name in archive.namelist()
            if not name.endswith("/") and ".dist-info/" not in name
        }


def wheel_metadata(wheel: Path, name: str) -> str:
    """One file of the wheel's .dist-info (``entry_points.txt``, ``METADATA``...)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith(f".dist-info/{name}"):
                return archive.read(member).decode("utf-8")
    raise KeyError(f"{wheel.name} has no .dist-info/{name}")
