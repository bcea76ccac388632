"""What a Server is asked to serve besides its settings: the endpoints, the model, the skills and
workflows ``serve`` loaded, and the systemd notifier."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.workflow import Soul, Workflow
from edge_agentd.service.systemd import Notifier
from edge_agentd.service.triggers.firing import TriggerMemory


@dataclasses.dataclass
class ServerOptions:
    """What the serving loop needs besides the settings."""

    endpoints: list[str]
    load_model: Callable[[], ModelHandle]
    model_spec: str
    registry: Registry
    soul: Soul | None = None
    workflows: dict[str, Workflow] = dataclasses.field(default_factory=dict)
    skill_problems: list[dict[str, str]] = dataclasses.field(default_factory=list)
    notifier: Notifier = dataclasses.field(default_factory=Notifier)
    trigger_memory: TriggerMemory | None = None
    """Where the triggers' firings outlive a restart (the run journal); None forgets them."""
    demo: bool = False
    """The sensor skills read the demo device (``serve --demo``): its answers say so
    (service/demomark.py), and it keeps a journal of its own (journal.path.demo_path)."""


__all__ = ["ServerOptions"]
