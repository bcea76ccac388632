"""The triggers' own thread: it checks the skills of ``when`` triggers, keeps the schedules, and
hands each firing to the run queue, without ever touching the model.

Each check runs the skill on a pooled thread of its own, bounded by the skill's timeout in the
registry (or by its ``check_every`` when the skill has none), so a skill that fails or hangs is
a problem for its trigger alone: the trigger is ``failing`` (logged once per change) and is tried
again at its next check, while a hung call keeps only its own trigger from starting another.
The serving loop owns the queue; it tells the runner what became of each firing
(:meth:`TriggerRunner.queued`, :meth:`refused`, :meth:`finished`).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from edge_agentd.agent.registry import Registry
from edge_agentd.agent.run import SkillStillRunning
from edge_agentd.agent.supervision import RunThreads, shared_run_threads
from edge_agentd.service.config.triggers import TriggerSettings
from edge_agentd.service.threads.daemonthread import DaemonThread
from edge_agentd.service.triggers.condition import Condition, Reading, read_field
from edge_agentd.service.triggers.firing import (
    Firing,
    NoMemory,
    Remembered,
    TriggerMemory,
    firing_query,
    result_message,
)
from edge_agentd.service.triggers.record import Check, TriggerRecord
from edge_agentd.service.triggers.schedule import (
    LATE_GRACE_S,
    Clock,
    SystemClock,
    describe,
    next_at,
    next_every,
)

log = logging.getLogger(__name__)

MAX_WAIT_S = 30.0
"""The runner looks at the clock at least this often: a wall clock set by NTP may jump."""
STOP_S = 2.0
"""How long shutdown waits for the runner's thread (a check in flight is not waited for)."""


