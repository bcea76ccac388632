"""The ways of decoding a reply that the daemon's way is measured against, and what it decoded.

The daemon's :class:`~edge_agentd.model.decoding.Decoder` asks the grammar about the sampled token
first and takes forced text without sampling. :class:`MeasuredDecoder` is that decoder with the
two switches the benchmarks (bench_model.py) and tests/model/test_forced_tokens.py compare it
with, and it keeps the counts of the last reply (tokens sampled, forced, led with).
:func:`measure` puts one into a loaded :class:`~edge_agentd.model.llama.LlamaModel`; the
package itself carries none of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from edge_agentd.model.constrained import ActionGrammar
from edge_agentd.model.decoding import Decoder, Forced, Reply
from edge_agentd.model.llama import LlamaModel

_NOTHING = Forced(b"", [], False)


@dataclasses.dataclass
class MeasuredDecoder(Decoder):
    forced_runs: bool = True
    """False: text the grammar forces is sampled a token at a time (the path before forced runs)."""
    full_pass: bool = False
    """True: the grammar judges the whole vocabulary at every token, as llama-cpp-python does
    (and nothing is forced)."""
    last: Reply | None = None
    """What the last reply decoded; ``lead`` counts the forced tokens evaluated with the prompt."""
    _lead: int = 0

    def _forcing(self) -> bool:
        return self.forced_runs and not self.full_pass

    def lead(self, grammar: ActionGrammar | None, budget: int) -> Forced:
        run = super().lead(grammar, budget) if self._forcing() else _NOTHING
        self._lead = len(run.tokens)
        # Until a reply is decoded, the lead is all there is (all of it, when it ends the reply).
        self.last = Reply(run.text if run.ends else b"", 0, "stop" if run.ends else "interrupted",
                          lead=self._lead)
        return run

    def forced_after(self, grammar: ActionGrammar | None, budget: int) -> Forced:
        return super().forced_after(grammar, budget) if self._forcing() else _NOTHING

    def choose(
        self,
        grammar: ActionGrammar | None,
        logits: npt.NDArray[np.float32],
        temperature: float | None,
    ) -> int:
        if grammar is None or not self.full_pass:
            return super().choose(grammar, logits, temperature)
        self.sampler.pick(logits, temperature)  # the pick the full pass then overrules
        allowed, allowed_logits = grammar.mask(logits, full=True)
        return self.sampler.pick(allowed_logits, temperature, allowed)

    def reply(
        self,
        grammar: ActionGrammar | None,
        *,
        cap: int,
        temperature: float | None,
        interrupted: Callable[[], bool],
    ) -> Reply:
        reply = super().reply(grammar, cap=cap, temperature=temperature, interrupted=interrupted)
        self.last = dataclasses.replace(reply, lead=self._lead)
        return reply


def measure(model: LlamaModel) -> MeasuredDecoder:
    """Make ``model`` decode through a :class:`MeasuredDecoder` (its own parts) and return it."""
    base = model.decoder
    if isinstance(base, MeasuredDecoder):
        return base
    parts = {field.name: getattr(base, field.name) for field in dataclasses.fields(Decoder)}
    decoder = MeasuredDecoder(**parts)
    model.decoder = decoder
    return decoder


@contextlib.contextmanager
def decoding(
    model: LlamaModel, *, forced_runs: bool = True, full_pass: bool = False
) -> Iterator[MeasuredDecoder]:
    """Within the block, ``model`` decodes the way the switches say; then the daemon's way again."""
    decoder = measure(model)
    decoder.forced_runs, decoder.full_pass = forced_runs, full_pass
    try:
        yield decoder
    finally:
        decoder.forced_runs, decoder.full_pass = True, False
