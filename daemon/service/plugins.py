"""Skills from outside the package: ``.py`` files in skills directories, and installed packages.

A plugin is a module with a function ``register(registry)`` that adds its skills, for example with
``@registry.skill``. A file plugin is any ``*.py`` in a configured directory (files starting with
``_`` or ``.`` are skipped). A packaged plugin is an entry point in the group ``edge_agent.skills``
that names either such a ``register`` function or a module that has one.

A plugin that fails to import, has no ``register``, raises inside it, or registers a name that is
taken is logged, reported as a :class:`PluginProblem` and skipped: whatever it had registered is
removed again, and loading goes on with the next one. Each skill a plugin adds records where it came
from in ``SkillSpec.source``: the file's path, or ``entry-point:<name>``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from edge_agent.agent.registry import Registry

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "edge_agent.skills"


@dataclasses.dataclass(frozen=True)
class PluginProblem:
    """A plugin that was skipped, and why."""

    source: str
    error: str


def load_plugins(
    registry: Registry,
    directories: Iterable[str | os.PathLike[str]],
    *,
    entry_points: bool = True,
) -> list[PluginProblem]:
    """Load the plugins in ``directories`` and (unless turned off) the installed entry points.

    Returns the problems, one per skipped plugin; an empty list means all loaded.
    """
    if not isinstance(registry, Registry):
        raise TypeError(f"load_plugins needs a Registry, not {type(registry).__name__}")
    if isinstance(directories, str | os.PathLike):
        raise TypeError("directories must be a list of directories, not one path")
    problems: list[PluginProblem] = []
    seen: set[str] = set()
    for directory in directories:
        for path, unlisted in _plugin_files(Path(directory)):
            if unlisted is not None:
                problems.append(_report(unlisted))
                continue
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            problem = _load(
                registry, str(path), functools.partial(_import_file, path), _module_name(path)
            )
            if problem is not None:
                problems.append(problem)
    if entry_points:
        for entry_point in sorted(
            importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name
        ):
            source = f"entry-point:{entry_point.name}"
            problem = _load(registry, source, entry_point.load)
            if problem is not None:
                problems.append(problem)
    return problems


def _report(problem: PluginProblem) -> PluginProblem:
    log.warning("skipped plugin %s: %s", problem.source, problem.error)
    return problem


def _plugin_files(directory: Path) -> list[tuple[Path, PluginProblem | None]]:
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        error = f"cannot list the skills directory: {exc.strerror or exc}"
        return [(directory, PluginProblem(str(directory), error))]
    return [
        (directory / name, None)
        for name in names
        if name.endswith(".py") and not name.startswith(("_", ".")) and (directory / name).is_file()
    ]


def _module_name(path: Path) -> str:
    """A module name of its own for each plugin file, so two ``sensors.py`` never collide."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"edge_agent_plugin_{stem}_{digest}"


def _import_file(path: Path) -> types.ModuleType:
    module_name = _module_name(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # In sys.modules while it runs, as for any import, so dataclasses and pickling work in it.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def _register_function(loaded: object) -> Callable[[Registry], Any]:
    if isinstance(loaded, types.ModuleType):
        register = getattr(loaded, "register", None)
        if not callable(register):
            raise TypeError("it defines no register(registry) function")
        return register  # type: ignore[no-any-return]
    if not callable(loaded):
        raise TypeError(f"it names a {type(loaded).__name__}, not a register(registry) function")
    return loaded


def _load(
    registry: Registry, source: str, load: Callable[[], object], module_name: str = ""
) -> PluginProblem | None:
    """Import one plugin and run its register; on any failure undo what it registered.

    ``module_name`` is the made-up name a plugin file is imported under; error messages (a name
    clash names the module) show the file's path instead.
    """
    before = set(registry.names())
    try:
        register = _register_function(load())
        register(registry)
        _label_sources(registry, before, source)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a bad plugin never stops the daemon
        for name in registry.names():
            if name not in before:
                registry.remove(name)
        message = str(exc).replace(module_name, source) if module_name else str(exc)
        return _report(PluginProblem(source, f"{type(exc).__name__}: {message}"))
    added = [name for name in registry.names() if name not in before]
    log.info("plugin %s added %s", source, ", ".join(added) or "no skills")
    return None


def _label_sources(registry: Registry, before: set[str], source: str) -> None:
    """Record ``source`` on the plugin's new skills that did not name a source of their own.

    A skill's source defaults to its function's module; for a plugin that module name is made up
    here or says nothing about the package, so it is replaced by the file or entry point. The
    skills are re-added in the same order, so the registry's order does not change.
    """
    added = [spec for spec in registry if spec.name not in before]
    for spec in added:
        registry.remove(spec.name)
    for spec in added:
        own = spec.source != getattr(spec.function, "__module__", None)
        registry.add(
            spec.function,
            name=spec.name,
            description=spec.description,
            timeout=spec.timeout_s,
            source=spec.source if own else source,
        )


__all__ = ["ENTRY_POINT_GROUP", "PluginProblem", "load_plugins"]
