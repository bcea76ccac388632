"""A run's way off the serving loop: the thread that loads the model, and each job's run.

A job runs on a pooled run thread (:meth:`Agent.start`), one at a time, and the serving
loop watches its skills: the run needs no thread of its own to wait in, so a request crosses
threads only twice, to the run and back (docs/design.md, "Threads"). Neither the loading thread nor
a run touches a ZeroMQ socket. Everything they have to say is posted to the serving loop
(:meth:`~edge_agentd.service.server.Server.post`) as packed bytes, and a byte on its wake-up pipe
tells it to look.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from edge_agentd.agent.events import (
    EVENT_ADAPTER,
    STATE_ADAPTER,
    AgentState,
    Event,
    InterruptedObservation,
    ModelErrorObservation,
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
)
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.loop import Agent
from edge_agentd.agent.protocol import ModelHandle, full_handle
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.run import RunOptions
from edge_agentd.agent.supervision import RunTicket
from edge_agentd.agent.workflow import Soul
from edge_agentd.model.gguf import ModelLoadError
from edge_agentd.protocol.wire import PROTOCOL_VERSION, EventReply, encode
from edge_agentd.service.config.settings import ModelSettings
from edge_agentd.service.config.strategy import guidance_for, strategy_name
from edge_agentd.service.threads.daemonthread import DaemonThread

log = logging.getLogger(__name__)

STEP_ENDS = (
    SkillResultObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
    ModelErrorObservation,
)
"""The events that end a step, as the live line of ``ask`` counts them (cli/progress.py)."""


@dataclasses.dataclass(eq=False)
class Job:
    """One accepted ``run`` request, from the moment it is queued until its final reply."""

    request_id: str
    envelope: list[bytes]
    options: RunOptions
    """What the run is asked, the server's policy applied; its cancel check and event sink are
    the job's own, added when it starts."""
    stream: bool
    received: float = dataclasses.field(default_factory=time.monotonic)
    started: float | None = None
    cancelled: threading.Event = dataclasses.field(default_factory=threading.Event)
    events_sent: int = 0
    connection: tuple[int, int] = (-1, -1)
    """The connection it came in on (fd, number): its replies go to that connection or nowhere,
    and it is kept open past the connection cap until the run ends."""
    trigger: str | None = None
    """The trigger that fired it (source ``trigger:NAME``): no client waits for its reply."""
    asked_over: str = "zmq"
    """Where a client's run was asked: ``zmq``, or ``mqtt`` from the daemon's MQTT bridge."""
    steps_done: int = 0
    """Steps ended so far (a skill's result or error, a failed check): written by the run's
    thread, read by ``status`` on the loop's."""
    ended: bool = False
    """Answered already without a result (the server's ``end_run``): a wedged run is, before
    its thread returns, if ever; what it returns then is not sent."""

    @property
    def source(self) -> str:
        """``zmq``, ``mqtt`` or ``trigger:NAME``, as the journal and ``status`` say it."""
        return f"trigger:{self.trigger}" if self.trigger is not None else self.asked_over


@dataclasses.dataclass(frozen=True)
class Loaded:
    agent: Agent


@dataclasses.dataclass(frozen=True)
class LoadFailed:
    error: str
    config: bool = False
    """The model itself cannot be used (ModelLoadError: its message says how to fix it), so a
    restart cannot help; otherwise an unexpected failure, logged with its traceback."""


@dataclasses.dataclass(frozen=True)
class Send:
    """A streamed ``event`` reply for ``job``."""

    job: Job
    payload: bytes


@dataclasses.dataclass(frozen=True)
class Finished:
    """The final reply for ``job``: its ``result``, or an ``internal`` error when the run broke."""

    job: Job
    payload: bytes | None
    outcome: str | None
    error: str | None = None
    answer: str | None = None


Message = Loaded | LoadFailed | Send | Finished


