"""A Gemma GGUF kept resident through llama.cpp, that never re-reads what it has already seen.

The handle remembers which tokens its KV cache holds. Each prompt is tokenized, compared with that
list, and only the tokens after the longest common prefix are evaluated: across the steps of one
run (the prompt only grows) and across runs (the system part is byte-identical). Gemma's sliding
window cache is only safe to cut back partially at full size, hence ``swa_full=True``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edge_agent.agent.protocol import Completion, ContextExceeded
from edge_agent.model.decoding import Decoder, _completion
from edge_agent.model.embedded import default_model_path
from edge_agent.model.gguf import ModelLoadError
from edge_agent.model.handle import ModelClosed
from edge_agent.model.kvcache import DecodeFailed
from edge_agent.model.sizing import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_BATCH,
    DEFAULT_N_CTX,
    DEFAULT_N_UBATCH,
    _positive_int,
    default_threads,
)

log = logging.getLogger(__name__)


class LlamaModel(Decoder):
    """A resident GGUF model; satisfies :class:`edge_agent.model.ModelHandle`.

    ``generate(prompt, action_schema=..., deadline=..., should_stop=..., max_tokens=...)`` returns
    a :class:`Completion` whose ``usage`` says how many prompt tokens were actually evaluated.
    One call runs at a time; concurrent callers wait.

    Loading, facts and tokens live in :class:`~edge_agent.model.handle.LlamaHandle`, the prefix
    bookkeeping in :class:`~edge_agent.model.kvcache.CachedHandle`, the token loop in
    :class:`~edge_agent.model.decoding.Decoder`; this class holds ``generate``.
    """

    def __enter__(self) -> LlamaModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self) -> None:
        """Nothing to forget between runs: the KV cache is kept on purpose."""

    # -- generation -----------------------------------------------------------------------------

    def generate(
        self,
        prompt: str,
        *,
        action_schema: dict[str, Any] | None = None,
        constrained: bool = True,
        deadline: float | None = None,
        should_stop: Callable[[], bool] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        full_grammar_pass: bool = False,
        **_ignored: Any,
    ) -> Completion:
        """The model's reply to ``prompt``, up to the end of its turn or ``max_tokens`` tokens.

        With ``action_schema`` (and ``constrained`` left on) the reply follows that JSON schema.
        ``deadline`` (a ``time.monotonic()`` instant) and ``should_stop`` are checked between
        tokens; either ends the reply with ``usage.stop == "interrupted"``. Raises
        :class:`ContextExceeded` when the prompt leaves no room for ``max_tokens``.
        ``full_grammar_pass=True`` masks the whole vocabulary at every token, as
        llama-cpp-python does; it exists to measure what the default path saves.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, not {type(prompt).__name__}")
        cap = self.max_tokens if max_tokens is None else _positive_int("max_tokens", max_tokens)
        temp = self.temperature if temperature is None else float(temperature)

        def interrupted() -> bool:
            if should_stop is not None and should_stop():
                return True
            return deadline is not None and time.monotonic() >= deadline

        with self._lock:
            self._check_open()
            tokens = self.tokenize(prompt) or [self._bos]
            if len(tokens) + cap > self.n_ctx:
                raise ContextExceeded(len(tokens), self.n_ctx)
            grammar = (
                self._grammars.get(action_schema)
                if constrained and action_schema is not None
                else None
            )
            started = time.perf_counter()
            keep = self._reuse(tokens)
            evaluated = len(tokens) - keep
            if not self._evaluate(tokens[keep:], interrupted):
                return _completion(
                    b"",
                    len(tokens),
                    evaluated,
                    0,
                    started=started,
                    prefill_done=None,
                    stop="interrupted",
                )
            prefill_done = time.perf_counter()
            text, generated, stop = self._decode(
                grammar, cap, temp, interrupted, full_pass=full_grammar_pass
            )
            return _completion(
                text,
                len(tokens),
                evaluated,
                generated,
                started=started,
                prefill_done=prefill_done,
                stop=stop,
            )


def load_model(
    path: str | os.PathLike[str] | None = None,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    warm_up: str | None = None,
    **options: Any,
) -> LlamaModel:
    """Load a Gemma GGUF (``path=None``: the embedded Gemma 3 270M) and warm it up.

    ``warm_up`` is text to evaluate at once, normally ``agent.preamble()``, so the first query
    pays only for its own tokens. Raises :class:`ModelLoadError` with a message that says how to
    fix a missing, truncated or unsupported file.
    """
    sha256: str | None = None
    if path is None:
        resolved, sha256 = default_model_path()
    elif isinstance(path, str | os.PathLike):
        resolved = Path(path)
    else:
        raise TypeError(f"path must be a str or a path, not {type(path).__name__}")
    model = LlamaModel(resolved, n_ctx=n_ctx, n_threads=n_threads, sha256=sha256, **options)
    if warm_up is not None:
        try:
            model.warm_up(warm_up)
        except BaseException:
            model.close()
            raise
    return model


# The sizes and ModelClosed/DecodeFailed moved out; they stay importable from here.
__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_BATCH",
    "DEFAULT_N_CTX",
    "DEFAULT_N_UBATCH",
    "DecodeFailed",
    "LlamaModel",
    "ModelClosed",
    "ModelLoadError",
    "default_threads",
    "load_model",
]
