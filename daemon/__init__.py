"""edge-agent: an agent daemon for small Linux computers.

The public names of the framework. Importing this package has no side effects: llama.cpp, ZeroMQ
and the built-in skills are loaded only when asked for, and so is each name below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

# The public names, each where it lives. A type checker reads them as the imports below (`X as X`
# exports X); at run time nothing here is imported: __getattr__ looks a name up in the literal
# table _HOMES and imports its module on its first use (PEP 562), so `edge-agent ask`, `status`
# and `skills`, which need none of them, start without pydantic or the agent. The table is data,
# not read from this file's source, so an install of compiled files alone keeps it.
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


_HOMES: Final[dict[str, str]] = {
    "EVENT_ADAPTER": "edge_agentd.agent.events",
    "STATE_ADAPTER": "edge_agentd.agent.events",
    "Action": "edge_agentd.agent.events",
    "AgentState": "edge_agentd.agent.events",
    "CallSkillAction": "edge_agentd.agent.events",
    "Event": "edge_agentd.agent.events",
    "EventStream": "edge_agentd.agent.events",
    "FinalAnswerAction": "edge_agentd.agent.events",
    "InterruptedObservation": "edge_agentd.agent.events",
    "MaxIterationsObservation": "edge_agentd.agent.events",
    "ModelErrorObservation": "edge_agentd.agent.events",
    "Observation": "edge_agentd.agent.events",
    "SkillResultObservation": "edge_agentd.agent.events",
    "ToolErrorObservation": "edge_agentd.agent.events",
    "Usage": "edge_agentd.agent.events",
    "ValidationErrorObservation": "edge_agentd.agent.events",
    "Grounding": "edge_agentd.agent.grounding",
    "Agent": "edge_agentd.agent.loop",
    "PLAIN": "edge_agentd.agent.prompt",
    "ChatFormat": "edge_agentd.agent.prompt",
    "Registry": "edge_agentd.agent.registry",
    "SkillOptions": "edge_agentd.agent.registry",
    "SkillSpec": "edge_agentd.agent.registry",
    "get_registry": "edge_agentd.agent.registry",
    "skill": "edge_agentd.agent.registry",
    "Result": "edge_agentd.agent.workflow",
    "Soul": "edge_agentd.agent.workflow",
    "Workflow": "edge_agentd.agent.workflow",
    "Completion": "edge_agentd.model",
    "ContextExceeded": "edge_agentd.model",
    "MockModel": "edge_agentd.model",
    "ModelError": "edge_agentd.model",
    "ModelHandle": "edge_agentd.model",
    "load_model": "edge_agentd.model",
}
"""Each public name's module: what ``__getattr__`` imports a name from on its first use. The
imports above say the same to a type checker; tests/package/test_public_names.py holds the two
equal."""


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return sorted(_HOMES)
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
