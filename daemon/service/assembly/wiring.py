"""The Server's wiring: each of its parts built and handed the others it calls.

:func:`agent_builder` is what the loading thread runs: the model loaded, the Agent built on it.

:func:`build_server` is the one place that says which part calls which: the serving loop
(service/server.py) only uses what it is given.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.loop import Agent
from edge_agentd.agent.protocol import full_handle
from edge_agentd.service.config.settings import Settings
from edge_agentd.service.config.strategy import guidance_for, strategy_name
from edge_agentd.service.handlers import RequestHandler
from edge_agentd.service.journal.journal import Journal
from edge_agentd.service.journal.path import default_path, demo_path
from edge_agentd.service.lifecycle import Lifecycle
from edge_agentd.service.outbox import Outbox
from edge_agentd.service.parts import ServerOptions, ServerParts
from edge_agentd.service.replies import Replies
from edge_agentd.service.router import RouterSocket, WakeUpPipe
from edge_agentd.service.runends import RunEnds
from edge_agentd.service.runs.jobs import ModelLoader
from edge_agentd.service.runs.queue import RunQueue
from edge_agentd.service.server import Server
from edge_agentd.service.shutdown import Shutdown
from edge_agentd.service.skillcalls import SkillCalls
from edge_agentd.service.status import StatusReport
from edge_agentd.service.threads.daemonthread import crashes
from edge_agentd.service.triggerops import TriggerOps
from edge_agentd.service.wedge import Wedge

log = logging.getLogger(__name__)


def build_server(settings: Settings, options: ServerOptions) -> Server:
    """A Server for ``settings`` and ``options``, ready to bind."""
    limits = settings.daemon
    lifecycle = Lifecycle()
    runs = RunQueue(limits.queue_limit)
    router = RouterSocket(limits.max_request_bytes, limits.max_connections)
    wakeup = WakeUpPipe()
    outbox = Outbox(wakeup)
    replies = Replies(router)
    endpoint = options.endpoints[0] if options.endpoints else None
    path = Path(settings.journal.path) if settings.journal.path else default_path(endpoint)
    journal = Journal(
        settings.journal,
        post=outbox.post,
        send=replies.send_packed,
        path=demo_path(path) if options.demo else path,
        open_now=False,  # Server.bind opens it, once the endpoints are its own
    )
    triggers = TriggerOps(
        settings, options, post=outbox.post, router=router, replies=replies, runs=runs,
        journal=journal,
    )  # fmt: skip
    loader = ModelLoader(agent_builder(settings, options), outbox.post)
    counts: collections.Counter[str] = collections.Counter()
    watcher = router.connections.watch
    calls = SkillCalls(options.registry, journal, replies, outbox.post, run_holds=runs.holds)
    threads = [loader.thread, journal.thread, watcher.thread, triggers.runner.thread, calls.thread]

    def describe() -> dict[str, Any]:
        return {
            "endpoints": list(router.bound),
            "workflows": sorted(options.workflows),
            "skills": len(options.registry),
            "skill_problems": [
                {"source": problem["source"], "error": problem["error"]}
                for problem in options.skill_problems
            ],
        }

    report = StatusReport(
        lifecycle=lifecycle,
        runs=runs,
        limits=limits,
        # The request handler is built next, with this report's reply: read when asked.
        counters=lambda: (requests.counts, replies.counts, counts, router.connections.counts),
        description=describe,
        tail=lambda: {
            "mqtt": options.mqtt_status() if options.mqtt_status else None,
            "journal": journal.status(),
            "triggers": triggers.status(),
            "skill_calls": dict(calls.counts),
            "mcp": options.mcp_status() if options.mcp_status else None,
            "crashed_threads": crashes(threads),
            "wedged": wedge.status(),
        },
    )
    report.model_spec = options.model_spec
    requests = RequestHandler(
        router=router,
        replies=replies,
        runs=runs,
        lifecycle=lifecycle,
        limits=limits,
        registry=options.registry,
        workflows=options.workflows,
        status=report.reply,
        journal=journal,
        more_ops={"triggers": triggers.triggers, "watch": triggers.watch, "call": calls.call},
        cancel_other=triggers.cancel_watch,
    )
    ends = RunEnds(journal, triggers, replies)
    wedge = Wedge(runs, limits.wedged_after_s, options.notifier, end_run=ends.end)
    report.wedge = wedge
    shutdown = Shutdown(
        lifecycle, runs, limits, options.notifier, end_run=ends.end,
        stop_sources=lambda: triggers.close("the daemon is shutting down"),
    )  # fmt: skip
    return Server(
        ServerParts(
            settings=settings, options=options, lifecycle=lifecycle, runs=runs, router=router,
            wakeup=wakeup, outbox=outbox, replies=replies, journal=journal, triggers=triggers,
            requests=requests, loader=loader, ends=ends, report=report, shutdown=shutdown,
            wedge=wedge, counts=counts, calls=calls,
        )
    )  # fmt: skip


def agent_builder(settings: Settings, options: ServerOptions) -> Callable[[], Agent]:
    """What the loading thread runs: the model loaded, and the Agent every run is driven by."""

    def build() -> Agent:
        model = options.load_model()
        # A bare model (only ``generate``) has no ``info``: read it through the full protocol.
        guidance = guidance_for(
            settings.model.strategy, full_handle(model), settings.model.answers
        )
        # Grounding is the daemon's promise: every run it serves (a client's, a trigger's, an
        # MQTT ask's) is driven by this one agent, so every answer passes the rules.
        agent = Agent(
            model, options.registry, soul=options.soul, guidance=guidance, grounding=Grounding()
        )
        log.info("model strategy: %s", strategy_name(guidance))
        if settings.model.warm_up:
            agent.handle.warm_up(agent.preamble())
        return agent

    return build


__all__ = ["agent_builder", "build_server"]
