"""The seam between the agent and a model, declared in full.

The loop's contract asks only for ``generate(prompt, **kwargs) -> str``: any such object can drive
an :class:`~edge_agentd.agent.loop.Agent`. A model that wants more of the framework (its own turn
markers, a warm cache, a status report) implements :class:`ModelHandle` in full; the agent wraps a
bare one in :class:`BareModel`, which gives the defaults. Nothing else looks for optional members.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from edge_agentd.agent.events import MadeBy, Usage
from edge_agentd.agent.prompt import PLAIN, ChatFormat


@runtime_checkable
class SupportsGenerate(Protocol):
    """The least a model must do: return its raw reply to ``prompt``."""

    def generate(self, prompt: str, **kwargs: Any) -> str: ...


@dataclasses.dataclass
class TokenCounts:
    """What a model's calls on one thread cost since it was last asked (:meth:`take_tokens`).

    ``prompt`` is the longest prompt one call read; the others are sums over the calls. The
    fields mean what :class:`~edge_agentd.agent.events.Usage`'s of the same names mean."""

    prompt: int = 0
    evaluated: int = 0
    generated: int = 0
    scored: int = 0
    forced: int = 0
    sampled: int = 0
    calls: int = 0

    def add(self, *, prompt: int = 0, **counts: int) -> None:
        """Record one call: the prompt it read and what it evaluated, scored and decoded."""
        self.prompt = max(self.prompt, prompt)
        self.calls += 1
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)


def step_usage(reported: Usage, counts: TokenCounts | None) -> Usage:
    """A step's usage: the reply's own (its time, why it stopped), with the token counts of all
    the step's calls where the model counts them (else the reply's counts, as they are)."""
    if counts is None or counts.calls == 0:
        return reported
    return reported.model_copy(
        update={
            "prompt_tokens": counts.prompt,
            "evaluated_tokens": counts.evaluated,
            "generated_tokens": counts.generated,
            "scored_tokens": counts.scored,
            "forced_tokens": counts.forced,
            "sampled_tokens": counts.sampled,
        }
    )


@runtime_checkable
class ModelHandle(Protocol):
    """A language model, as the agent and the daemon use it.

    ``generate`` returns the model's raw reply to ``prompt``; a :class:`Completion` also says what
    it cost. The agent passes keyword options a handle may use or ignore:

    - ``action_schema``: the JSON schema of one valid action, for constrained decoding;
    - ``deadline``: a ``time.monotonic()`` instant, and ``should_stop``: a cancel check;
    - ``prefix``: text the reply must start with (the model writes the rest).

    ``generate`` raises :class:`ModelError` for a failure the run should record.
    """

    @property
    def chat_format(self) -> ChatFormat:
        """The model's turn markers."""
        ...

    @property
    def info(self) -> dict[str, Any]:
        """What the daemon's ``status`` reports about the model (msgpack-safe values)."""
        ...

    @property
    def uses_action_schema(self) -> bool:
        """Whether ``generate`` may decode under ``action_schema``: the loop builds the grounded
        schema (its answer pattern, a grammar's worth of work each step) only for such a model,
        and holds the others' answers to the same rules by its validator alone."""
        ...

    def generate(self, prompt: str, **kwargs: Any) -> str: ...

    def warm_up(self, preamble: str) -> None:
        """Evaluate text every prompt starts with, so the first query pays only for its own."""
        ...

    def reset(self) -> None:
        """Forget per-run state before a new run (a script starts over; a cache is kept). It must
        return at once: the daemon calls it on its serving loop as it starts each run."""
        ...

    def score(
        self, prompt: str, continuations: Sequence[str], *, whole: bool = False
    ) -> list[list[float]]:
        """The log-probability of each token of each continuation, were it the reply's start:
        up to the token that tells it apart from the others, or with ``whole`` every token.

        A model that keeps a cache evaluates ``prompt`` once for all of them. One that cannot
        score raises :class:`ScoringUnsupported`.
        """
        ...

    def likelihood(self, prompts: Sequence[str], text: str) -> list[float]:
        """log P(text | prompt) for each prompt, each read as a conversation of its own.

        One that cannot score raises :class:`ScoringUnsupported`.
        """
        ...

    def take_tokens(self) -> TokenCounts | None:
        """What this thread's calls cost since the last ``take_tokens``, and start counting
        again; None for a model that does not count. The agent reads it once per step, so a
        step's usage covers all of its calls (generate, score and likelihood alike)."""
        ...


class BareModel:
    """A :class:`ModelHandle` around an object that only has ``generate``."""

    def __init__(self, model: SupportsGenerate) -> None:
        self.model = model

    @property
    def chat_format(self) -> ChatFormat:
        return PLAIN

    @property
    def info(self) -> dict[str, Any]:
        return {"kind": type(self.model).__name__}

    @property
    def uses_action_schema(self) -> bool:
        """A bare ``generate`` takes the keyword options and may decode under the schema."""
        return True

    def generate(self, prompt: str, **kwargs: Any) -> str:
        return self.model.generate(prompt, **kwargs)

    def warm_up(self, preamble: str) -> None:
        """A bare model has no cache to warm."""

    def reset(self) -> None:
        """A bare model keeps no per-run state."""

    def score(
        self, prompt: str, continuations: Sequence[str], *, whole: bool = False
    ) -> list[list[float]]:
        raise ScoringUnsupported(f"{type(self.model).__name__} cannot score continuations")

    def likelihood(self, prompts: Sequence[str], text: str) -> list[float]:
        raise ScoringUnsupported(f"{type(self.model).__name__} cannot score texts")

    def take_tokens(self) -> TokenCounts | None:
        """A bare model's replies carry their own usage, if any."""
        return None


HANDLE_MEMBERS = tuple(sorted(name for name in vars(ModelHandle) if not name.startswith("_")))
"""What a :class:`ModelHandle` has, read off the protocol once: ``isinstance`` against a runtime
protocol works its members out again at every check, which cost more than the rest of building
an Agent."""


def full_handle(model: SupportsGenerate | ModelHandle) -> ModelHandle:
    """``model`` itself when it implements the whole protocol, else wrapped in BareModel."""
    if all(hasattr(model, name) for name in HANDLE_MEMBERS):
        return typing.cast(ModelHandle, model)
    return BareModel(model)


class Completion(str):
    """A reply that also says what it cost, and who made it: ``"model"``, or ``"engine"`` for
    a reply the engine wrote on the model's choice (a rendered answer); it is a ``str`` for
    every other purpose."""

    __slots__ = ("made_by", "usage")
    usage: Usage | None
    made_by: MadeBy

    def __new__(
        cls, text: str, usage: Usage | None = None, *, made_by: MadeBy = "model"
    ) -> Completion:
        self = super().__new__(cls, text)
        self.usage = usage
        self.made_by = made_by
        return self


class ModelError(Exception):
    """A model call failed in a way the run should record and may retry."""

    code = "model_error"


class ScoringUnsupported(ModelError):
    """The model can only generate; strategies that compare candidates fall back to that."""

    code = "scoring_unsupported"


class ContextExceeded(ModelError):
    """The prompt would not fit the context window with room for a reply."""

    code = "context_exceeded"

    def __init__(self, n_prompt_tokens: int, n_ctx: int) -> None:
        super().__init__(
            f"the prompt has {n_prompt_tokens} tokens, more than the context of {n_ctx} "
            "tokens leaves room for"
        )
        self.n_prompt_tokens = n_prompt_tokens
        self.n_ctx = n_ctx
