"""The registry: the skills an agent may call, by name, and the decorator that registers them.

What a skill is, and the options it is registered with, are :mod:`edge_agentd.agent.skillspec`'s.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, ParamSpec, TypeVar, overload

from edge_agentd.agent.skillspec import (
    DEFAULT_TIMEOUT_S,
    Choices,
    SkillOptions,
    SkillSpec,
    check_timeout,
    spec_of,
)

F = TypeVar("F", bound=Callable[..., Any])
RunChoices = tuple[tuple[str, Choices], ...]
"""Each skill's arguments' choices at one moment, ``((skill name, choices), ...)``."""
Options = ParamSpec("Options")


class SkillNameClash(ValueError):
    """A second skill tried to register under a name that is taken."""


class SkillDecorator(Generic[Options]):
    """``@skill`` and ``@skill(name=..., examples=...)``: registers a function with ``add``.

    Its keyword arguments are those of ``build`` (:class:`SkillOptions`), so the options are
    written once and a type checker still checks each; ``Options`` carries their signature."""

    def __init__(
        self,
        build: Callable[Options, SkillOptions],
        add: Callable[[Callable[..., Any], SkillOptions], object],
    ) -> None:
        self._build: Callable[..., SkillOptions] = build
        self._add = add

    @overload
    def __call__(self, function: F, /) -> F: ...

    @overload
    def __call__(self, *args: Options.args, **options: Options.kwargs) -> Callable[[F], F]: ...

    def __call__(self, *args: Any, **options: Any) -> Any:
        if args:
            if len(args) > 1 or options:
                raise TypeError("@skill takes a function, or only keyword options")
            self._add(args[0], self._build())
            return args[0]
        chosen = self._build(**options)

        def register(function: F) -> F:
            self._add(function, chosen)
            return function

        return register


class Registry:
    """The skills an agent may call, by name. It runs no thread: the threads runs execute on, and
    the skill calls that hung, are :class:`~edge_agentd.agent.supervision.RunThreads`'."""

    def __init__(self) -> None:
        self._skills: dict[str, SkillSpec] = {}
        self._version = 0
        self._lock = threading.Lock()
        self._schemas: dict[tuple[frozenset[str] | None, RunChoices], dict[str, Any]] = {}
        self._schemas_version = 0
        self.skill = SkillDecorator(SkillOptions, self.add)
        """Register a function as a skill: ``@registry.skill``, or with :class:`SkillOptions`'
        keyword arguments (``@registry.skill(timeout=None, examples=[...])``)."""

    # -- registration -------------------------------------------------------------------------

    def add(self, function: Callable[..., Any], options: SkillOptions | None = None) -> SkillSpec:
        """Register ``function`` with ``options`` (by default, none); raises TypeError for a
        function that cannot be a skill and :class:`SkillNameClash` for a name that is taken."""
        spec = spec_of(function, SkillOptions() if options is None else options)
        with self._lock:
            if spec.name in self._skills:
                existing = self._skills[spec.name]
                raise SkillNameClash(
                    f"skill {spec.name!r} from {spec.source} clashes with the one from "
                    f"{existing.source}"
                )
            self._skills[spec.name] = spec
            self._version += 1
        return spec

    def set_timeout(self, name: str, timeout: float | None) -> SkillSpec:
        """Give the registered skill ``name`` another timeout, keeping its place in the order
        (the daemon's ``[skills.timeouts]``, applied once every skill is registered)."""
        seconds = check_timeout(f"skill {name!r}", timeout)
        with self._lock:
            spec = self._skills.get(name)
            if spec is None:
                raise KeyError(name)
            options = dataclasses.replace(spec.options, timeout=seconds)
            self._skills[name] = dataclasses.replace(spec, options=options)
            self._version += 1
            return self._skills[name]

    def remove(self, name: str) -> None:
        with self._lock:
            if self._skills.pop(name, None) is not None:
                self._version += 1

    # -- lookup -------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Bumped on every change, so caches keyed on it stay correct."""
        return self._version

    def get(self, name: str) -> SkillSpec | None:
        return self._skills.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __iter__(self) -> Iterator[SkillSpec]:
        return iter(list(self._skills.values()))

    def __len__(self) -> int:
        return len(self._skills)

    def names(self) -> list[str]:
        return list(self._skills)

    def select(self, allowed: Iterable[str] | None) -> list[SkillSpec]:
        """The skills in registration order, limited to ``allowed`` when it is given."""
        if allowed is None:
            return list(self._skills.values())
        wanted = set(allowed)
        return [spec for spec in self._skills.values() if spec.name in wanted]

    def choices(self, allowed: Iterable[str] | None = None) -> RunChoices:
        """What each skill (of ``allowed``) that lists its arguments' choices gives now
        (:meth:`SkillSpec.current_choices`): read once a run, so its prompt and its grammar show
        the device as it was when the run began."""
        found = []
        for spec in self.select(allowed):
            if spec.options.choices is not None:
                listed = spec.current_choices()
                if listed:
                    found.append((spec.name, listed))
        return tuple(found)

    def action_schema(
        self, allowed: frozenset[str] | None = None, choices: RunChoices = ()
    ) -> dict[str, Any]:
        """The JSON schema of one action: a branch per skill, plus ``final_answer``; each
        argument of ``choices`` held to its values.

        Cached per registry version, skill subset and choices; callers must not mutate it.
        """
        if self._schemas_version != self._version or len(self._schemas) > 64:
            self._schemas = {}
            self._schemas_version = self._version
        key = (allowed, choices)
        schema = self._schemas.get(key)
        if schema is None:
            schema = self._schemas[key] = self._build_action_schema(allowed, dict(choices))
        return schema

    def _build_action_schema(
        self, allowed: frozenset[str] | None, choices: dict[str, Choices]
    ) -> dict[str, Any]:
        return action_schema_of(self.select(allowed), choices)

    # -- dispatch -----------------------------------------------------------------------------

    def call(self, spec: SkillSpec, arguments: dict[str, Any]) -> Any:
        """Run a skill with validated arguments, in the calling thread; raises what it raised.

        The agent enforces ``spec.timeout_s`` (see :mod:`edge_agentd.agent.supervision`).
        """
        return spec.function(**arguments)


