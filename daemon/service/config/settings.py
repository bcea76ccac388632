"""The daemon's TOML config, read into checked settings; systemd/config.example.toml documents it.

A bad config stops the daemon before it starts: :class:`ConfigError` names the key and its line.
"""

from __future__ import annotations

import difflib
import re
import tomllib
import types
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from edge_agentd.agent.workflow import Soul, Workflow
from edge_agentd.service.config.mcp import McpSettings
from edge_agentd.service.config.mqtt import MqttSettings
from edge_agentd.service.config.safepaths import UnsafePath, check_safe
from edge_agentd.service.config.strategy import Answers, Strategy, ToolFormat
from edge_agentd.service.config.triggers import TriggerSettings, trigger_lines

SMALL_MODEL_MAX_ITERATIONS = 12
"""The daemon's default iteration budget per run: a small model gets more room to converge than
the framework's ``DEFAULT_MAX_ITERATIONS`` of 8 (docs/design.md, "The loop's contract")."""


class ConfigError(Exception):
    """The config cannot be used; the message names the file, the line and the key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


PositiveSeconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class DaemonSettings(_Section):
    endpoints: list[str] = Field(default_factory=list)
    """Empty means the default ipc socket in the runtime directory."""
    allow_remote: bool = False
    queue_limit: Annotated[int, Field(ge=1, le=10_000)] = 8
    queue_per_client: Annotated[int, Field(ge=1, le=10_000)] = 4
    """Runs one connection may have queued or running at once; one more gets ``busy``."""
    max_connections: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    """Client connections served at once; unset: half the fds the limit leaves free. Past it, a
    connection's requests get ``busy``, and idle ones are closed (docs/protocol.md)."""
    max_request_bytes: Annotated[int, Field(ge=1024, le=64 * 1024 * 1024)] = 64 * 1024
    max_query_chars: Annotated[int, Field(ge=1, le=1_000_000)] = 4000
    max_iterations: Annotated[int, Field(ge=1, le=1000)] = SMALL_MODEL_MAX_ITERATIONS
    max_iterations_cap: Annotated[int, Field(ge=1, le=1000)] = 32
    max_retries: Annotated[int, Field(ge=0, le=100)] = 3
    default_deadline_s: PositiveSeconds | None = None
    shutdown_grace_s: PositiveSeconds = 10.0
    wedged_after_s: PositiveSeconds = 60.0
    """How long a run may go on past its deadline before it counts as wedged (service/wedge.py):
    the daemon then answers it and everything queued, and stops feeding systemd's watchdog."""

    @model_validator(mode="after")
    def _cap_covers_default(self) -> DaemonSettings:
        if self.max_iterations > self.max_iterations_cap:
            raise ValueError("max_iterations is above max_iterations_cap")
        return self


class ModelSettings(_Section):
    path: Annotated[str, Field(min_length=1)] = "default"
    """``default`` (the embedded model), a GGUF path, or ``mock:FILE`` (scripted replies)."""
    n_ctx: Annotated[int, Field(ge=256, le=1_048_576)] = 4096
    warm_up: bool = True
    strategy: Strategy = "auto"
    """How the loop helps the model (docs/design.md, "Small models"): ``guided`` picks skills
    for it and has it answer, ``plain`` lets it drive the loop, ``auto`` guides a model under
    1 GiB."""
    answers: Answers = "engine"
    """Who words a driving (``plain``) model's answer once it has results: ``engine``, a sentence
    rendered from them that fits the question (one turn less where one fits); ``model``, its
    own words, held to the grounding rules (docs/design.md, "One model turn")."""
    tool_format: ToolFormat = "native"
    """How a model that drives the loop is spoken to: ``native``, in its chat template's own
    tool-call format where it has one this project speaks (Qwen2.5's), else JSON actions;
    ``json``, always the seed's JSON actions (docs/design.md, "Tool formats")."""
    load_timeout_s: PositiveSeconds = 900.0
    """How long systemd's start timeout is extended while the model loads; then it applies."""


class SkillsSettings(_Section):
    builtins: bool = True
    directories: list[str] = Field(default_factory=list)
    entry_points: bool = True
    sysfs_root: str | None = None
    weather: bool = False
    timeouts: dict[str, PositiveSeconds] = Field(default_factory=dict)
    plugin_timeout_s: PositiveSeconds = 20.0
    """How long one plugin may take to import and register before it is skipped."""


class SoulSettings(_Section):
    name: Annotated[str, Field(min_length=1)] = Soul().name
    persona: str = Soul().persona


class WorkflowSettings(_Section):
    instructions: str = ""
    skills: list[str] | None = None
    max_iterations: Annotated[int, Field(ge=1, le=1000)] | None = None


class JournalSettings(_Section):
    """The run journal (docs/protocol.md, "The run journal"): every run kept in SQLite."""

    enabled: bool = True
    path: Annotated[str, Field(min_length=1)] | None = None
    """None: ``$STATE_DIRECTORY/journal.sqlite3`` under systemd, else the XDG state directory;
    a daemon on another endpoint than the default gets a file of its own (journal.path)."""
    keep_runs: Annotated[int, Field(ge=1, le=10_000_000)] = 10_000
    keep_days: Annotated[float, Field(gt=0, le=36_500, allow_inf_nan=False)] = 30.0


