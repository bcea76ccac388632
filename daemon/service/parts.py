"""What a Server is built from: its options, and the parts service/assembly wires for it.

The serving loop (server.py) only uses its parts; which part gets which callback is decided in
one place, :func:`~edge_agentd.service.assembly.wiring.build_server`.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from typing import Any

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.workflow import Soul, Workflow
from edge_agentd.service.config.settings import Settings
from edge_agentd.service.handlers import RequestHandler
from edge_agentd.service.journal.journal import Journal
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.outbox import Outbox
from edge_agentd.service.replies import Replies
from edge_agentd.service.router import RouterSocket, WakeUpPipe
from edge_agentd.service.runends import RunEnds
from edge_agentd.service.runs.jobs import ModelLoader
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.service.shutdown import Shutdown
from edge_agentd.service.skillcalls import SkillCalls
from edge_agentd.service.status import StatusReport
from edge_agentd.service.systemd import Notifier
from edge_agentd.service.triggerops import TriggerOps
from edge_agentd.service.triggers.firing import TriggerMemory
from edge_agentd.service.wedge import Wedge


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
    mqtt_status: Callable[[], dict[str, Any]] | None = None
    """The MQTT bridge's state for ``status`` (any thread may call it)."""
    mcp_status: Callable[[], dict[str, Any]] | None = None
    """The Model Context Protocol server's state for ``status`` (any thread may call it)."""
    trigger_memory: TriggerMemory | None = None
    """Where the triggers' firings outlive a restart (the run journal); None forgets them."""
    demo: bool = False
    """The sensor skills read the demo device (``serve --demo``): its answers say so
    (service/demomark.py), and it keeps a journal of its own (journal.path.demo_path)."""


@dataclasses.dataclass
class ServerParts:
    """Every part of one Server, each with its own state, wired to the others."""

    settings: Settings
    options: ServerOptions
    lifecycle: Lifecycle
    runs: RunQueue
    router: RouterSocket
    wakeup: WakeUpPipe
    outbox: Outbox
    replies: Replies
    journal: Journal
    triggers: TriggerOps
    requests: RequestHandler
    loader: ModelLoader
    ends: RunEnds
    report: StatusReport
    shutdown: Shutdown
    wedge: Wedge
    counts: collections.Counter[str]
    """``runs_finished`` and ``outcome_<outcome>``."""
    calls: SkillCalls | None = None
    """The ``call`` op's skill calls in flight (None only in a test's hand-made parts)."""


__all__ = ["ServerOptions", "ServerParts"]
