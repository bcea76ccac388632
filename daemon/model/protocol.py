"""The seam between the agent and a model: anything with ``generate(prompt, **kwargs) -> str``."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from edge_agent.events import Usage


@runtime_checkable
class ModelHandle(Protocol):
    """A language model. ``generate`` returns the model's raw reply to ``prompt``.

    The agent passes keyword options a handle may use or ignore: ``action_schema`` (the JSON
    schema of one valid action, for constrained decoding), ``deadline`` (a ``time.monotonic()``
    instant) and ``should_stop`` (a callable that says the run was cancelled). A handle may also
    have a ``chat_format`` attribute (a :class:`edge_agent.prompt.ChatFormat`) and return a
    :class:`Completion` to report its usage.
    """

    def generate(self, prompt: str, **kwargs: Any) -> str: ...


class Completion(str):
    """A reply that also says what it cost; it is a ``str`` for every other purpose."""

    __slots__ = ("usage",)
    usage: Usage | None

    def __new__(cls, text: str, usage: Usage | None = None) -> Completion:
        self = super().__new__(cls, text)
        self.usage = usage
        return self


class ModelError(Exception):
    """A model call failed in a way the run should record and may retry."""

    code = "model_error"


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