def run_result(job: Job, state: AgentState, *, queued_s: float, run_s: float) -> dict[str, Any]:
    """The ``result`` reply of a run that returned ``state``, serialized by the agent's own
    adapter: a :class:`~edge_agentd.protocol.wire.RunResult` map in wire order, built as a plain
    map (every value is the daemon's own; tests/service/test_server.py validates it against the
    model)."""
    if state.outcome is None:
        raise RuntimeError("the agent returned a run that has not stopped")
    return {
        "v": PROTOCOL_VERSION,
        "id": job.request_id,
        "kind": "result",
        "op": "run",
        "workflow": job.options.workflow.name if job.options.workflow else None,
        "timing": {"queued_ms": _ms(queued_s), "run_ms": _ms(run_s)},
        "outcome": state.outcome,
        "answer": state.final_answer,
        "state": STATE_ADAPTER.dump_python(state, mode="json"),
        "run_id": job.request_id,
    }


def interrupted_result(job: Job, reason: str) -> bytes:
    """The packed result of a run that was stopped before it started."""
    state = AgentState(query=job.options.query)
    state.stream.append(InterruptedObservation(reason=reason))
    return encode(run_result(job, state, queued_s=time.monotonic() - job.received, run_s=0.0))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


class ModelLoader:
    """Loads the model with ``load_model`` on its own thread, builds the Agent every run is
    driven by, and posts :class:`Loaded` or :class:`LoadFailed`; the thread ends then (it cannot
    be stopped earlier)."""

    def __init__(
        self,
        load_model: Callable[[], ModelHandle],
        registry: Registry,
        soul: Soul | None,
        settings: ModelSettings,
        post: Callable[[Message], None],
    ) -> None:
        self._load_model = load_model
        self._registry = registry
        self._soul = soul
        self._settings = settings
        self._post = post
        self.thread = DaemonThread("edge-agent-load", self._run)

    def start(self) -> None:
        self.thread.start()

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def build(self) -> Agent:
        """The model loaded, and the Agent on it (warmed up when the settings say so)."""
        model = self._load_model()
        settings = self._settings
        # A bare model (only ``generate``) has no ``info``: read it through the full protocol.
        guidance = guidance_for(settings.strategy, full_handle(model), settings.answers)
        # Grounding is the daemon's promise: every run it serves (a client's, a trigger's, an
        # MQTT ask's) is driven by this one agent, so every answer passes the rules.
        agent = Agent(
            model, self._registry, soul=self._soul, guidance=guidance, grounding=Grounding()
        )
        log.info("model strategy: %s", strategy_name(guidance))
        if settings.warm_up:
            agent.handle.warm_up(agent.preamble())
        return agent

    def _run(self) -> None:
        try:
            agent = self.build()
        except ModelLoadError as exc:
            self._post(LoadFailed(str(exc), config=True))
            return
        except Exception as exc:
            log.exception("the model failed to load")
            self._post(LoadFailed(f"{type(exc).__name__}: {exc}"))
            return
        self._post(Loaded(agent))


def start_job(agent: Agent, job: Job, post: Callable[[Message], None]) -> RunTicket:
    """Start ``job`` on a pooled run thread. Its events (if it streams) and then its one
    final reply are posted; the caller calls the ticket's ``check()`` until it is done."""
    job.started = started = time.monotonic()
    agent.handle.reset()

    def on_event(event: Event) -> None:
        if isinstance(event, STEP_ENDS):
            job.steps_done += 1
        if job.stream:
            reply = EventReply(
                id=job.request_id,
                seq=job.events_sent,
                event=EVENT_ADAPTER.dump_python(event, mode="json"),
            )
            job.events_sent += 1
            post(Send(job, encode(reply)))

    def on_done(state: AgentState, error: BaseException | None) -> None:
        # The run gets its one final reply, whatever escaped (the loop already contains what
        # skills raise).
        if error is None:
            try:
                reply = run_result(
                    job, state, queued_s=started - job.received, run_s=time.monotonic() - started
                )
                post(Finished(job, encode(reply), state.outcome, answer=state.final_answer))
                return
            except Exception as exc:  # noqa: BLE001 - logged below and answered `internal`
                error = exc
        log.error("run %s failed", job.request_id, exc_info=error)
        post(Finished(job, None, None, type(error).__name__))

    options = dataclasses.replace(job.options, should_stop=job.cancelled.is_set, on_event=on_event)
    return agent.start(options, on_done=on_done)


__all__ = [
    "Finished",
    "Job",
    "LoadFailed",
    "Loaded",
    "Message",
    "ModelLoader",
    "Send",
    "interrupted_result",
    "run_result",
    "start_job",
]