class Settings(_Section):
    """Everything the daemon reads from its config file."""

    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    soul: SoulSettings = Field(default_factory=SoulSettings)
    mqtt: MqttSettings | None = None
    """The MQTT bridge (docs/mqtt.md); off when the section is absent."""
    mcp: McpSettings | None = None
    """The Model Context Protocol server (docs/mcp.md); off when the section is absent."""
    journal: JournalSettings = Field(default_factory=JournalSettings)
    workflows: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")], WorkflowSettings] = (
        Field(default_factory=dict)
    )
    triggers: list[TriggerSettings] = Field(default_factory=list)
    """``[[triggers]]``: what the daemon runs by itself (docs/design.md, "Triggers")."""

    _source: str = PrivateAttr(default="<config>")
    _lines: dict[tuple[str, ...], int] = PrivateAttr(default_factory=dict)

    def problem(self, location: tuple[str, ...], message: str) -> ConfigError:
        """A ConfigError for a key found wrong after parsing, such as a workflow's unknown skill."""
        line = _locate(self._lines, location)
        where = f"line {line}" if line is not None else "no line"
        return ConfigError(f"{self._source}: {where}: {'.'.join(location)}: {message}")

    def make_soul(self) -> Soul:
        return Soul(name=self.soul.name, persona=self.soul.persona)

    def make_workflows(self) -> dict[str, Workflow]:
        return {
            name: Workflow(
                name=name,
                instructions=w.instructions,
                skills=w.skills,
                max_iterations=w.max_iterations,
            )
            for name, w in self.workflows.items()
        }


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.\-"' ]+?)\s*=""")


def _split_key(text: str) -> list[str]:
    return [
        part.strip().strip("\"'")
        for part in re.split(r"\.(?=(?:[^\"']|\"[^\"]*\"|'[^']*')*$)", text)
    ]


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Where each dotted key and table is defined, so errors can point at a line."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header is not None:
            table = tuple(_split_key(header.group(2)))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key is not None:
            lines.setdefault((*table, *_split_key(key.group(1))), number)
    return lines


def _locate(lines: dict[tuple[str, ...], int], location: tuple[str, ...]) -> int | None:
    for end in range(len(location), 0, -1):
        if location[:end] in lines:
            return lines[location[:end]]
    return None


def _unwrap(annotation: Any) -> Any:
    """``X`` from ``Annotated[X, ...]`` and ``X | None``."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            kinds = [a for a in get_args(annotation) if a is not type(None)]
            if len(kinds) != 1:
                return annotation
            annotation = kinds[0]
        else:
            return annotation


def _known_keys(section: tuple[str, ...]) -> list[str]:
    """The keys the section at ``section`` accepts (``workflows.NAME`` included)."""
    kind: Any = Settings
    for part in section:
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            field = kind.model_fields.get(part)
            if field is None:
                return []
            kind = _unwrap(field.annotation)
        elif get_origin(kind) is dict:
            kind = _unwrap(get_args(kind)[1])
        elif get_origin(kind) is list and part.isdigit():  # [[triggers]]: triggers.0.when
            kind = _unwrap(get_args(kind)[0])
        else:
            return []
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return [field.alias or name for name, field in kind.model_fields.items()]
    return []


def _unknown_key(location: tuple[str, ...]) -> str:
    """The message for an unknown key: its section and the closest known key, if any."""
    key, section = location[-1], location[:-1]
    where = f"in [{'.'.join(section)}]" if section else "at the top level"
    known = _known_keys(section)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        hint = f" (did you mean `{close[0]}`?)"
    elif known:
        hint = f" (known keys: {', '.join(known)})"
    else:
        hint = ""
    return f"unknown key `{key}` {where}{hint}"


def parse_settings(text: str, source: str = "<config>") -> Settings:
    """Read TOML text into :class:`Settings`, or raise :class:`ConfigError`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    lines = key_lines(text) | trigger_lines(text)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        problems = []
        for item in exc.errors(include_url=False, include_input=False):
            location = tuple(str(p) for p in item.get("loc", ()))
            key = ".".join(location) or "(top level)"
            line = _locate(lines, location)
            where = f"line {line}" if line is not None else "no line"
            if item.get("type") == "extra_forbidden" and location:
                problems.append(f"{source}: {where}: {_unknown_key(location)}")
                continue
            problems.append(f"{source}: {where}: {key}: {item.get('msg', 'invalid')}")
        raise ConfigError("\n".join(problems)) from None
    settings._source = source
    settings._lines = lines
    return settings


def load_settings(path: str | Path | None) -> Settings:
    """The settings in ``path``, or the defaults when there is no config file.

    A config that others could change is refused, as a plugin is (the assembly's safepaths): it
    names the code the daemon loads.
    """
    if path is None:
        return Settings()
    try:
        check_safe(path)
        text = Path(path).read_text(encoding="utf-8")
    except UnsafePath as exc:
        raise ConfigError(f"{path}: refused the config: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config: {exc}") from None
    return parse_settings(text, str(path))
