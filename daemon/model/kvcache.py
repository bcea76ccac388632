"""What the KV cache holds: the longest common prefix is kept, only the rest is evaluated.

:class:`KVCache` remembers which tokens the context holds, in order from position 0. Each prompt
is compared with that list and the cache is cut back to the longest common prefix; only the
tokens after it go through the model. Candidates are scored the same way: each is evaluated after
the shared prefix and cut away again, so the prefix is evaluated once for all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from edge_agent.model.runtime import DecodeFailed, LlamaRuntime


def log_softmax(logits: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    shifted = logits.astype(np.float64) - float(logits.max())
    result: npt.NDArray[np.float64] = shifted - np.log(np.exp(shifted).sum())
    return result


class KVCache:
    """The tokens in a runtime's context, and the only way tokens get evaluated into it."""

    def __init__(self, runtime: LlamaRuntime) -> None:
        self._runtime = runtime
        self.tokens: list[int] = []
        """The tokens whose keys and values are in the cache, in order from position 0."""

    def __len__(self) -> int:
        return len(self.tokens)

    def reuse(self, tokens: Sequence[int]) -> int:
        """Keep the longest cached prefix of ``tokens`` (all but the last) and drop the rest."""
        cached = self.tokens
        limit = min(len(cached), len(tokens) - 1)
        keep = 0
        while keep < limit and cached[keep] == tokens[keep]:
            keep += 1
        self.truncate(keep)
        return len(self.tokens)

    def truncate(self, length: int) -> None:
        """Forget every cached token from position ``length`` on."""
        if length >= len(self.tokens):
            return
        if not self._runtime.forget_from(length):
            self.clear()
            return
        del self.tokens[length:]

    def clear(self) -> None:
        self._runtime.forget_all()
        self.tokens = []

    def evaluate(
        self, tokens: Sequence[int], interrupted: Callable[[], bool] | None = None
    ) -> bool:
        """Run ``tokens`` through the model after what is cached; False if interrupted first.
        The logits after the last token can then be read with :meth:`last_logits`."""
        step = self._runtime.sizes.n_batch
        for start in range(0, len(tokens), step):
            if interrupted is not None and start and interrupted():
                return False
            self._decode(list(tokens[start : start + step]), all_logits=False)
        return True

    def last_logits(self) -> npt.NDArray[np.float32]:
        return self._runtime.logits(-1)

    def score(self, continuation: Sequence[int]) -> list[float]:
        """The log-probability of each token of ``continuation`` after what is cached.

        The continuation is evaluated and then cut away again, so the cache ends as it began.
        The logits after the cached tokens must be current (the last call evaluated them).
        """
        if not continuation:
            return []
        start = len(self.tokens)
        scores = [float(log_softmax(self.last_logits())[continuation[0]])]
        rest = list(continuation[:-1])
        try:
            step = self._runtime.sizes.n_batch
            for offset in range(0, len(rest), step):
                chunk = rest[offset : offset + step]
                self._decode(chunk, all_logits=True)
                for i in range(len(chunk)):
                    following = continuation[offset + i + 1]
                    scores.append(float(log_softmax(self._runtime.logits(i))[following]))
        finally:
            self.truncate(start)
        return scores

    def _decode(self, chunk: list[int], *, all_logits: bool) -> None:
        try:
            self._runtime.decode(chunk, len(self.tokens), all_logits=all_logits)
        except DecodeFailed:
            # The cache may hold part of the batch now; forget it all rather than guess.
            self.clear()
            raise
        self.tokens.extend(chunk)


__all__ = ["KVCache", "log_softmax"]
