"""Skills and the registry that holds them.

A skill is a plain function. Its name defaults to the function's name, its description to its
docstring, and its argument schema comes from its type hints through pydantic.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import math
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from edge_agent.agent.threads import WorkerPool

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

DEFAULT_TIMEOUT_S = 2.0


class SkillNameClash(ValueError):
    """A second skill tried to register under a name that is taken."""


class SkillStillRunning(Exception):
    """A skill's previous call hung and has not returned yet, so it is not started again."""


@dataclasses.dataclass(frozen=True, eq=False)
class SkillSpec:
    """A registered skill: the function and what the model is told about it."""

    name: str
    description: str
    function: Callable[..., Any]
    arguments_model: type[BaseModel]
    timeout_s: float | None
    source: str
    parameters_schema: dict[str, Any]
    """The JSON schema of the arguments, computed once at registration."""

    def validate_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check the model's arguments against the schema; raises pydantic's ValidationError."""
        return dict(self.arguments_model.model_validate(arguments).__dict__)


def _parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def _arguments_model(name: str, function: Callable[..., Any]) -> type[BaseModel]:
    try:
        signature = inspect.signature(function, eval_str=True)
    except (NameError, TypeError, ValueError) as exc:
        raise TypeError(f"skill {name!r}: cannot read its signature: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"skill {name!r}: parameter {param.name!r} must be a named argument")
        if param.name.startswith("_"):
            raise TypeError(
                f"skill {name!r}: parameter {param.name!r} starts with '_', which the model "
                "could never set; bind it with a closure or functools.partial instead"
            )
        if param.annotation is inspect.Parameter.empty:
            raise TypeError(f"skill {name!r}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (param.annotation, default)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    return create_model(f"{name}_arguments", __config__=config, **fields)


class Registry:
    """The skills an agent may call, by name."""

    def __init__(self) -> None:
        self._skills: dict[str, SkillSpec] = {}
        self._version = 0
        self._lock = threading.Lock()
        self._hung: dict[str, threading.Thread] = {}
        self.workers = WorkerPool()
        self._memo: dict[Hashable, Any] = {}
        self._memo_version = 0

    # -- registration -------------------------------------------------------------------------

    @overload
    def skill(self, function: F, /) -> F: ...

    @overload
    def skill(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        source: str | None = None,
    ) -> Callable[[F], F]: ...

    def skill(
        self,
        function: F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        source: str | None = None,
    ) -> F | Callable[[F], F]:
        """Register a function as a skill; usable as ``@registry.skill`` or with options.

        ``timeout`` is in seconds; ``None`` runs the skill inline with no timeout.
        """

        def register(fn: F) -> F:
            self.add(fn, name=name, description=description, timeout=timeout, source=source)
            return fn

        return register(function) if function is not None else register

    def add(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        source: str | None = None,
    ) -> SkillSpec:
        if not callable(function):
            raise TypeError(f"a skill must be a function, not {type(function).__name__}")
        skill_name = name if name is not None else getattr(function, "__name__", "")
        if not isinstance(skill_name, str) or not skill_name.isidentifier():
            raise TypeError(f"skill name must be an identifier, got {skill_name!r}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise TypeError(f"skill {skill_name!r}: timeout must be a positive number or None")
        doc = description if description is not None else inspect.getdoc(function) or ""
        arguments_model = _arguments_model(skill_name, function)
        spec = SkillSpec(
            name=skill_name,
            description=" ".join(doc.split()),
            function=function,
            arguments_model=arguments_model,
            timeout_s=None if timeout is None else float(timeout),
            source=source or getattr(function, "__module__", None) or "unknown",
            parameters_schema=_parameters_schema(arguments_model),
        )
        with self._lock:
            if skill_name in self._skills:
                existing = self._skills[skill_name]
                raise SkillNameClash(
                    f"skill {skill_name!r} from {spec.source} clashes with the one from "
                    f"{existing.source}"
                )
            self._skills[skill_name] = spec
            self._version += 1
        return spec

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

    def memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()``, computed once per registry version and key: for text and schemas derived
        from the skills, which every step needs and which change only when the skills do."""
        if self._memo_version != self._version or len(self._memo) > 256:
            self._memo = {}
            self._memo_version = self._version
        try:
            return self._memo[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._memo[key] = build()
            return value

    def action_schema(self, allowed: frozenset[str] | None = None) -> dict[str, Any]:
        """The JSON schema of one action: a branch per skill, plus ``final_answer``.

        Cached per registry version and skill subset; callers must not mutate the result.
        """
        return self.memo(("action_schema", allowed), lambda: self._build_action_schema(allowed))

    def _build_action_schema(self, allowed: frozenset[str] | None) -> dict[str, Any]:
        branches: list[dict[str, Any]] = []
        for spec in self.select(allowed):
            branches.append(
                {
                    "type": "object",
                    "properties": {
                        "skill_name": {"const": spec.name},
                        "arguments": spec.parameters_schema,
                    },
                    "required": ["skill_name", "arguments"],
                    "additionalProperties": False,
                }
            )
        branches.append(
            {
                "type": "object",
                "properties": {"final_answer": {"type": "string", "minLength": 1}},
                "required": ["final_answer"],
                "additionalProperties": False,
            }
        )
        return {"oneOf": branches}

    # -- dispatch -----------------------------------------------------------------------------

    def call(self, spec: SkillSpec, arguments: dict[str, Any]) -> Any:
        """Run a skill with validated arguments, in the calling thread.

        The agent enforces ``spec.timeout_s``: its run carries on in a fresh thread when a skill
        overruns. Raises what the skill raised, or :class:`SkillStillRunning` while an earlier call
        of the skill is still stuck.
        """
        stuck = self._hung.get(spec.name)
        if stuck is not None:
            if stuck.is_alive():
                raise SkillStillRunning(
                    f"skill {spec.name!r} is still running from an earlier call that hung"
                )
            self._hung.pop(spec.name, None)
        return spec.function(**arguments)

    def mark_hung(self, name: str, thread: threading.Thread) -> None:
        """Record that ``thread`` is stuck inside skill ``name``; it is not started again until
        that thread has finished."""
        self._hung[name] = thread
        log.warning("skill %s ran past its timeout; its thread is abandoned", name)

    def close(self) -> None:
        """Stop the idle run threads; later runs start new ones."""
        self.workers.close()


def format_validation_error(skill_name: str, error: ValidationError) -> str:
    """Name each bad field and what was expected, in words a small model can act on."""
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item.get("loc", ())) or "arguments"
        kind = item.get("type", "")
        if kind == "missing":
            parts.append(f"missing required argument {where!r}")
        elif kind == "extra_forbidden":
            parts.append(f"unexpected argument {where!r}")
        else:
            parts.append(f"argument {where!r}: {item.get('msg', 'invalid')}")
    return f"Bad arguments for skill {skill_name!r}: " + "; ".join(parts) + "."


def to_jsonable(value: Any, _depth: int = 0) -> Any:
    """Make a skill's return value JSON-safe: models and dataclasses are dumped, the rest is str."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if _depth > 32:
        return str(value)
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"), _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), _depth + 1)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v, _depth + 1) for v in value]
    return str(value)


_COMPACT_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), default=str)


def compact_json(value: Any) -> str:
    """One-line JSON as the model reads it: non-ASCII kept, anything odd as its str."""
    return _COMPACT_ENCODER.encode(value)


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


@overload
def skill(function: F, /) -> F: ...


@overload
def skill(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    source: str | None = None,
) -> Callable[[F], F]: ...


def skill(
    function: F | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    source: str | None = None,
) -> F | Callable[[F], F]:
    """Register a function into the process-wide registry."""
    decorate = get_registry().skill(
        name=name, description=description, timeout=timeout, source=source
    )
    return decorate(function) if function is not None else decorate
