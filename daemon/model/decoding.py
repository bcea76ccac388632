"""The decoding loop: pick a token (greedy or sampled, grammar-masked), evaluate it, repeat.

It ends at an end-of-generation token, a stop string, the token cap or an interruption, and
:func:`_completion` turns what came out into a :class:`~edge_agent.agent.protocol.Completion`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from edge_agent.agent.events import Usage
from edge_agent.agent.protocol import Completion
from edge_agent.model.constrained import ActionGrammar
from edge_agent.model.kvcache import CachedHandle


class Decoder(CachedHandle):
    """A :class:`CachedHandle` that samples replies token by token after the prompt is evaluated."""

    def _pick(
        self,
        logits: npt.NDArray[np.float32],
        temperature: float,
        ids: npt.NDArray[np.int32] | None = None,
    ) -> int:
        """Greedy, or sampled at ``temperature``, among ``ids`` (default: the whole vocabulary)
        whose ``logits`` are given in the same order; -inf marks a token that is not allowed."""
        if temperature <= 0.0:
            best = int(np.argmax(logits))
        else:
            scaled = np.where(np.isfinite(logits), logits / temperature, -np.inf)
            scaled -= scaled.max()
            weights = np.exp(scaled)
            best = int(self._rng.choice(len(weights), p=weights / weights.sum()))
        return best if ids is None else int(ids[best])

    def _decode(
        self,
        grammar: ActionGrammar | None,
        cap: int,
        temperature: float,
        interrupted: Callable[[], bool],
        *,
        full_pass: bool = False,
    ) -> tuple[bytes, int, str]:
        """Sample up to ``cap`` tokens: (text, tokens generated, stop reason)."""
        if grammar is not None:
            grammar.reset()
        eog = self._eog
        stops = [s.encode() for s in self.chat_format.stop if s]
        text = bytearray()
        generated = 0
        stop = "length"
        while generated < cap:
            logits = self._logits()
            token = self._pick(logits, temperature)
            if grammar is not None and (full_pass or not grammar.allows(token)):
                allowed, allowed_logits = grammar.mask(logits, full=full_pass)
                token = self._pick(allowed_logits, temperature, allowed)
            if token in eog:
                stop = "stop"
                break
            if grammar is not None:
                grammar.accept(token)
            generated += 1
            piece = self._piece_bytes(token)
            text += piece
            if piece and stops:
                hit = min((i for s in stops if (i := text.find(s)) >= 0), default=-1)
                if hit >= 0:
                    del text[hit:]
                    stop = "stop"
                    break
            if generated >= cap:
                break
            if interrupted():
                stop = "interrupted"
                break
            self._evaluate([token])
        return bytes(text), generated, stop


def _completion(
    text: bytes,
    n_prompt: int,
    evaluated: int,
    generated: int,
    *,
    started: float,
    prefill_done: float | None,
    stop: str,
) -> Completion:
    now = time.perf_counter()
    usage = Usage(
        model_s=now - started,
        prompt_tokens=n_prompt,
        evaluated_tokens=evaluated,
        generated_tokens=generated,
        prefill_s=(prefill_done or now) - started,
        decode_s=now - prefill_done if prefill_done is not None else 0.0,
        stop=stop,
    )
    # A reply cut inside a multi-byte character keeps a replacement mark, never raises.
    return Completion(text.decode("utf-8", errors="replace"), usage=usage)


__all__ = ["Decoder"]
