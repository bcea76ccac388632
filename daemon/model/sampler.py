"""How the next token is picked: greedy at temperature 0, else sampled from a seeded generator."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


class Sampler:
    """Picks tokens from logits; owns the random generator, so a seed makes replies repeatable."""

    def __init__(self, temperature: float = 0.0, seed: int = 0) -> None:
        self.temperature = float(temperature)
        self._rng = np.random.default_rng(int(seed))

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
            weights = np.exp(scaled)
            best = int(self._rng.choice(len(weights), p=weights / weights.sum()))
        return best if ids is None else int(ids[best])


__all__ = ["Sampler"]
