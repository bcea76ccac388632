"""What a skill is: the options it is registered with, and the spec the model is told of it.

A skill is a plain function. Its name defaults to the function's name, its description to its
docstring, and its argument schema comes from its type hints through pydantic. Its options are
written once, in :class:`SkillOptions`, which ``@skill``, ``@registry.skill`` and
``Registry.add`` all take.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

log = logging.getLogger(__name__)

ReadyCalls = Callable[[], Iterable[tuple[Mapping[str, Any], str]]]
ArgumentChoices = Callable[[], Mapping[str, Iterable[Any]]]
Choices = tuple[tuple[str, tuple[Any, ...]], ...]
"""The values each argument may take now, ``((argument, values), ...)`` in the signature's
order: hashable, so a prompt or a schema rendered with them can be kept while they hold."""

MAX_CHOICES = 64
"""The most values an argument's choices may list: each is a word of the catalogue and a branch
of the grammar."""

DEFAULT_TIMEOUT_S = 2.0


def check_timeout(who: str, timeout: object) -> float | None:
    """A skill's timeout in seconds, or None for no timeout; anything else is a caller's bug,
    told as ``who``'s (``skill 'now'``)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise TypeError(f"{who}: timeout must be a positive number or None")
    return float(timeout)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SkillOptions:
    """How a skill is registered, beside its function; checked when it is made.

    The one list of a skill's options: ``@skill(...)``, ``@registry.skill(...)`` take these as
    keyword arguments, and a registry passes the value whole (a plugin's skills are merged with
    theirs). ``timeout`` is in seconds; ``None`` runs the skill inline with no timeout."""

    name: str | None = None
    """Defaults to the function's name."""
    description: str | None = None
    """Defaults to the function's docstring."""
    timeout: float | None = DEFAULT_TIMEOUT_S
    source: str | None = None
    """Where it came from; defaults to the function's module."""
    examples: Iterable[str] = ()
    """Questions this skill answers, in a user's words: they help a small model pick it."""
    calls: ReadyCalls | None = None
    """For a skill whose useful arguments are known only at run time (one call per sensor
    present), a function that lists those calls: ``(arguments, what that call gets)`` pairs."""
    choices: ArgumentChoices | None = None
    """For an argument whose valid values are known only at run time (the sensors present now),
    a function that gives them: ``{argument: values}``. They are shown in the catalogue, held by
    the grammar where the decoding is ours, and checked before the skill is called, so a model
    cannot ask for a sensor that is not there. Read afresh at each run."""
    says: str | None = None
    """How its result is said, if not as the engine would: a sentence with ``{label}`` (the
    thing, as the engine names it) and ``{value}`` (the value with its unit), such as ``"The
    {label} reads {value} today."``; no digit, quote or backslash (a template that breaks
    this is not used). None: the engine's own ("The <label> is <value>.")."""
    reads_sentences: bool = False
    """Its one required text argument may be a whole question: the skill finds what it reads
    inside it (``resolve_date``). A guided small model then passes the question first, not a
    phrase. It means nothing for a skill without exactly one required string argument."""

    def __post_init__(self) -> None:
        # Plugins call this with whatever they wrote, which types do not reach: say what is wrong.
        name = self.name
        if name is not None and (not isinstance(name, str) or not name.isidentifier()):
            raise TypeError(f"skill name must be an identifier, got {name!r}")
        # Options made before their function is known have no name to tell yet.
        who = f"skill {name!r}" if name is not None else "a skill's options"
        for field in ("description", "source", "says"):
            value = getattr(self, field)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{who}: {field} must be a str, not {value!r}")
        object.__setattr__(self, "timeout", check_timeout(who, self.timeout))
        examples = self.examples
        if isinstance(examples, str) or not all(isinstance(e, str) for e in examples):
            raise TypeError(f"{who}: examples must be a list of questions")
        # Kept as the tuple of questions, whitespace made single, so the value stays frozen.
        normalised = tuple(" ".join(e.split()) for e in examples if e.strip())
        object.__setattr__(self, "examples", normalised)
        if not isinstance(self.reads_sentences, bool):
            raise TypeError(f"{who}: reads_sentences must be True or False")
        if self.calls is not None and not callable(self.calls):
            raise TypeError(f"{who}: calls must be a function that lists calls")
        if self.choices is not None and not callable(self.choices):
            raise TypeError(f"{who}: choices must be a function that gives each argument's values")


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
    source: str
    parameters_schema: dict[str, Any]
    """The JSON schema of the arguments, computed once at registration."""
    options: SkillOptions = SkillOptions()
    """What it was registered with (its examples and calls are read from here)."""

    @property
    def timeout_s(self) -> float | None:
        """Seconds it may run, or None: inline, with no timeout."""
        return self.options.timeout

    @property
    def examples(self) -> tuple[str, ...]:
        return tuple(self.options.examples)

    @property
    def calls(self) -> ReadyCalls | None:
        return self.options.calls

    @property
    def reads_sentences(self) -> bool:
        return self.options.reads_sentences

    def current_choices(self) -> Choices:
        """The values each argument may take now, as ``choices`` gives them: only arguments the
        skill has, only JSON scalars that fit the argument, at most :data:`MAX_CHOICES` each. A
        function that fails, or gives an argument no value, restricts nothing (logged): the
        skill still works and says for itself what is wrong."""
        if self.options.choices is None:
            return ()
        try:
            given = {str(k): list(v) for k, v in self.options.choices().items()}
        except Exception as exc:  # noqa: BLE001 - a plugin's list must not stop a run
            log.warning("skill %s: listing its arguments' choices failed: %r", self.name, exc)
            return ()
        found: list[tuple[str, tuple[Any, ...]]] = []
        for argument in self.parameters_schema.get("properties", {}):
            values: dict[Any, None] = {}
            for value in given.pop(argument, ()):
                if len(values) >= MAX_CHOICES:
                    break
                if _fits(self.arguments_model, argument, value):
                    values.setdefault(value, None)
            if values:
                found.append((argument, tuple(values)))
        if given:
            log.warning("skill %s: choices for no argument of it: %s", self.name, sorted(given))
        return tuple(found)

    def schema_with(self, choices: Choices) -> dict[str, Any]:
        """The arguments' JSON schema with each argument of ``choices`` held to its values (and
        to null where the argument may be null)."""
        if not choices:
            return self.parameters_schema
        properties = dict(self.parameters_schema.get("properties", {}))
        for argument, values in choices:
            prop = properties.get(argument)
            if not isinstance(prop, dict):
                continue
            nullable = any(
                isinstance(option, dict) and option.get("type") == "null"
                for option in prop.get("anyOf", ())
            )
            held: dict[str, Any] = {"enum": [*values, None] if nullable else list(values)}
            if "default" in prop:
                held["default"] = prop["default"]
            properties[argument] = held
        return {**self.parameters_schema, "properties": properties}

    def signature_with(self, choices: Choices) -> str:
        """:attr:`signature`, each argument of ``choices`` shown with its values."""
        return self.signature if not choices else _signature(self.name, self.schema_with(choices))

    def unchosen(self, arguments: Mapping[str, Any], choices: Choices) -> str | None:
        """What of ``arguments`` is none of ``choices`` (the feedback a model sees: the values
        it may use), or None."""
        for argument, values in choices:
            value = arguments.get(argument)
            if value is not None and value not in values:
                shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
                given = json.dumps(value, ensure_ascii=False)[:80]
                return f"{self.name}: {argument} must be one of {shown}; {given} is none of them"
        return None

    @functools.cached_property
    def signature(self) -> str:
        """``read_sensor(name: string)``: the compact form a small model reads best, worked out
        on first use and kept (every new Agent renders its catalogue from it)."""
        return _signature(self.name, self.parameters_schema)

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

    def gets(self, arguments: Mapping[str, Any]) -> list[str]:
        """What the calls this skill lists as ready get, of those a call with ``arguments`` is:
        each it gave, the same ("the temperature of the 1-Wire probe DS18B20" of a call with
        that probe's name); with none, only a ready call with none (a whole listing is not each
        filtered one). The skill's own words for the thing the call's result is of."""
        return [
            what
            for given, what in self.ready_calls()
            if what
            and (bool(arguments) or not given)
            and all(given.get(name) == value for name, value in arguments.items())
        ]

    def validate_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check the model's arguments against the schema; raises pydantic's ValidationError."""
        return dict(self.arguments_model.model_validate(arguments).__dict__)


def _signature(name: str, schema: dict[str, Any]) -> str:
    required = set(schema.get("required", ()))
    params = []
    for argument, prop in schema.get("properties", {}).items():
        text = f"{argument}: {_type_text(prop)}"
        if argument not in required:
            text += f" = {json.dumps(prop.get('default'), ensure_ascii=False)}"
        params.append(text)
    return f"{name}({', '.join(params)})"


def _fits(model: type[BaseModel], argument: str, value: Any) -> bool:
    """Whether ``value`` is a JSON scalar the argument takes as it is."""
    if value is not None and not isinstance(value, str | int | float | bool):
        return False
    if isinstance(value, float) and math.isnan(value):  # NaN is no value to choose
        return False
    field = model.model_fields.get(argument)
    if field is None:
        return False
    try:
        checked = model.__pydantic_validator__.validate_assignment(
            model.model_construct(), argument, value
        )
    except ValidationError:
        return False
    kept = getattr(checked, argument, value)
    # Taken as it is, not coerced: a True is no count, and 1.0 or "1" no integer.
    return type(kept) is type(value) and kept == value


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


def spec_of(function: Callable[..., Any], options: SkillOptions) -> SkillSpec:
    """The spec of ``function`` registered with ``options``: what the model is told of it."""
    if not callable(function):
        raise TypeError(f"a skill must be a function, not {type(function).__name__}")
    name = options.name if options.name is not None else getattr(function, "__name__", "")
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"skill name must be an identifier, got {name!r}")
    doc = options.description if options.description is not None else inspect.getdoc(function)
    arguments_model = _arguments_model(name, function)
    return SkillSpec(
        name=name,
        description=" ".join((doc or "").split()),
        function=function,
        arguments_model=arguments_model,
        source=options.source or getattr(function, "__module__", None) or "unknown",
        parameters_schema=_parameters_schema(arguments_model),
        options=options,
    )


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_CHOICES",
    "ArgumentChoices",
    "Choices",
    "ReadyCalls",
    "SkillOptions",
    "SkillSpec",
    "check_timeout",
    "spec_of",
]