ANSWER_BRANCH: dict[str, Any] = {
    "type": "object",
    "properties": {"final_answer": {"type": "string", "minLength": 1}},
    "required": ["final_answer"],
    "additionalProperties": False,
}
"""The schema of a ``final_answer`` action, as the action schema's last branch has it."""


def action_schema_of(
    skills: Iterable[SkillSpec],
    choices: Mapping[str, Choices],
    answer: dict[str, Any] | None = ANSWER_BRANCH,
) -> dict[str, Any]:
    """The JSON schema of one action among ``skills`` (each argument of ``choices`` held to its
    values), and ``answer`` (a final answer's branch; None: calls only)."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "skill_name": {"const": spec.name},
                "arguments": spec.schema_with(choices.get(spec.name, ())),
            },
            "required": ["skill_name", "arguments"],
            "additionalProperties": False,
        }
        for spec in skills
    ]
    if answer is not None:
        branches.append(answer)
    return {"oneOf": branches}


_default_registry: Registry | None = None
_default_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry that ``@skill`` registers into."""
    global _default_registry  # noqa: PLW0603 - the one process-wide registry the design asks for
    if _default_registry is None:
        with _default_lock:
            if _default_registry is None:
                _default_registry = Registry()
    return _default_registry


def _add_to_process_registry(function: Callable[..., Any], options: SkillOptions) -> SkillSpec:
    return get_registry().add(function, options)


skill = SkillDecorator(SkillOptions, _add_to_process_registry)
"""``@skill``: :meth:`Registry.skill` for the process-wide registry (:func:`get_registry`)."""


__all__ = [
    "ANSWER_BRANCH",
    "DEFAULT_TIMEOUT_S",
    "Registry",
    "RunChoices",
    "SkillDecorator",
    "SkillNameClash",
    "SkillOptions",
    "SkillSpec",
    "action_schema_of",
    "get_registry",
    "skill",
]
