"""The Agent: the model's decisions, the registry's dispatch and the EventStream, in one loop.

The Agent holds no conversation state: everything lives in ``AgentState.stream``, so every ``run``
starts from a blank page. ``run`` returns an AgentState or raises only for a caller's bug.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from edge_agent.agent.checks import check_count
from edge_agent.agent.events import (
    AgentState,
    CallSkillAction,
    Event,
    FinalAnswerAction,
    InterruptedObservation,
    MaxIterationsObservation,
    ModelErrorObservation,
    SkillResultObservation,
    ToolErrorObservation,
    Usage,
    ValidationErrorObservation,
)
from edge_agent.agent.guidance import Guidance
from edge_agent.agent.jsonvalues import compact_json, format_validation_error, to_jsonable
from edge_agent.agent.parsing import parse_action
from edge_agent.agent.prompt import ChatFormat, render_event, render_system
from edge_agent.agent.protocol import (
    Completion,
    ContextExceeded,
    ModelError,
    ModelHandle,
    SupportsGenerate,
    full_handle,
)
from edge_agent.agent.registry import Registry, get_registry
from edge_agent.agent.supervision import RunRecord, RunTicket, SkillStillRunning, Supervisor
from edge_agent.agent.workflow import Result, Soul, Workflow

log = logging.getLogger(__name__)

Step = CallSkillAction | FinalAnswerAction | ValidationErrorObservation | ModelErrorObservation
DEFAULT_MAX_ITERATIONS = 8
DEFAULT_MAX_RETRIES = 3
_SUMMARY_CHARS = 200


def _safe_str(value: object) -> str:
    """``str(value)``, or a placeholder when that itself raises."""
    try:
        return str(value)
    except Exception as exc:  # noqa: BLE001 - an exception whose __str__ raises
        return f"<unprintable: {type(exc).__name__}>"


def _summary(event: CallSkillAction | FinalAnswerAction | None) -> str:
    if event is None:
        return "no action was taken"
    if isinstance(event, FinalAnswerAction):
        text = f"final_answer {event.answer!r}"
    else:
        text = f"call {event.skill_name} {compact_json(event.arguments)}"
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


@dataclasses.dataclass
class Agent:
    """Runs the bounded loop: ask the model, dispatch its action, record everything."""

    model: ModelHandle | SupportsGenerate
    registry: Registry = dataclasses.field(default_factory=get_registry)
    soul: Soul | None = dataclasses.field(default=None, kw_only=True)
    max_result_chars: int = dataclasses.field(default=4000, kw_only=True)
    guidance: Guidance | None = dataclasses.field(default=None, kw_only=True)
    """Help for a small model (see :mod:`edge_agent.agent.guidance`); None: the model alone."""

    def __post_init__(self) -> None:
        if not isinstance(self.model, SupportsGenerate):
            raise TypeError("Agent needs a model with a generate(prompt, **kwargs) method")
        self.handle: ModelHandle = full_handle(self.model)
        """The model with the whole ModelHandle protocol: the bare ones get its defaults."""
        if not isinstance(self.registry, Registry):
            raise TypeError(f"registry must be a Registry, not {type(self.registry).__name__}")
        self.supervisor: Supervisor = self.registry.supervisor
        """The run threads and the skills that hung: the registry's, shared with every agent on
        it."""
        self._systems: dict[
            tuple[int, Soul | None, Workflow | None], tuple[str, dict[str, None]]
        ] = {}
        if self.guidance is not None and not isinstance(self.guidance, Guidance):
            raise TypeError(f"guidance must be a Guidance, not {type(self.guidance).__name__}")
        if self.soul is not None and not isinstance(self.soul, Soul):
            raise TypeError(f"soul must be a Soul, not {type(self.soul).__name__}")
        check_count("max_result_chars", self.max_result_chars, 64)

    def close(self) -> None:
        """Stop the idle run threads (the registry's; a later run starts a new one). They also
        end when the registry is collected."""
        self.supervisor.close()

    # -- the prompt ---------------------------------------------------------------------------

    @property
    def chat_format(self) -> ChatFormat:
        return self.handle.chat_format

    def _system(self, workflow: Workflow | None) -> tuple[str, dict[str, None]]:
        """(system text, allowed skill names), rendered once per registry version."""
        key = (self.registry.version, self.soul, workflow)
        system = self._systems.get(key)
        if system is None:
            if len(self._systems) > 64:
                self._systems.clear()
            skills = self.registry.select(None if workflow is None else workflow.allowed_skills)
            example = None if self.guidance is None else self.guidance.answer_examples
            text = render_system(self.soul or Soul(), workflow, skills, example)
            system = self._systems[key] = (text, dict.fromkeys(s.name for s in skills))
        return system

    def system_prompt(self, workflow: Workflow | None = None) -> str:
        """The system part of every prompt for ``workflow``."""
        return self._system(workflow)[0]

    def preamble(self, workflow: Workflow | None = None) -> str:
        """The prompt text shared by every request: what a model can evaluate once and keep."""
        return self.chat_format.preamble(self.system_prompt(workflow))

    def render_prompt(self, state: AgentState) -> str:
        """The prompt for the next step, rendering only the events added since the last call."""
        return self._render(state, self._system(state.workflow)[0])

    def _render(self, state: AgentState, system: str) -> str:
        fmt = self.chat_format
        context = state.context
        key = (fmt, system)
        if context.render_key != key:
            context.render_key, context.rendered = key, 0
            context.text = fmt.opening(system, state.query)
        events = state.stream.root
        if context.rendered < len(events):
            guidance = self.guidance
            question = state.query if guidance is not None and guidance.restate_question else None
            context.text += "".join(
                [
                    render_event(
                        e,
                        fmt,
                        question,
                        guidance.focus(self.handle, state.query, e) if guidance else None,
                        lines=guidance is not None and guidance.result_lines,
                    )
                    for e in events[context.rendered :]
                ]
            )
            context.rendered = len(events)
        return context.text

    # -- one step -----------------------------------------------------------------------------

    def step(self, state: AgentState, *, last_step: bool = False, **opts: Any) -> Step:
        """Ask the model once and parse its reply. Never appends to ``state.stream``.

        ``last_step`` says no step follows: guidance then has the model answer."""
        if not isinstance(state, AgentState):
            raise TypeError(f"step takes an AgentState, not {type(state).__name__}")
        workflow = state.workflow
        system, names = self._system(workflow)
        prompt = self._render(state, system)
        allowed = workflow.allowed_skills if workflow is not None else None
        started = time.perf_counter()
        schema = self.registry.action_schema(allowed)

        def generate(text: str, **more: Any) -> str:
            return self.handle.generate(text, **{"action_schema": schema, **opts, **more})

        try:
            if self.guidance is None:
                raw = generate(prompt)
            else:
                skills = [spec for name in names if (spec := self.registry.get(name))]
                candidates = self.guidance.candidates(
                    self.registry.version, skills, self.chat_format
                )
                raw = self.guidance.reply(
                    self.handle, state, prompt, candidates, last_step=last_step, generate=generate
                )
        except Exception as exc:  # noqa: BLE001 - a model error is recorded, never raised
            exceeded = exc if isinstance(exc, ContextExceeded) else None
            return ModelErrorObservation(
                code=exc.code if isinstance(exc, ModelError) else "model_error",
                error=f"{type(exc).__name__}: {exc}",
                n_prompt_tokens=exceeded.n_prompt_tokens if exceeded else None,
                n_ctx=exceeded.n_ctx if exceeded else None,
                usage=Usage(model_s=time.perf_counter() - started),
            )
        elapsed = time.perf_counter() - started
        if not isinstance(raw, str):
            return ModelErrorObservation(
                code="bad_reply",
                error=f"the model returned {type(raw).__name__}, not str",
                usage=Usage(model_s=elapsed),
            )
        reported = raw.usage if isinstance(raw, Completion) else None
        usage = (
            reported.model_copy(update={"model_s": elapsed})
            if reported is not None
            else Usage(model_s=elapsed)
        )
        return parse_action(str(raw), names, usage)

    # -- the loop -----------------------------------------------------------------------------

    def run(
        self,
        workflow_or_query: Workflow | str,
        query: str | None = None,
        max_iterations: int | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        *,
        deadline: float | None = None,
        should_stop: Callable[[], bool] | None = None,
        on_event: Callable[[Event], None] | None = None,
        **opts: Any,
    ) -> AgentState:
        """Run the bounded loop on a query, or on a workflow with a query.

        ``max_iterations`` defaults to the workflow's, else 8. ``deadline`` is a
        ``time.monotonic()`` instant and ``should_stop`` a cancel check, both looked at between
        steps. ``on_event`` sees each event as it is appended. Other options go to the model.
        """
        record = self._record(
            workflow_or_query,
            query,
            max_iterations,
            max_retries,
            deadline=deadline,
            should_stop=should_stop,
            on_event=on_event,
            opts=opts,
        )
        self.supervisor.run(record, self._loop)
        return record.state

    def start(
        self,
        workflow_or_query: Workflow | str,
        query: str | None = None,
        max_iterations: int | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        *,
        on_done: Callable[[AgentState, BaseException | None], None],
        deadline: float | None = None,
        should_stop: Callable[[], bool] | None = None,
        on_event: Callable[[Event], None] | None = None,
        **opts: Any,
    ) -> RunTicket:
        """Start :meth:`run` without waiting for it: ``on_done(state, error)`` is called once
        when it is over, on the thread that ends it. The caller must call the ticket's
        ``check()`` every few hundredths of a second until then, or skill timeouts, the deadline
        and cancel cannot reach a skill that hangs."""
        record = self._record(
            workflow_or_query,
            query,
            max_iterations,
            max_retries,
            deadline=deadline,
            should_stop=should_stop,
            on_event=on_event,
            opts=opts,
        )
        return self.supervisor.start(
            record, self._loop, lambda error: on_done(record.state, error)
        )

    def _record(
        self,
        workflow_or_query: Workflow | str,
        query: str | None,
        max_iterations: int | None,
        max_retries: int,
        *,
        deadline: float | None,
        should_stop: Callable[[], bool] | None,
        on_event: Callable[[Event], None] | None,
        opts: dict[str, Any],
    ) -> RunRecord:
        """A new run's record, its arguments checked: the caller's mistakes raise here."""
        workflow, query = self._resolve(workflow_or_query, query)
        if max_iterations is None:
            max_iterations = (workflow.max_iterations if workflow else None) or (
                DEFAULT_MAX_ITERATIONS
            )
        check_count("max_iterations", max_iterations, 1)
        retries_left = check_count("max_retries", max_retries, 0)
        if deadline is not None and (
            isinstance(deadline, bool) or not isinstance(deadline, int | float)
        ):
            raise TypeError("deadline must be a time.monotonic() instant")
        if should_stop is not None and not callable(should_stop):
            raise TypeError("should_stop must be callable")
        state = AgentState(query=query)
        state.context.workflow = workflow
        return RunRecord(
            state, max_iterations, retries_left, deadline, should_stop, on_event, opts
        )

    def _loop(self, run: RunRecord, generation: int) -> None:
        """docs/design.md, "The loop's contract": step, append, dispatch, until a stop."""
        state, workflow = run.state, run.state.workflow
        while run.iteration < run.max_iterations:
            if self._stopped(run, generation):
                return
            run.iteration += 1
            event = self.step(
                state,
                last_step=run.iteration >= run.max_iterations,
                deadline=run.deadline,
                should_stop=run.should_stop,
                **run.opts,
            )
            # A deadline or cancel that landed during the step ends the run here: the model's
            # reply was cut short, so its parse failure is the interruption's, not the model's,
            # and a skill it asked for is not started. An answer that made it is kept.
            if not isinstance(event, FinalAnswerAction) and self._stopped(run, generation):
                return
            observed: Step | SkillResultObservation | ToolErrorObservation = event
            if isinstance(event, CallSkillAction):
                run.last_action = event
                run.append(event, generation)
                observed = self._dispatch(event, run, generation)
            elif isinstance(event, FinalAnswerAction):
                run.last_action = event
                run.append(event, generation)
                failed = self._check_final_answer(event, state, workflow)
                if failed is None:
                    return
                observed = failed
            if isinstance(observed, ValidationErrorObservation | ModelErrorObservation):
                if self._stopped(run, generation):
                    return
                will_retry = run.retries_left > 0 and run.iteration < run.max_iterations
                run.retries_left -= 1
                run.append(observed.model_copy(update={"will_retry": will_retry}), generation)
                if run.retries_left < 0:
                    return
                continue
            run.append(observed, generation)
        if self._stopped(run, generation):
            return
        run.append(
            MaxIterationsObservation(
                iterations=run.max_iterations,
                last_action_summary=_summary(run.last_action),
                partial_state=state.snapshot(),
            ),
            generation,
        )

    @staticmethod
    def _resolve(
        workflow_or_query: Workflow | str, query: str | None
    ) -> tuple[Workflow | None, str]:
        if isinstance(workflow_or_query, Workflow):
            if query is None:
                raise TypeError(f"run(workflow) needs a query: run({workflow_or_query.name!r} ...)")
            if not isinstance(query, str):
                raise TypeError(f"query must be a str, not {type(query).__name__}")
            return workflow_or_query, query
        if isinstance(workflow_or_query, str):
            if query is not None:
                raise TypeError("give the query once: run(query) or run(workflow, query=...)")
            return None, workflow_or_query
        raise TypeError(
            f"run takes a query string or a Workflow, not {type(workflow_or_query).__name__}"
        )

    @staticmethod
    def _stopped(run: RunRecord, generation: int) -> bool:
        """Decision 6: a pending deadline or cancel ends the run with an InterruptedObservation."""
        reason = run.interruption()
        if reason is None:
            return False
        run.append(InterruptedObservation(reason=reason), generation)
        return True

    def _dispatch(
        self, action: CallSkillAction, run: RunRecord, generation: int
    ) -> SkillResultObservation | ToolErrorObservation | ValidationErrorObservation:
        names = self._system(run.state.workflow)[1]
        spec = self.registry.get(action.skill_name) if action.skill_name in names else None
        if spec is None:
            return ToolErrorObservation(
                skill_name=action.skill_name,
                error=f"there is no skill named {action.skill_name!r}",
                available_skills=list(names),
            )
        try:
            arguments = spec.validate_arguments(action.arguments)
        except ValidationError as exc:
            return ValidationErrorObservation(
                validator_name="skill_arguments",
                error_type="invalid_arguments",
                feedback=format_validation_error(spec.name, exc),
            )
        # Every skill is watched: its timeout if it has one, the run's deadline and cancel always.
        run.enter_skill(spec.name, spec.timeout_s, list(names))
        try:
            self.supervisor.check_free(spec.name)
            result = self.registry.call(spec, arguments)
            return self._result(spec.name, result)
        except SkillStillRunning as exc:
            error = str(exc)
        except BaseException as exc:  # noqa: BLE001 - a skill's KeyboardInterrupt, GeneratorExit,
            # SystemExit or odd result is its own failure: the model sees it, the run goes on.
            error = f"{type(exc).__name__}: {_safe_str(exc)}"
            log.info("skill %s raised %s", spec.name, error)
        finally:
            run.leave_skill(generation)
        return ToolErrorObservation(skill_name=spec.name, error=error, available_skills=list(names))

    def _result(self, skill_name: str, result: Any) -> SkillResultObservation:
        value = to_jsonable(result)
        if value is None or isinstance(value, bool | int | float):
            return SkillResultObservation(skill_name=skill_name, result=value)
        text = value if isinstance(value, str) else compact_json(value)
        if len(text) <= self.max_result_chars:
            return SkillResultObservation(skill_name=skill_name, result=value)
        cut = len(text) - self.max_result_chars
        return SkillResultObservation(
            skill_name=skill_name,
            result=f"{text[: self.max_result_chars]}…[truncated {cut} more characters]",
            truncated=True,
        )

    @staticmethod
    def _check_final_answer(
        action: FinalAnswerAction, state: AgentState, workflow: Workflow | None
    ) -> ValidationErrorObservation | None:
        for validator in workflow.validators if workflow else ():
            name = getattr(validator, "__name__", type(validator).__name__)
            try:
                verdict = validator(action, state)
            except Exception as exc:
                log.exception("final-answer validator %s raised", name)
                verdict = Result(False, f"The answer could not be checked ({type(exc).__name__}).")
            if not isinstance(verdict, Result):
                raise TypeError(
                    f"validator {name} must return a Result, not {type(verdict).__name__}"
                )
            if not verdict.ok:
                return ValidationErrorObservation(
                    validator_name=name, error_type=None, feedback=verdict.feedback
                )
        return None


__all__ = ["Agent"]
