"""Skills from outside the package: ``.py`` files in skills directories, and installed packages.

A plugin is a module with a function ``register(registry)`` that adds its skills, for example with
``@registry.skill``. A file plugin is any ``*.py`` in a configured directory (files starting with
``_`` or ``.`` are skipped). A packaged plugin is an entry point in the group ``edge_agentd.skills``
that names either such a ``register`` function or a module that has one.

A plugin can never stop the daemon from starting (docs/skills.md, "When a plugin is broken"):

- A skills directory or plugin file that others could change is refused before anything in it
  runs (:mod:`edge_agentd.service.config.safepaths`, sshd's rule for ``authorized_keys``).
- Each plugin is imported and registered in a daemon thread of its own, for at most
  ``timeout_s`` seconds; one still running then is left behind, and what it registers later
  goes nowhere.
- Whatever it raises is caught, ``BaseException`` included (``SystemExit``,
  ``KeyboardInterrupt``, ``GeneratorExit``).

Each such plugin is logged, reported as a :class:`PluginProblem` and skipped: whatever it had
registered is removed again, and loading goes on with the next one. A plugin registers into a
registry of its own, which is merged into the daemon's only when it has finished in time. Each
skill a plugin adds records where it came from in ``SkillSpec.source``: the file's path, or
``entry-point:<name>``.
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

from edge_agentd.agent.registry import Registry, SkillSpec
from edge_agentd.service.config.safepaths import UnsafePath, check_safe
from edge_agentd.service.threads.daemonthread import DaemonThread

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "edge_agentd.skills"

DEFAULT_TIMEOUT_S = 20.0
"""How long one plugin may take to import and register (``[skills] plugin_timeout_s``): room for
a slow import of numpy on a Raspberry Pi Zero, not for a plugin that waits on a device."""


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
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[PluginProblem]:
    """Load the plugins in ``directories`` and (unless turned off) the installed entry points,
    each within ``timeout_s`` seconds.

    Returns the problems, one per skipped plugin or refused directory; an empty list means all
    loaded.
    """
    if not isinstance(registry, Registry):
        raise TypeError(f"load_plugins needs a Registry, not {type(registry).__name__}")
    if isinstance(directories, str | os.PathLike):
        raise TypeError("directories must be a list of directories, not one path")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
        raise TypeError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
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
                registry,
                str(path),
                functools.partial(_import_file, path),
                timeout_s,
                _module_name(path),
            )
            if problem is not None:
                problems.append(problem)
    if entry_points:
        for entry_point in sorted(
            importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name
        ):
            source = f"entry-point:{entry_point.name}"
            problem = _load(registry, source, entry_point.load, timeout_s)
            if problem is not None:
                problems.append(problem)
    return problems


def _report(problem: PluginProblem) -> PluginProblem:
    log.warning("skipped plugin %s: %s", problem.source, problem.error)
    return problem


def _plugin_files(directory: Path) -> list[tuple[Path, PluginProblem | None]]:
    """The plugin files of ``directory``, each paired with the problem that refuses it, if any;
    a directory that cannot be listed or is not safe is one problem of its own."""
    try:
        names = sorted(os.listdir(directory))
        check_safe(directory)
    except OSError as exc:
        error = f"cannot list the skills directory: {exc.strerror or exc}"
        return [(directory, PluginProblem(str(directory), error))]
    except UnsafePath as exc:
        return [(directory, PluginProblem(str(directory), f"refused the directory: {exc}"))]
    files = [
        directory / name
        for name in names
        if name.endswith(".py") and not name.startswith(("_", ".")) and (directory / name).is_file()
    ]
    return [(path, _unsafe(path)) for path in files]


def _unsafe(path: Path) -> PluginProblem | None:
    try:
        check_safe(path)
    except UnsafePath as exc:
        return PluginProblem(str(path), f"refused the file: {exc}")
    except OSError as exc:
        return PluginProblem(str(path), f"cannot check the file: {exc.strerror or exc}")
    return None


def _module_name(path: Path) -> str:
    """A module name of its own for each plugin file, so two ``sensors.py`` never collide."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"edge_agent_plugin_{stem}_{digest}"


def _import_file(path: Path) -> types.ModuleType:
    """Import a plugin file from its source text.

    The source is compiled here rather than by the import system, which would also read (and
    write) a cached ``__pycache__/*.pyc`` beside it: a place the safety check does not cover.
    """
    module_name = _module_name(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    source = path.read_bytes()
    code = compile(source, str(path), "exec", dont_inherit=True)
    module = importlib.util.module_from_spec(spec)
    # In sys.modules while it runs, as for any import, so dataclasses and pickling work in it.
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)  # the plugin's own code, from a place check_safe passed
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
    registry: Registry,
    source: str,
    load: Callable[[], object],
    timeout_s: float,
    module_name: str = "",
) -> PluginProblem | None:
    """Import one plugin and run its register, in a thread of their own, for at most
    ``timeout_s``; on any failure undo what it registered.

    ``module_name`` is the made-up name a plugin file is imported under; error messages (a name
    clash names the module) show the file's path instead.
    """
    before = set(registry.names())
    own = Registry()
    # A daemon thread, on the daemon's one pattern: whatever the plugin raises is kept as its
    # crash (nothing a plugin raises may stop the daemon), and one that never returns is left
    # behind while the process still exits.
    thread = DaemonThread(f"plugin {source}", lambda: _register_function(load())(own))
    thread.start()
    if not thread.join(timeout_s):
        error = (
            f"TimeoutError: it did not finish importing and registering within {timeout_s:g} s "
            "(it is left running; what it registers later is ignored)"
        )
    elif thread.crash is not None:
        error = thread.crash.replace(module_name, source) if module_name else thread.crash
    else:
        try:
            _label_sources(registry, before, source)  # added to the daemon's registry itself
            _merge(registry, own, source)
        except Exception as exc:  # noqa: BLE001 - a clash or a bad skill skips the plugin
            message = str(exc).replace(module_name, source) if module_name else str(exc)
            error = f"{type(exc).__name__}: {message}"
        else:
            added = [name for name in registry.names() if name not in before]
            log.info("plugin %s added %s", source, ", ".join(added) or "no skills")
            return None
    for name in registry.names():
        if name not in before:
            registry.remove(name)
    return _report(PluginProblem(source, error))


def _readd(registry: Registry, spec: SkillSpec, source: str) -> None:
    """Add ``spec`` to ``registry``, its source replaced by ``source`` unless it named its own.

    A skill's source defaults to its function's module; for a plugin that module name is made up
    here or says nothing about the package, so it is replaced by the file or entry point.
    """
    own = spec.source != getattr(spec.function, "__module__", None)
    options = spec.options if own else dataclasses.replace(spec.options, source=source)
    registry.add(spec.function, options)


def _merge(registry: Registry, own: Registry, source: str) -> None:
    """Add the skills a plugin registered into its own registry, in its order."""
    for spec in own:
        _readd(registry, spec, source)


def _label_sources(registry: Registry, before: set[str], source: str) -> None:
    """Record ``source`` on the new skills that did not name a source of their own: those
    merged from the plugin's registry, and any it added to the process-wide one itself.

    The skills are re-added in the same order, so the registry's order does not change.
    """
    added = [spec for spec in registry if spec.name not in before]
    for spec in added:
        registry.remove(spec.name)
    for spec in added:
        _readd(registry, spec, source)


__all__ = ["DEFAULT_TIMEOUT_S", "ENTRY_POINT_GROUP", "PluginProblem", "load_plugins"]
