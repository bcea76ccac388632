"""Skills and the registry that holds them.

A skill is a plain function. Its name defaults to the function's name, its description to its
docstring, and its argument schema comes from its type hints through pydantic.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
ReadyCalls = Callable[[], Iterable[tuple[Mapping[str, Any], str]]]

DEFAULT_TIMEOUT_S = 2.0


class SkillNameClash(ValueError):
    """A second skill tried to register under a name that is taken."""


def _type_text(schema: dict[str, Any]) -> str:
    if "type" in schema and isinstance(schema["type"], str):
        kind = schema["type"]
        if kind == "array" and isinstance(schema.get("items"), dict):
            return f"list of {_type_text(schema['items'])}"
        if kind != "object" or "properties" not in schema:
            return "integer" if kind == "integer" else kind
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema and isinstance(schema["anyOf"], list):
        return " | ".join(_type_text(s) for s in schema["anyOf"] if isinstance(s, dict))
    return json.dumps(schema, separators=(",", ":"), sort_keys=True)


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
    examples: tuple[str, ...] = ()
    """Questions this skill answers, in a user's words: they help a small model pick it."""
    calls: ReadyCalls | None = None
    """For a skill whose useful arguments are known only at run time (one call per sensor
    present), a function that lists those calls: ``(arguments, what that call gets)`` pairs."""
    reads_sentences: bool = False
    """Its one required text argument may be a whole question: the skill finds what it reads
    inside it (``resolve_date``). A guided small model then passes the question first, not a
    phrase. It means nothing for a skill without exactly one required string argument."""

    @functools.cached_property
    def signature(self) -> str:
        """``read_sensor(name: string)``: the compact form a small model reads best, worked out
        on first use and kept (every new Agent renders its catalogue from it)."""
        schema = self.parameters_schema
        required = set(schema.get("required", ()))
        params = []
        for name, prop in schema.get("properties", {}).items():
            text = f"{name}: {_type_text(prop)}"
            if name not in required:
                text += f" = {json.dumps(prop.get('default'), ensure_ascii=False)}"
            params.append(text)
        return f"{self.name}({', '.join(params)})"

    def ready_calls(self) -> list[tuple[dict[str, Any], str]]:
        """The calls ``calls`` lists now, each with valid arguments. A list that fails, or a
        call whose arguments do not fit the skill, is left out (logged); the skill still works."""
        if self.calls is None:
            return []
        try:
            listed = [(dict(arguments), str(what)) for arguments, what in self.calls()]
        except Exception as exc:  # noqa: BLE001 - a plugin's list must not stop a run
            log.warning("skill %s: listing its calls failed: %r", self.name, exc)
            return []
        ready = []
        for arguments, what in listed:
            try:
                self.validate_arguments(arguments)
            except ValidationError as exc:
                log.warning("skill %s: listed call %r does not fit: %s", self.name, arguments, exc)
                continue
            ready.append((arguments, what))
        return ready

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
    """The skills an agent may call, by name. It runs no thread: the threads runs execute on, and
    the skill calls that hung, are :class:`~edge_agentd.agent.supervision.RunThreads`'."""

    def __init__(self) -> None:
        self._skills: dict[str, SkillSpec] = {}
        self._version = 0
        self._lock = threading.Lock()
        self._schemas: dict[frozenset[str] | None, dict[str, Any]] = {}
        self._schemas_version = 0

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
        examples: Iterable[str] = (),
        calls: ReadyCalls | None = None,
        reads_sentences: bool = False,
    ) -> Callable[[F], F]: ...

    def skill(
        self,
        function: F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        source: str | None = None,
        examples: Iterable[str] = (),
        calls: ReadyCalls | None = None,
        reads_sentences: bool = False,
    ) -> F | Callable[[F], F]:
        """Register a function as a skill; usable as ``@registry.skill`` or with options.

        ``timeout`` is in seconds; ``None`` runs the skill inline with no timeout. ``examples``
        are questions the skill answers; ``calls`` lists the calls worth making now, and
        ``reads_sentences`` says its text argument may be a whole question (see
        :class:`SkillSpec`).
        """

        def register(fn: F) -> F:
            self.add(
                fn,
                name=name,
                description=description,
                timeout=timeout,
                source=source,
                examples=examples,
                calls=calls,
                reads_sentences=reads_sentences,
            )
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
        examples: Iterable[str] = (),
        calls: ReadyCalls | None = None,
        reads_sentences: bool = False,
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
        if isinstance(examples, str) or not all(isinstance(e, str) for e in examples):
            raise TypeError(f"skill {skill_name!r}: examples must be a list of questions")
        arguments_model = _arguments_model(skill_name, function)
        if not isinstance(reads_sentences, bool):
            raise TypeError(f"skill {skill_name!r}: reads_sentences must be True or False")
        if calls is not None and not callable(calls):
            raise TypeError(f"skill {skill_name!r}: calls must be a function that lists calls")
        spec = SkillSpec(
            name=skill_name,
            description=" ".join(doc.split()),
            function=function,
            arguments_model=arguments_model,
            timeout_s=None if timeout is None else float(timeout),
            source=source or getattr(function, "__module__", None) or "unknown",
            parameters_schema=_parameters_schema(arguments_model),
            examples=tuple(" ".join(e.split()) for e in examples if e.strip()),
            calls=calls,
            reads_sentences=reads_sentences,
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

    def set_timeout(self, name: str, timeout: float | None) -> SkillSpec:
        """Give the registered skill ``name`` another timeout, keeping its place in the order
        (the daemon's ``[skills.timeouts]``, applied once every skill is registered)."""
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise TypeError(f"skill {name!r}: timeout must be a positive number or None")
        with self._lock:
            spec = self._skills.get(name)
            if spec is None:
                raise KeyError(name)
            seconds = None if timeout is None else float(timeout)
            self._skills[name] = dataclasses.replace(spec, timeout_s=seconds)
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

    def action_schema(self, allowed: frozenset[str] | None = None) -> dict[str, Any]:
        """The JSON schema of one action: a branch per skill, plus ``final_answer``.

        Cached per registry version and skill subset; callers must not mutate the result.
        """
        if self._schemas_version != self._version or len(self._schemas) > 64:
            self._schemas = {}
            self._schemas_version = self._version
        schema = self._schemas.get(allowed)
        if schema is None:
            schema = self._schemas[allowed] = self._build_action_schema(allowed)
        return schema

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
        """Run a skill with validated arguments, in the calling thread; raises what it raised.

        The agent enforces ``spec.timeout_s`` (see :mod:`edge_agentd.agent.supervision`).
        """
        return spec.function(**arguments)


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
