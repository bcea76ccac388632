"""The scripted model: replies written in advance, for tests, demos and ``--model mock:FILE``.

It ships with the package so that the loop, the daemon and every client can be driven without
weights. Each reply is a string, or ``{"text": "...", "delay_s": 0.5}`` to make that reply take a
while, like a slow model (for tests of cancel and shutdown mid-run), or
``{"text": "...", "hang_while": "/path"}``: that call does not return while the file exists,
whatever its deadline or cancel, like a C call that never comes back (for the wedged-run tests).
A daemon calls ``reset`` before each run, so every run replays the script from its first reply.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from edge_agentd.agent.events import Usage
from edge_agentd.agent.prompt import PLAIN, ChatFormat
from edge_agentd.agent.protocol import Completion, ModelError, TokenCounts

MAX_DELAY_S = 3600.0
UNSCRIPTED = -1000.0
"""The log-probability of a continuation no scripted score covers: below any scripted one."""


class MockModelExhausted(ModelError):
    """The scripted model was asked for more replies than it was given."""

    code = "mock_exhausted"


class ScriptFileError(ValueError):
    """The mock file is missing or not a list of scripted replies."""


Reply = str | dict[str, Any]


def _parse_reply(item: object, index: int, source: str) -> tuple[str, float]:
    if isinstance(item, str):
        return item, 0.0
    if (
        isinstance(item, dict)
        and isinstance(item.get("text"), str)
        and set(item) <= {"text", "delay_s", "hang_while"}
        and isinstance(item.get("hang_while", ""), str)
    ):
        delay = item.get("delay_s", 0.0)
        if (
            isinstance(delay, int | float)
            and not isinstance(delay, bool)
            and (0 <= delay <= MAX_DELAY_S)
        ):
            return item["text"], float(delay)
    raise ScriptFileError(
        f'{source}: reply {index} must be a string or {{"text": str, "delay_s": seconds}}'
        ' (or {"text": str, "hang_while": path})'
    )


def _hang_path(item: object) -> Path | None:
    path = item.get("hang_while") if isinstance(item, dict) else None
    return Path(path) if isinstance(path, str) and path else None


class MockModel:
    """Returns its scripted replies in order and records every prompt in ``.prompts``.

    ``scores`` scripts :meth:`score`: a continuation's log-probability is the value of the
    longest key it starts with (``UNSCRIPTED`` when none), or, for a key that is a
    ``(marker, text)`` pair,
    only in prompts that contain ``marker``. The value is the whole continuation's; it is
    reported as its first token's.

    A script decodes nothing, so by default the loop does not build it the grounded action
    schema; ``uses_action_schema=True`` stands it in for a model that decodes under it (each
    call's ``action_schema`` is then recorded in ``.calls`` as such a model would get it).
    """

    def __init__(
        self,
        responses: Iterable[Reply],
        *,
        source: str = "<script>",
        scores: Mapping[str | tuple[str, str], float] | None = None,
        uses_action_schema: bool = False,
    ) -> None:
        if isinstance(responses, str | bytes):
            raise TypeError("MockModel takes a list of replies, not a single string")
        items = list(responses)
        try:
            self.replies = [_parse_reply(item, i, source) for i, item in enumerate(items)]
        except ScriptFileError as exc:
            raise TypeError(f"MockModel replies must be strings: {exc}") from None
        self.responses = [text for text, _ in self.replies]
        self._hangs = {i: path for i, item in enumerate(items) if (path := _hang_path(item))}
        self.source = source
        self.scores = dict(scores or {})
        self._uses_action_schema = uses_action_schema
        self.scored: list[tuple[str, list[str]]] = []
        """Every (prompt, continuations) that :meth:`score` was asked about."""
        self.prompts: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self._next = 0
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path) -> MockModel:
        """The script in a JSON file: a list of replies. Raises ScriptFileError."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ScriptFileError(f"{path}: cannot read the mock replies: {exc}") from None
        if not isinstance(data, list):
            raise ScriptFileError(f"{path}: the mock file must hold a JSON list of replies")
        for index, item in enumerate(data):
            _parse_reply(item, index, str(path))
        return cls(data, source=str(path))

    # -- the ModelHandle protocol -------------------------------------------------------------

    @property
    def chat_format(self) -> ChatFormat:
        return PLAIN

    @property
    def info(self) -> dict[str, Any]:
        return {"kind": "mock", "file": self.source, "replies": len(self.replies)}

    @property
    def uses_action_schema(self) -> bool:
        return self._uses_action_schema

    def warm_up(self, preamble: str) -> None:
        """Nothing to warm: the script has no cache."""

    def reset(self) -> None:
        """Start the script over from its first reply, forgetting the prompts recorded so far."""
        with self._lock:
            self._next = 0
            self.prompts.clear()
            self.calls.clear()
            self.scored.clear()

    def score(
        self, prompt: str, continuations: Sequence[str], *, whole: bool = False
    ) -> list[list[float]]:
        """The scripted log-probabilities (see the class docstring), ``whole`` or not: the
        scripted value is the whole continuation's."""
        with self._lock:
            self.scored.append((prompt, list(continuations)))
        return [[_scripted_score(self.scores, prompt, c)] for c in continuations]

    def likelihood(self, prompts: Sequence[str], text: str) -> list[float]:
        """The scripted log-probability of ``text`` after each prompt (see the class docstring)."""
        with self._lock:
            self.scored.extend((prompt, [text]) for prompt in prompts)
        return [_scripted_score(self.scores, prompt, text) for prompt in prompts]

    def take_tokens(self) -> TokenCounts | None:
        """A script has no tokens to count."""
        return None

    def generate(self, prompt: str, **kwargs: Any) -> str:
        with self._lock:
            self.prompts.append(prompt)
            self.calls.append(kwargs)
            index = self._next
            self._next += 1
        if index >= len(self.replies):
            raise MockModelExhausted(
                f"the script {self.source} has {len(self.replies)} replies; call {index + 1} "
                "has none"
            )
        text, delay = self.replies[index]
        hang = self._hangs.get(index)
        while hang is not None and hang.exists():
            time.sleep(0.05)  # deaf to the deadline and cancel: a call that does not come back
        prefix = kwargs.get("prefix", "")
        if isinstance(prefix, str) and prefix and not text.startswith(prefix):
            # A scripted reply is the whole reply; a forced start the script lacks is prepended.
            text = prefix + text
        if delay and not _wait(delay, kwargs.get("deadline"), kwargs.get("should_stop")):
            # Like llama.cpp stopped mid-reply: no text, and the loop sees why at its next check.
            return Completion("", Usage(stop="interrupted"))
        return text


def _scripted_score(
    scores: Mapping[str | tuple[str, str], float], prompt: str, continuation: str
) -> float:
    best, length = UNSCRIPTED, -1
    for key, value in scores.items():
        marker, text = key if isinstance(key, tuple) else ("", key)
        if marker in prompt and continuation.startswith(text) and len(text) > length:
            best, length = value, len(text)
    return best


def _wait(delay: float, deadline: Any, should_stop: Callable[[], bool] | None) -> bool:
    """Sleep ``delay`` seconds like a slow model; False when the run was interrupted first."""
    until = time.monotonic() + delay
    while (left := until - time.monotonic()) > 0:
        if should_stop is not None and should_stop():
            return False
        if isinstance(deadline, int | float) and time.monotonic() >= deadline:
            return False
        time.sleep(min(left, 0.01))
    return True


__all__ = ["MockModel", "MockModelExhausted", "ScriptFileError"]
