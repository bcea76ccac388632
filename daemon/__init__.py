"""edge-agent: an agent daemon for small Linux computers.

The public names of the framework. Importing this package has no side effects: llama.cpp, ZeroMQ
and the built-in skills are loaded only when asked for, and so is each name below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For type checkers: `X as X` exports X.
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
    from edge_agentd.agent.loop import Agent as Agent
    from edge_agentd.agent.prompt import PLAIN as PLAIN
    from edge_agentd.agent.prompt import ChatFormat as ChatFormat
    from edge_agentd.agent.registry import Registry as Registry
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

# Where each public name lives: it is imported on first use (PEP 562), so `edge-agent ask`,
# `status` and `skills`, which need none of them, start without pydantic or the agent. The
# TYPE_CHECKING block above says the same for type checkers, and
# tests/test_public_names.py checks that the two agree.
_HOMES: dict[str, tuple[str, ...]] = {
    "edge_agentd.agent.events": (
        "EVENT_ADAPTER", "STATE_ADAPTER", "Action", "AgentState", "CallSkillAction", "Event",
        "EventStream", "FinalAnswerAction", "InterruptedObservation", "MaxIterationsObservation",
        "ModelErrorObservation", "Observation", "SkillResultObservation", "ToolErrorObservation",
        "Usage", "ValidationErrorObservation",
    ),
    "edge_agentd.agent.loop": ("Agent",),
    "edge_agentd.agent.prompt": ("PLAIN", "ChatFormat"),
    "edge_agentd.agent.registry": ("Registry", "SkillSpec", "get_registry", "skill"),
    "edge_agentd.agent.workflow": ("Result", "Soul", "Workflow"),
    "edge_agentd.model": (
        "Completion", "ContextExceeded", "MockModel", "ModelError", "ModelHandle", "load_model",
    ),
}
_HOME_OF = {name: home for home, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = sorted(_HOME_OF)  # noqa: PLE0605 - the names above, kept once
