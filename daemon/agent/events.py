"""The EventStream: every action the model took and everything it observed, as tagged values.

Each event is a pydantic model whose ``type`` field is its class name and the discriminator of the
one :data:`Event` union. :data:`EVENT_ADAPTER` and :data:`STATE_ADAPTER` are the only serializers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    RootModel,
    TypeAdapter,
)
from typing_extensions import TypedDict

from edge_agentd.agent.question import Question

Outcome = Literal["answered", "max_iterations", "retries_exhausted", "interrupted"]


class Usage(BaseModel):
    """What one model call cost. Fields the model does not report stay ``None``."""

    model_config = ConfigDict(frozen=True)

    model_s: float = 0.0
    """Wall-clock seconds spent inside ``model.generate``, measured by the agent."""
    prompt_tokens: int | None = None
    evaluated_tokens: int | None = None
    """Prompt tokens actually run through the model; the rest came from its cache. Text the
    reply was made to start with (a prefix, what the grammar forces before the first sampled
    token) is evaluated with the prompt and counted here."""
    generated_tokens: int | None = None
    scored_tokens: int | None = None
    """Tokens run through the model to compare candidates (``score``, ``likelihood``: skill
    descriptions, result parts, answer heads), in batches, never generated."""
    forced_tokens: int | None = None
    """Reply tokens the grammar forced after a sampled token, evaluated in one batch with it."""
    sampled_tokens: int | None = None
    """Reply tokens the sampler picked: one model call each, the cost a decode rate measures."""
    prefill_s: float | None = None
    decode_s: float | None = None
    stop: str | None = None
    """Why generation ended: ``stop`` (end of turn), ``length`` (token cap) or ``interrupted``."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


MadeBy = Literal["model", "engine"]
"""Who made an action: the model wrote it, or the engine made it on the model's choice (the
guided strategy turns a candidate the model's likelihood chose into its action, without the
model writing it; docs/design.md, "Small models")."""


class CallSkillAction(_Event):
    """The model asked to run a skill."""

    type: Literal["CallSkillAction"] = "CallSkillAction"
    skill_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought: str | None = None
    raw: str = ""
    usage: Usage | None = None
    call_id: str | None = None
    """This call's id in its run (``call_1``, ``call_2``, ...): the observation that answers it
    carries it back, as pydantic-ai's ``tool_call_id`` does. None only in events made by hand."""
    made_by: MadeBy = "model"


class FinalAnswerAction(_Event):
    """The model answered the query."""

    type: Literal["FinalAnswerAction"] = "FinalAnswerAction"
    answer: str
    thought: str | None = None
    raw: str = ""
    usage: Usage | None = None
    made_by: MadeBy = "model"
    """``model``: the model wrote the answer; ``engine``: the engine wrote it from the results,
    on the model's choice among the sentences it rendered (a guided model)."""


class SkillResultObservation(_Event):
    """A skill returned; ``result`` is its JSON-safe return value."""

    type: Literal["SkillResultObservation"] = "SkillResultObservation"
    skill_name: str
    result: Any = None
    truncated: bool = False
    call_id: str | None = None
    """The ``call_id`` of the CallSkillAction this result answers."""


class ToolErrorObservation(_Event):
    """A skill could not run: it does not exist, it raised, or it ran past its timeout."""

    type: Literal["ToolErrorObservation"] = "ToolErrorObservation"
    skill_name: str
    error: str
    available_skills: list[str] = Field(default_factory=list)
    call_id: str | None = None
    """The ``call_id`` of the CallSkillAction that failed."""


class ValidationErrorObservation(_Event):
    """A check failed. The model sees ``feedback`` and is asked to redo its last action.

    When the failure is in the model's own reply (``validator_name="action_parse"`` or
    ``"non_empty_final_answer"``), ``raw`` and ``usage`` record that reply.
    """

    type: Literal["ValidationErrorObservation"] = "ValidationErrorObservation"
    validator_name: str
    error_type: str | None = None
    feedback: str
    will_retry: bool = True
    raw: str | None = None
    usage: Usage | None = None
    call_id: str | None = None
    """For ``validator_name="skill_arguments"``: the ``call_id`` of the call whose arguments
    failed; None for a check of the model's reply or of an answer."""


class ModelErrorObservation(_Event):
    """``model.generate`` failed. Uses one retry, like a validation error."""

    type: Literal["ModelErrorObservation"] = "ModelErrorObservation"
    code: str
    error: str
    will_retry: bool = True
    n_prompt_tokens: int | None = None
    n_ctx: int | None = None
    usage: Usage | None = None


