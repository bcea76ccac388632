"""How the next token is picked: greedy at temperature 0, else sampled from a seeded generator."""

from __future__ import annotations

import random

import numpy as np
import numpy.typing as npt


class Sampler:
    """Picks tokens from logits; owns the random generator, so a seed makes replies repeatable."""

    def __init__(self, temperature: float = 0.0, seed: int = 0) -> None:
        self.temperature = float(temperature)
        # The standard library's generator, not numpy.random: that package alone keeps
        # megabytes resident for one uniform draw per token (docs/design.md, "Budgets": memory).
        self._rng = random.Random(int(seed))

    def pick(
        self,
        logits: npt.NDArray[np.float32],
        temperature: float | None = None,
        ids: npt.NDArray[np.int32] | None = None,
    ) -> int:
        """Greedy, or sampled at ``temperature``, among ``ids`` (default: the whole vocabulary)
        whose ``logits`` are given in the same order; -inf marks a token that is not allowed."""
        temp = self.temperature if temperature is None else temperature
        if temp <= 0.0:
            best = int(np.argmax(logits))
        else:
            scaled = np.where(np.isfinite(logits), logits / temp, -np.inf)
            scaled -= scaled.max()
            cumulative = np.cumsum(np.exp(scaled, dtype=np.float64))
            # Inverse-CDF draw; a token with no weight (-inf) is never picked.
            point = self._rng.random() * float(cumulative[-1])
            best = min(int(np.searchsorted(cumulative, point, side="right")), len(cumulative) - 1)
            while best > 0 and cumulative[best] == cumulative[best - 1]:
                best -= 1
        return best if ids is None else int(ids[best])


__all__ = ["Sampler"]
