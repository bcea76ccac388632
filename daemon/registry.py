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
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_TIMEOUT_S = 2.0


class SkillNameClash(ValueError):
    """A second skill tried to register under a name that is taken."""


class SkillTimeout(Exception):
    """A skill ran past its timeout."""


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

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return _parameters_schema(self.arguments_model)

    def validate_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check the model's arguments against the schema; raises pydantic's ValidationError."""
        model = self.arguments_model.model_validate(arguments)
        return {name: getattr(model, name) for name in type(model).model_fields}


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
        if param.annotation is inspect.Parameter.empty:
            raise TypeError(f"skill {name!r}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (param.annotation, default)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    return create_model(f"{name}_arguments", __config__=config, **fields)


class _Worker:
    """One thread that runs skill calls, so a hung skill can be abandoned instead of waited on."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="edge-agent-skill", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while (job := self.jobs.get()) is not None:
            job.execute()


class _Job:
    __slots__ = ("done", "error", "function", "kwargs", "result")

    def __init__(self, function: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self.function = function
        self.kwargs = kwargs
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def execute(self) -> None:
        try:
            self.result = self.function(**self.kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which reports it
            self.error = exc
        finally:
            self.done.set()


class Registry:
    """The skills an agent may call, by name."""

    def __init__(self) -> None:
        self._skills: dict[str, SkillSpec] = {}
        self._version = 0
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._hung: dict[str, _Job] = {}
        self._schema_cache: dict[tuple[int, frozenset[str] | None], dict[str, Any]] = {}

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
        spec = SkillSpec(
            name=skill_name,
            description=" ".join(doc.split()),
            function=function,
            arguments_model=_arguments_model(skill_name, function),
            timeout_s=None if timeout is None else float(timeout),
            source=source or getattr(function, "__module__", None) or "unknown",
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

    def action_schema(self, allowed: frozenset[str] | None = None) -> dict[str, Any]:
        """The JSON schema of one action: a branch per skill, plus ``final_answer``.

        Cached per registry version and skill subset; callers must not mutate the result.
        """
        key = (self._version, allowed)
        cached = self._schema_cache.get(key)
        if cached is not None:
            return cached
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
        schema = {"oneOf": branches}
        self._schema_cache = {key: schema}
        return schema

    # -- dispatch -----------------------------------------------------------------------------

    def call(self, spec: SkillSpec, arguments: dict[str, Any]) -> Any:
        """Run a skill with validated arguments, within its timeout.

        Raises whatever the skill raised, :class:`SkillTimeout` when it overran, or
        :class:`SkillStillRunning` when an earlier call of it is still hung.
        """
        if spec.timeout_s is None:
            return spec.function(**arguments)
        with self._lock:
            hung = self._hung.get(spec.name)
            if hung is not None:
                if not hung.done.is_set():
                    raise SkillStillRunning(
                        f"skill {spec.name!r} is still running from an earlier call that hung"
                    )
                del self._hung[spec.name]
            worker = self._worker
            if worker is None:
                worker = self._worker = _Worker()
        job = _Job(spec.function, arguments)
        worker.jobs.put(job)
        if not job.done.wait(spec.timeout_s):
            with self._lock:
                # The worker is stuck inside the skill: leave it to finish on its own and give
                # later calls a fresh thread.
                self._hung[spec.name] = job
                if self._worker is worker:
                    self._worker = None
            worker.jobs.put(None)
            log.warning("skill %s ran past its %.1f s timeout", spec.name, spec.timeout_s)
            raise SkillTimeout(f"skill {spec.name!r} ran past its {spec.timeout_s:g} s timeout")
        if job.error is not None:
            raise job.error
        return job.result

    def close(self) -> None:
        """Stop the worker thread; a later call starts a new one."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.jobs.put(None)


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


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


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
