"""A scripted model for tests and demos: it replays its replies in order."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from edge_agent.model.protocol import ModelError


class MockModelExhausted(ModelError):
    """The MockModel was asked for more replies than it was given."""

    code = "mock_exhausted"


class MockModel:
    """Returns its scripted strings in order and records every prompt in ``.prompts``."""

    def __init__(self, responses: Iterable[str]) -> None:
        if isinstance(responses, str):
            raise TypeError("MockModel takes a list of replies, not a single string")
        self.responses = list(responses)
        if not all(isinstance(r, str) for r in self.responses):
            raise TypeError("MockModel replies must be strings")
        self.prompts: list[str] = []
        self.calls: list[dict[str, Any]] = []

    def generate(self, prompt: str, **kwargs: Any) -> str:
        self.prompts.append(prompt)
        self.calls.append(kwargs)
        index = len(self.prompts) - 1
        if index >= len(self.responses):
            raise MockModelExhausted(
                f"MockModel has only {len(self.responses)} scripted replies; call {index + 1} "
                "has none"
            )
        return self.responses[index]