class InterruptedObservation(_Event):
    """The run stopped early because its deadline passed or it was cancelled."""

    type: Literal["InterruptedObservation"] = "InterruptedObservation"
    reason: str


class MaxIterationsObservation(_Event):
    """The run used all its iterations without a final answer."""

    type: Literal["MaxIterationsObservation"] = "MaxIterationsObservation"
    iterations: int
    last_action_summary: str
    partial_state: AgentState


Action = CallSkillAction | FinalAnswerAction
Observation = (
    SkillResultObservation
    | ToolErrorObservation
    | ValidationErrorObservation
    | ModelErrorObservation
    | InterruptedObservation
    | MaxIterationsObservation
)
Event = Annotated[Action | Observation, Field(discriminator="type")]
EVENT_TYPES: tuple[type[BaseModel], ...] = get_args(get_args(Event)[0])
"""Every event class, read off the :data:`Event` union."""


class EventStream(RootModel[list[Event]]):
    """An append-only list of events."""

    root: list[Event] = Field(default_factory=list)

    def append(self, event: Event) -> None:
        if not isinstance(event, EVENT_TYPES):
            raise TypeError(f"EventStream takes events, not {type(event).__name__}")
        self.root.append(event)

    def __iter__(self) -> Iterator[Event]:  # type: ignore[override]
        return iter(self.root)

    def __len__(self) -> int:
        return len(self.root)

    def __getitem__(self, index: int) -> Event:
        return self.root[index]

    @property
    def last(self) -> Event | None:
        return self.root[-1] if self.root else None


class AgentState(BaseModel):
    """One run: the query and everything that happened. ``run`` returns it.

    What the run keeps for its subsystems between steps is the run's
    (:class:`~edge_agentd.agent.run.RunCache`, the workflow it follows included), not the
    state's: the state keeps only its own query, parsed once, which is not serialized."""

    query: str
    stream: EventStream = Field(default_factory=EventStream)
    _question: Question | None = PrivateAttr(default=None)

    @property
    def question(self) -> Question:
        """The query, parsed once for the run: grounding and the guidance read this."""
        private = self.__pydantic_private__
        question: Question | None = private["_question"]  # type: ignore[index]
        if question is None or question.text != self.query:
            question = private["_question"] = Question.parse(self.query)  # type: ignore[index]
        return question

    def __eq__(self, other: object) -> bool:
        # The workflow is the run's, not part of what happened.
        if not isinstance(other, AgentState):
            return NotImplemented
        return self.query == other.query and self.stream == other.stream

    __hash__ = None  # type: ignore[assignment]

    def snapshot(self) -> AgentState:
        """A deep copy of the state as it is now."""
        return AgentState(query=self.query, stream=self.stream.model_copy(deep=True))

    @property
    def outcome(self) -> Outcome | None:
        """Why the run stopped, read off its last event; ``None`` while it has not stopped."""
        last = self.stream.last
        if isinstance(last, FinalAnswerAction):
            return "answered"
        if isinstance(last, MaxIterationsObservation):
            return "max_iterations"
        if isinstance(last, InterruptedObservation):
            return "interrupted"
        if isinstance(last, ValidationErrorObservation | ModelErrorObservation) and not (
            last.will_retry
        ):
            return "retries_exhausted"
        return None

    @property
    def final_answer(self) -> str | None:
        last = self.stream.last
        return last.answer if isinstance(last, FinalAnswerAction) else None


MaxIterationsObservation.model_rebuild()
AgentState.model_rebuild()
EventStream.model_rebuild()

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class _WireState(TypedDict):
    query: str
    events: EventStream


def _events_key(state: AgentState) -> _WireState:
    return {"query": state.query, "events": state.stream}


def _stream_key(value: Any) -> Any:
    if isinstance(value, dict) and "events" in value and "stream" not in value:
        return {("stream" if key == "events" else key): item for key, item in value.items()}
    return value


STATE_ADAPTER: TypeAdapter[AgentState] = TypeAdapter(
    Annotated[
        AgentState,
        PlainSerializer(_events_key, return_type=_WireState),
        BeforeValidator(_stream_key),
    ]
)
"""A finished run as the wire carries it (a ``run`` result's ``state``): ``{query, events}``.

The field is called ``events`` there, not ``stream``, and protocol v1 keeps it so. Only this
top-level state is renamed: a ``MaxIterationsObservation``'s ``partial_state`` keeps ``stream``,
as it always has on the wire."""
