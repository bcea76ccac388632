"""What the KV cache holds: the longest common prefix is kept, only the rest is evaluated.

The handle remembers which tokens its KV cache holds, in order from position 0. Each prompt is
compared with that list and the cache is cut back to the longest common prefix; only the tokens
after it go through the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt

from edge_agent.agent.protocol import ContextExceeded, ModelError
from edge_agent.model.handle import LlamaHandle


class DecodeFailed(ModelError):
    """llama.cpp could not evaluate a batch of tokens."""

    code = "decode_failed"


class CachedHandle(LlamaHandle):
    """A :class:`LlamaHandle` that keeps what its cache holds and evaluates only what is new."""

    def _reuse(self, tokens: list[int]) -> int:
        """Keep the longest cached prefix of ``tokens`` (all but the last) and drop the rest."""
        cached = self._cached
        limit = min(len(cached), len(tokens) - 1)
        keep = 0
        while keep < limit and cached[keep] == tokens[keep]:
            keep += 1
        if keep < len(cached):
            if not llama_cpp.llama_memory_seq_rm(self._memory, -1, keep, -1):
                llama_cpp.llama_memory_clear(self._memory, True)
                keep = 0
            del cached[keep:]
        return keep

    def _evaluate(self, tokens: list[int], interrupted: Callable[[], bool] | None = None) -> bool:
        """Run ``tokens`` through the model after what is cached; False if interrupted first."""
        for start in range(0, len(tokens), self.n_batch):
            if interrupted is not None and start and interrupted():
                return False
            chunk: list[Any] = tokens[start : start + self.n_batch]
            array = self._batch_tokens
            array[: len(chunk)] = chunk
            batch = llama_cpp.llama_batch_get_one(array, len(chunk))
            status = llama_cpp.llama_decode(self._context, batch)
            if status != 0:
                # The cache may hold part of the batch now; forget it all rather than guess.
                llama_cpp.llama_memory_clear(self._memory, True)
                self._cached = []
                raise DecodeFailed(f"llama.cpp failed to evaluate {len(chunk)} tokens ({status})")
            self._cached.extend(chunk)
        return True

    def _logits(self) -> npt.NDArray[np.float32]:
        pointer = llama_cpp.llama_get_logits_ith(self._context, -1)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))

    def warm_up(self, text: str) -> None:
        """Evaluate ``text`` (the prompt prefix every request shares) into the cache now."""
        if not isinstance(text, str):
            raise TypeError(f"warm_up takes a str, not {type(text).__name__}")
        with self._lock:
            self._check_open()
            tokens = self.tokenize(text)
            # A shared prefix that leaves no room for a reply makes every request fail: say so now.
            if len(tokens) + self.max_tokens > self.n_ctx:
                raise ContextExceeded(len(tokens), self.n_ctx)
            keep = self._reuse([*tokens, -1])
            self._evaluate(tokens[keep:])

    def forget(self) -> None:
        """Empty the cache, so the next prompt is evaluated from scratch (for comparisons)."""
        with self._lock:
            self._check_open()
            llama_cpp.llama_memory_clear(self._memory, True)
            self._cached = []


__all__ = ["CachedHandle", "DecodeFailed"]
