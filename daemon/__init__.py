"""edge-agent: an agent daemon for small Linux computers.

The public names of the framework. Importing this package has no side effects: llama.cpp, ZeroMQ
and the built-in skills are loaded only when asked for, and so is each name below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edge_agent.agent.events import (
        EVENT_ADAPTER,
        STATE_ADAPTER,
        Action,
        AgentState,
        CallSkillAction,
        Event,
        EventStream,
        FinalAnswerAction,
        InterruptedObservation,
        MaxIterationsObservation,
        ModelErrorObservation,
        Observation,
        SkillResultObservation,
        ToolErrorObservation,
        Usage,
        ValidationErrorObservation,
    )
    from edge_agent.agent.loop import Agent
    from edge_agent.agent.prompt import PLAIN, ChatFormat
    from edge_agent.agent.registry import Registry, SkillSpec, get_registry, skill
    from edge_agent.agent.workflow import Result, Soul, Workflow
    from edge_agent.model import (
        Completion,
        ContextExceeded,
        MockModel,
        ModelError,
        ModelHandle,
        load_model,
    )

# Where each public name lives: it is imported on first use (PEP 562), so `edge-agent ask`,
# `status` and `skills`, which need none of them, start without pydantic or the agent.
_HOMES: dict[str, str] = {
    "EVENT_ADAPTER": "edge_agent.agent.events",
    "STATE_ADAPTER": "edge_agent.agent.events",
    "Action": "edge_agent.agent.events",
    "AgentState": "edge_agent.agent.events",
    "CallSkillAction": "edge_agent.agent.events",
    "Event": "edge_agent.agent.events",
    "EventStream": "edge_agent.agent.events",
    "FinalAnswerAction": "edge_agent.agent.events",
    "InterruptedObservation": "edge_agent.agent.events",
    "MaxIterationsObservation": "edge_agent.agent.events",
    "ModelErrorObservation": "edge_agent.agent.events",
    "Observation": "edge_agent.agent.events",
    "SkillResultObservation": "edge_agent.agent.events",
    "ToolErrorObservation": "edge_agent.agent.events",
    "Usage": "edge_agent.agent.events",
    "ValidationErrorObservation": "edge_agent.agent.events",
    "Agent": "edge_agent.agent.loop",
    "PLAIN": "edge_agent.agent.prompt",
    "ChatFormat": "edge_agent.agent.prompt",
    "Registry": "edge_agent.agent.registry",
    "SkillSpec": "edge_agent.agent.registry",
    "get_registry": "edge_agent.agent.registry",
    "skill": "edge_agent.agent.registry",
    "Result": "edge_agent.agent.workflow",
    "Soul": "edge_agent.agent.workflow",
    "Workflow": "edge_agent.agent.workflow",
    "Completion": "edge_agent.model",
    "ContextExceeded": "edge_agent.model",
    "MockModel": "edge_agent.model",
    "ModelError": "edge_agent.model",
    "ModelHandle": "edge_agent.model",
    "load_model": "edge_agent.model",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "EVENT_ADAPTER",
    "PLAIN",
    "STATE_ADAPTER",
    "Action",
    "Agent",
    "AgentState",
    "CallSkillAction",
    "ChatFormat",
    "Completion",
    "ContextExceeded",
    "Event",
    "EventStream",
    "FinalAnswerAction",
    "InterruptedObservation",
    "MaxIterationsObservation",
    "MockModel",
    "ModelError",
    "ModelErrorObservation",
    "ModelHandle",
    "Observation",
    "Registry",
    "Result",
    "SkillResultObservation",
    "SkillSpec",
    "Soul",
    "ToolErrorObservation",
    "Usage",
    "ValidationErrorObservation",
    "Workflow",
    "get_registry",
    "load_model",
    "skill",
]
