"""Log-probabilities of a few tokens from a vocabulary's logits, with no vocabulary-sized garbage.

A log-softmax over a large vocabulary (a quarter of a million tokens) made the obvious way
allocates two vocabulary-sized arrays per token scored, and copying logits to keep them costs one
more. glibc then carves those blocks from a run thread's arena and keeps their pages resident
after the run, so a daemon that scores for months grows by what its arenas fragment into. Here
one scratch array, owned by its scorer, is reused for every call, and logits are read once, right
after their batch, for the tokens that will be asked of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt


class LogSoftmax:
    """log softmax(logits)[token] for chosen tokens, in one reused scratch array."""

    def __init__(self) -> None:
        self._scratch: npt.NDArray[np.float32] = np.empty(0, dtype=np.float32)

    def of(self, logits: npt.NDArray[np.float32], tokens: Iterable[int]) -> dict[int, float]:
        """Each token's log-probability under ``logits`` (read now: their buffer is reused)."""
        if self._scratch.shape != logits.shape:
            self._scratch = np.empty(logits.shape, dtype=np.float32)
        scratch = self._scratch
        top = float(logits.max())
        np.subtract(logits, np.float32(top), out=scratch)
        np.exp(scratch, out=scratch)
        log_total = math.log(float(scratch.sum(dtype=np.float64)))
        return {token: float(logits[token]) - top - log_total for token in tokens}

    def at(self, logits: npt.NDArray[np.float32], token: int) -> float:
        """One token's log-probability under ``logits``."""
        return self.of(logits, (token,))[token]


__all__ = ["LogSoftmax"]
