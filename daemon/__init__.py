"""edge-agent: an agent daemon for small Linux computers.

The public names of the framework. Importing this package has no side effects: llama.cpp, ZeroMQ
and the built-in skills are loaded only when asked for.
"""

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
