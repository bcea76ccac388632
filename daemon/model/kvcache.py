"""What the KV cache holds: the longest common prefix is kept, only the rest is evaluated.

:class:`KVCache` remembers which tokens the context holds, in order from position 0. Each prompt
is compared with that list and the cache is cut back to the longest common prefix; only the
tokens after it go through the model. Candidates are scored the same way: they are walked as a
tree after the shared prompt, each shared run of tokens evaluated once and cut away again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from edge_agentd.model.logsoftmax import LogSoftmax
from edge_agentd.model.runtime import DecodeFailed, LlamaRuntime
from edge_agentd.model.stopping import Interrupted

MAX_OUTPUTS = 8
"""The most tokens whose logits one call asks for. llama.cpp keeps an output buffer of a
vocabulary's logits per such token and never shrinks it, and touches as much of its compute
buffer: a long run scored in one call would keep that memory resident for the daemon's lifetime.
Runs are scored in calls of this many tokens instead, still batched."""


class KVCache:
    """The tokens in a runtime's context, and the only way tokens get evaluated into it."""

    def __init__(self, runtime: LlamaRuntime) -> None:
        self._runtime = runtime
        self._log_softmax = LogSoftmax()
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
        """Run ``tokens`` through the model after what is cached; False if interrupted first
        (between batches, or inside one: then the cache holds the batches before it). Without
        ``interrupted``, a stop inside llama.cpp raises :class:`Interrupted`. The logits after
        the last token can then be read with :meth:`last_logits`."""
        step = self._runtime.sizes.n_batch
        for start in range(0, len(tokens), step):
            if interrupted is not None and start and interrupted():
                return False
            try:
                self._decode(list(tokens[start : start + step]), all_logits=False)
            except Interrupted:
                if interrupted is None:
                    raise
                return False
        return True

    def last_logits(self) -> npt.NDArray[np.float32]:
        return self._runtime.logits(-1)

    def score_branches(
        self, continuations: Sequence[Sequence[int]], *, whole: bool = False
    ) -> list[list[float]]:
        """For each continuation, the log-probability of each of its tokens after what is cached,
        up to and including the first token no other continuation shares; with ``whole``, of
        every one of its tokens (each continuation's own tail evaluated as one batch).

        That is what tells the candidates apart: the sum is the log-probability that a reply
        takes that candidate's branch. Only runs of tokens that two or more candidates share are
        evaluated (once each, as a batch), and they are cut away again, so the cache ends as it
        began. The logits after the cached tokens must be current.
        """
        results: list[list[float]] = [[] for _ in continuations]
        members = [i for i, tokens in enumerate(continuations) if tokens]
        start = len(self.tokens)
        try:
            probabilities = self._log_softmax.of(
                self.last_logits(), _next_tokens(continuations, members, 0)
            )
            self._walk(continuations, members, 0, probabilities, results, whole=whole)
        finally:
            self.truncate(start)
        return results

    def _walk(
        self,
        continuations: Sequence[Sequence[int]],
        members: list[int],
        depth: int,
        probabilities: dict[int, float],
        results: list[list[float]],
        *,
        whole: bool = False,
    ) -> None:
        groups: dict[int, list[int]] = {}
        for i in members:
            if depth < len(continuations[i]):
                groups.setdefault(continuations[i][depth], []).append(i)
        for token, group in groups.items():
            probability = probabilities[token]
            for i in group:
                results[i].append(probability)
            if len(group) < 2 and not whole:
                continue  # this candidate is told apart here
            # The run of tokens every member shares from here: one batch, not a token at a time.
            run = [token]
            end = depth + 1
            while all(end < len(continuations[i]) for i in group) and (
                len({continuations[i][end] for i in group}) == 1
            ):
                run.append(continuations[group[0]][end])
                end += 1
            mark = len(self.tokens)
            step = min(MAX_OUTPUTS, self._runtime.sizes.n_batch)
            for offset in range(0, len(run), step):
                chunk = run[offset : offset + step]
                self._decode(chunk, all_logits=True)
                for k in range(len(chunk)):
                    if offset + k + 1 < len(run):
                        following_token = run[offset + k + 1]
                        probability = self._log_softmax.at(self._runtime.logits(k), following_token)
                        for i in group:
                            results[i].append(probability)
            following = self._log_softmax.of(
                self._runtime.logits(len(chunk) - 1), _next_tokens(continuations, group, end)
            )
            self._walk(continuations, group, end, following, results, whole=whole)
            self.truncate(mark)

    def _decode(self, chunk: list[int], *, all_logits: bool) -> None:
        try:
            self._runtime.decode(chunk, len(self.tokens), all_logits=all_logits)
        except DecodeFailed:
            # The cache may hold part of the batch now; forget it all rather than guess.
            self.clear()
            raise
        self.tokens.extend(chunk)


def _next_tokens(
    continuations: Sequence[Sequence[int]], members: list[int], depth: int
) -> set[int]:
    """The tokens the members' continuations go on with at ``depth``."""
    return {continuations[i][depth] for i in members if depth < len(continuations[i])}


__all__ = ["KVCache"]
