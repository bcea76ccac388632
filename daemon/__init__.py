"""edge-agent: an agent daemon for small Linux computers.

The public names of the framework. Importing this package has no side effects: llama.cpp, ZeroMQ
and the built-in skills are loaded only when asked for, and so is each name below.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The public names, each where it lives: the one table. A type checker reads it as imports
# (`X as X` exports X); at run time nothing here is imported: __getattr__ reads the table from
# this file's source and imports a name's module on its first use (PEP 562), so `edge-agent ask`,
# `status` and `skills`, which need none of them, start without pydantic or the agent.
if TYPE_CHECKING:
    from edge_agentd.agent.events import EVENT_ADAPTER as EVENT_ADAPTER
    from edge_agentd.agent.events import STATE_ADAPTER as STATE_ADAPTER
    from edge_agentd.agent.events import Action as Action
    from edge_agentd.agent.events import AgentState as AgentState
    from edge_agentd.agent.events import CallSkillAction as CallSkillAction
    from edge_agentd.agent.events import Event as Event
    from edge_agentd.agent.events import EventStream as EventStream
    from edge_agentd.agent.events import FinalAnswerAction as FinalAnswerAction
    from edge_agentd.agent.events import InterruptedObservation as InterruptedObservation
    from edge_agentd.agent.events import MaxIterationsObservation as MaxIterationsObservation
    from edge_agentd.agent.events import ModelErrorObservation as ModelErrorObservation
    from edge_agentd.agent.events import Observation as Observation
    from edge_agentd.agent.events import SkillResultObservation as SkillResultObservation
    from edge_agentd.agent.events import ToolErrorObservation as ToolErrorObservation
    from edge_agentd.agent.events import Usage as Usage
    from edge_agentd.agent.events import ValidationErrorObservation as ValidationErrorObservation
    from edge_agentd.agent.grounding import Grounding as Grounding
    from edge_agentd.agent.loop import Agent as Agent
    from edge_agentd.agent.prompt import PLAIN as PLAIN
    from edge_agentd.agent.prompt import ChatFormat as ChatFormat
    from edge_agentd.agent.registry import Registry as Registry
    from edge_agentd.agent.registry import SkillOptions as SkillOptions
    from edge_agentd.agent.registry import SkillSpec as SkillSpec
    from edge_agentd.agent.registry import get_registry as get_registry
    from edge_agentd.agent.registry import skill as skill
    from edge_agentd.agent.workflow import Result as Result
    from edge_agentd.agent.workflow import Soul as Soul
    from edge_agentd.agent.workflow import Workflow as Workflow
    from edge_agentd.model import Completion as Completion
    from edge_agentd.model import ContextExceeded as ContextExceeded
    from edge_agentd.model import MockModel as MockModel
    from edge_agentd.model import ModelError as ModelError
    from edge_agentd.model import ModelHandle as ModelHandle
    from edge_agentd.model import load_model as load_model


_homes: dict[str, str] = {}
"""Each public name's module, read from the table above on first use."""


def _home_of() -> dict[str, str]:
    if not _homes:
        import ast  # noqa: PLC0415 - parsed only when a public name is first asked for

        for node in ast.parse(Path(__file__).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                _homes.update(
                    (alias.name, statement.module)
                    for statement in node.body
                    if isinstance(statement, ast.ImportFrom) and statement.module is not None
                    for alias in statement.names
                )
    return _homes


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return sorted(_home_of())
    home = _home_of().get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_home_of()})