class TriggerRunner:
    """Every configured trigger; :meth:`start` runs them on their own thread until :meth:`stop`.

    ``submit`` is called (on the runner's thread, or a check's) with each :class:`Firing`; it
    must not block: the serving loop takes it from there.
    """

    def __init__(
        self,
        triggers: list[TriggerSettings],
        registry: Registry,
        submit: Callable[[Firing], None],
        *,
        clock: Clock | None = None,
        memory: TriggerMemory | None = None,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self._registry = registry
        self._submit = submit
        self._memory: TriggerMemory = memory or NoMemory()
        self.lock = threading.Condition()
        """Guards every record: the checks, the serving loop and `triggers` reports take it."""
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self.thread = DaemonThread("edge-agent-triggers", self._serve, ask_stop=self._ask_stop)
        self._threads: RunThreads = shared_run_threads()
        """The agents' own pool: a skill whose check hung is not started again by a run, and a
        skill that hung in a run is not checked again, until its call returns."""
        self._tokens = 0
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        """Called with each trigger run's result message (``watch``, the MQTT bridge)."""
        now = self.clock.now()
        self.records: dict[str, TriggerRecord] = {}
        for trigger in triggers:
            condition = Condition(trigger.when, trigger.cooldown) if trigger.when else None
            record = TriggerRecord(trigger, condition)
            self._recall(record, now)
            self.records[trigger.name] = record

    def _recall(self, record: TriggerRecord, now: float) -> None:
        trigger = record.settings
        remembered = self._memory.recall(trigger.name)
        if remembered is not None:
            record.last_fired = remembered.last_fired
            record.last_due = remembered.last_due
            if record.condition is not None:
                record.condition.latched = remembered.latched
                record.condition.last_fired = remembered.last_fired
        if not trigger.enabled:
            return
        if trigger.when is not None:
            record.next_due = now
        elif trigger.at is not None:
            record.next_due = next_at(
                trigger.at, max(now - LATE_GRACE_S, record.last_due or 0), self.clock.zone
            )
        elif trigger.every_s is not None:
            record.next_due = next_every(trigger.every_s, record.last_due, now)

    def enabled_names(self) -> list[str]:
        return [name for name, record in self.records.items() if record.settings.enabled]

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> None:
        if self.records:  # no trigger, no thread
            self.thread.start()

    def stop(self) -> None:
        self.thread.stop(STOP_S)

    def _ask_stop(self) -> None:
        self._stopped.set()
        self._wake.set()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                wait = self.poll()
            except Exception:
                log.exception("the triggers' thread hit a bug; it carries on")
                wait = MAX_WAIT_S
            self._wake.wait(wait)
            self._wake.clear()

    # -- one pass -----------------------------------------------------------------------------

    def poll(self) -> float:
        """Do what is due now: time out hung checks, start checks, fire schedules. Returns the
        seconds until something is next due."""
        with self.lock:
            now = self.clock.now()
            for record in self.records.values():
                self._poll_one(record, now)
            dues = [r.next_due for r in self.records.values() if r.next_due is not None]
            # A check past its deadline was abandoned: its return is not waited for (it clears
            # its record itself, under the lock), so its deadline is never due again.
            dues += [
                r.check.deadline
                for r in self.records.values()
                if r.check is not None and r.check.token >= 0
            ]
        if not dues:
            return MAX_WAIT_S
        return max(0.0, min(MAX_WAIT_S, min(dues) - now))

    def _poll_one(self, record: TriggerRecord, now: float) -> None:
        check = record.check
        if check is not None and now >= check.deadline and check.token >= 0:
            check.token = -1  # its result, should it come, is dropped
            spec = self._registry.get(record.settings.when.skill) if record.settings.when else None
            if spec is not None:
                self._threads.abandon(spec, check.worker)
            self._failed(record, f"the check ran past {check.deadline - check.started:g} s", now)
        due = record.next_due
        if due is None or now < due:
            if due is not None and due - now > 2 * MAX_DURATION_GUARD:
                record.next_due = self._reschedule(record, now)  # the clock went back
            return
        trigger = record.settings
        if trigger.when is not None:
            if record.check is None:
                self._start_check(record, now)
            record.next_due = now + trigger.when.check_every_s
            return
        if now - due > LATE_GRACE_S:
            record.missed += 1
            log.info(
                "trigger %s: missed its time %s (the daemon was down or the clock jumped)",
                trigger.name,
                describe(due, self.clock.zone),
            )
        else:
            self._fire(record, due, None)
        record.last_due = due
        record.next_due = self._reschedule(record, now)
        self._remember(record)

    def _reschedule(self, record: TriggerRecord, now: float) -> float:
        trigger = record.settings
        if trigger.at is not None:
            return next_at(trigger.at, now, self.clock.zone)
        if trigger.every_s is not None:
            return next_every(trigger.every_s, record.last_due, now)
        return now

    # -- checks -------------------------------------------------------------------------------

    def _start_check(self, record: TriggerRecord, now: float) -> None:
        when = record.settings.when
        if when is None:
            return
        spec = self._registry.get(when.skill)
        if spec is None:
            self._failed(record, f"the skill {when.skill} is gone from the registry", now)
            return
        try:
            self._threads.check_free(spec)
        except SkillStillRunning as exc:
            self._failed(record, str(exc), now)
            return
        self._tokens += 1
        limit = spec.timeout_s if spec.timeout_s is not None else when.check_every_s
        worker = self._threads.take()
        record.check = Check(self._tokens, now, now + limit, worker)
        record.checks += 1
        worker.start(self._run_check, record, record.check, spec, dict(when.arguments), when.field)

    def _run_check(
        self, record: TriggerRecord, check: Check, spec: Any, arguments: Any, field: str
    ) -> None:
        """On the check's own thread: call the skill, then apply what it gave under the lock."""
        error: str | None = None
        value: tuple[float, str | None] | None = None
        try:
            result = self._registry.call(spec, spec.validate_arguments(arguments))
            value = read_field(result, field)
        except BaseException as exc:  # noqa: BLE001 - a skill's failure is its trigger's state
            # SystemExit, KeyboardInterrupt or GeneratorExit from a skill too (docs/skills.md):
            # raised on, they would end this thread with the check left in flight, and its
            # trigger would never be checked again.
            error = f"{type(exc).__name__}: {exc}"[:300]
        with self.lock:
            if record.check is check:
                record.check = None
            if check.token < 0:
                self.lock.notify_all()  # it hung: its thread was abandoned and ends now
                return
            self._threads.give_back(check.worker)
            now = self.clock.now()
            if error is not None or value is None:
                self._failed(record, error or "no reading", now)
            else:
                self._observed(record, Reading(value[0], value[1], spec.name, arguments), now)
            self.lock.notify_all()

    def _observed(self, record: TriggerRecord, reading: Reading, now: float) -> None:
        condition = record.condition
        if condition is None:
            return
        if record.error is not None:
            log.info(
                "trigger %s: its check works again (%s)", record.settings.name, f"{reading.value:g}"
            )
        record.error = None
        record.reading = reading
        was_latched = condition.latched
        if condition.observe(now, reading.value):
            self._fire(record, now, reading)
        if condition.latched != was_latched:
            self._remember(record)

    def _failed(self, record: TriggerRecord, error: str, now: float) -> None:
        record.checks_failed += 1
        if error != record.error:
            log.warning("trigger %s: its check failed: %s", record.settings.name, error)
        record.error = error
        if record.condition is not None:
            record.condition.failed(error)

    def wait_checks(self, timeout_s: float) -> bool:
        """Wait (real time) until no check is running, or ``timeout_s``; for tests and the
        benchmark. True when none is."""
        with self.lock:
            return self.lock.wait_for(
                lambda: all(r.check is None or r.check.token < 0 for r in self.records.values()),
                timeout_s,
            )

    # -- firings ------------------------------------------------------------------------------

    def _fire(self, record: TriggerRecord, instant: float, reading: Reading | None) -> None:
        trigger = record.settings
        if record.pending is not None:
            record.skipped += 1
            log.info(
                "trigger %s: fired while its last run is still queued or running; skipped",
                trigger.name,
            )
            return
        if (
            reading is None
            and record.last_fired is not None
            and (instant - record.last_fired < trigger.cooldown)
        ):
            record.skipped += 1
            return
        record.fired += 1
        record.last_fired = instant
        run_id = f"{trigger.name}-{uuid.uuid4().hex[:12]}"
        record.pending = run_id
        record.pending_reading = reading
        when_text = describe(instant, self.clock.zone) or ""
        firing = Firing(
            trigger.name,
            run_id,
            firing_query(trigger, reading, when_text),
            trigger.workflow,
            instant,
            reading,
        )
        log.info("trigger %s fired (run %s)", trigger.name, run_id)
        self._submit(firing)

    def _remember(self, record: TriggerRecord) -> None:
        condition = record.condition
        remembered = Remembered(
            record.last_fired, bool(condition and condition.latched), record.last_due
        )
        try:
            self._memory.remember(record.settings.name, remembered)
        except Exception:
            log.exception("trigger %s: could not remember its firing", record.settings.name)

    # -- what the serving loop says about a firing's run --------------------------------------

    def refused(self, trigger: str, run_id: str, reason: str) -> None:
        """The queue had no room to spare: the firing is counted skipped."""
        with self.lock:
            record = self.records.get(trigger)
            if record is None or record.pending != run_id:
                return
            record.pending = None
            record.skipped += 1
            record.last_run = {
                "id": run_id,
                "outcome": "skipped",
                "answer": None,
                "reason": reason,
                "finished": describe(self.clock.now(), self.clock.zone),
            }
        log.info("trigger %s: run %s not queued: %s", trigger, run_id, reason)

    def finished(self, trigger: str, run_id: str, outcome: str, answer: str | None) -> None:
        """The firing's run ended: remember its outcome and tell the listeners."""
        with self.lock:
            record = self.records.get(trigger)
            if record is None or record.pending != run_id:
                return
            record.pending = None
            zone = self.clock.zone
            record.last_run = {
                "id": run_id,
                "outcome": outcome,
                "answer": answer,
                "reason": None,
                "finished": describe(self.clock.now(), zone),
            }
            message = result_message(
                trigger,
                run_id,
                fired_at=describe(record.last_fired, zone),
                outcome=outcome,
                answer=answer,
                reading=record.pending_reading,
            )
            listeners = list(self.listeners)
        for listener in listeners:
            try:
                listener(message)
            except Exception:
                log.exception("trigger %s: a listener of its results failed", trigger)


MAX_DURATION_GUARD = 8 * 24 * 3600.0
"""A due time further ahead than twice this means the clock was set back: reschedule."""


__all__ = ["MAX_WAIT_S", "TriggerRecord", "TriggerRunner"]
