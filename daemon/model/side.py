"""Short texts kept in the KV cache beside the conversation, to score what would follow them.

A small model judges "which of these fits?" far better the other way round: how likely is the
question after each candidate's own description (the noisy-channel direction). Each description is
a fixed text, so it is evaluated once into a sequence of its own and kept there, beside the
conversation (sequence 0) in the same cells; scoring a text after all of them is then one batch.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from edge_agentd.model.counting import ThreadCounts
from edge_agentd.model.logsoftmax import LogSoftmax
from edge_agentd.model.runtime import LlamaRuntime

SIDE_OUTPUTS = 16
"""The most tokens whose logits one scoring call asks for (see kvcache.MAX_OUTPUTS): several
prompts scored against a whole text in one call would keep the memory of all their logits."""


class SideTexts:
    """Up to ``n_seq_max - 1`` prompts kept in sequences 1..n, least recently used evicted."""

    def __init__(self, runtime: LlamaRuntime) -> None:
        self._runtime = runtime
        self._log_softmax = LogSoftmax()
        self._free = list(range(runtime.sizes.n_seq_max - 1, 0, -1))
        self._kept: collections.OrderedDict[tuple[int, ...], int] = collections.OrderedDict()
        self._clears = runtime.clears
        self.evaluated = 0
        """Prompt tokens run into the kept sequences so far (the rest of a scoring call's
        tokens are the texts scored after them)."""

    @property
    def cells(self) -> int:
        """How many cache cells the kept texts take from the conversation."""
        self._check_cleared()
        return sum(len(tokens) - 1 for tokens in self._kept)

    def drop_all(self) -> None:
        """Free every kept text's cells (the conversation needs the room)."""
        self._check_cleared()
        for seq in list(self._kept.values()):
            self._runtime.forget_from(0, seq)
            self._free.append(seq)
        self._kept.clear()

    def likelihoods(
        self,
        prompts: Sequence[list[int]],
        text: list[int],
        counted: tuple[ThreadCounts, int] | None = None,
    ) -> list[float]:
        """log P(text | prompt) for each prompt (its tokens, BOS included); with ``counted``
        (the model's counts, the call's prompt tokens), what it cost is added to the counts,
        however it ends."""
        if counted is None:
            return self._likelihoods(prompts, text)
        counts, prompt_tokens = counted
        decoded, evaluated = self._runtime.decoded, self.evaluated
        try:
            return self._likelihoods(prompts, text)
        finally:
            evaluated = self.evaluated - evaluated
            scored = self._runtime.decoded - decoded - evaluated
            counts.add(prompt=prompt_tokens, evaluated=evaluated, scored=scored)

    def _likelihoods(self, prompts: Sequence[list[int]], text: list[int]) -> list[float]:
        self._check_cleared()
        if not text:
            return [0.0 for _ in prompts]
        sizes = self._runtime.sizes
        # Every text token's logits are read, and llama.cpp keeps a vocabulary's worth of them
        # per such token resident for good, in its output buffer and as much of its compute
        # buffer. So one call asks for at most SIDE_OUTPUTS of them, whatever the text's length:
        # a long text is scored in windows (asked for all at once it would keep that memory, and
        # one longer than n_batch would overrun the batch), a short one against several prompts
        # at once.
        most = min(SIDE_OUTPUTS, sizes.n_batch)
        window = min(len(text), most)
        per_batch = max(1, min(most // window, sizes.n_seq_max - 1))
        scores: list[float] = []
        for start in range(0, len(prompts), per_batch):
            scores.extend(self._score_chunk(prompts[start : start + per_batch], text, window))
        return scores

    def _score_chunk(
        self, prompts: Sequence[list[int]], text: list[int], window: int
    ) -> list[float]:
        seqs = [self._keep(tuple(prompt), pinned=prompts) for prompt in prompts]
        scores = [0.0 for _ in prompts]
        try:
            for begin in range(0, len(text), window):
                end = min(begin + window, len(text))
                # Each run: the tokens before text[begin:end] (the prompt's last token, then the
                # text), every position's logits read; the next window goes on from there.
                runs = [
                    (seq, len(prompt) - 1 + begin, [prompt[-1], *text][begin:end])
                    for seq, prompt in zip(seqs, prompts, strict=True)
                ]
                self._runtime.decode_runs(runs, all_logits=True)
                width = end - begin
                for index in range(len(runs)):
                    scores[index] += sum(
                        self._log_softmax.at(
                            self._runtime.logits(index * width + j), text[begin + j]
                        )
                        for j in range(width)
                    )
        finally:
            for seq, prompt in zip(seqs, prompts, strict=True):
                self._runtime.forget_from(len(prompt) - 1, seq)
        return scores

    def _keep(self, prompt: tuple[int, ...], pinned: Sequence[list[int]]) -> int:
        """The sequence holding all of ``prompt`` but its last token, evaluating it if needed."""
        seq = self._kept.get(prompt)
        if seq is not None:
            self._kept.move_to_end(prompt)
            return seq
        if not self._free:
            wanted = {tuple(p) for p in pinned}
            victim = next(k for k in self._kept if k not in wanted)
            self._free.append(self._kept.pop(victim))
            self._runtime.forget_from(0, self._free[-1])
        seq = self._free.pop()
        body = list(prompt[:-1])
        step = self._runtime.sizes.n_batch
        try:
            for start in range(0, len(body), step):
                self._runtime.decode(body[start : start + step], start, seq=seq)
        except BaseException:
            # Stopped (or failed) half-way: the sequence is freed again, empty.
            self._runtime.forget_from(0, seq)
            self._free.append(seq)
            raise
        self.evaluated += len(body)
        self._kept[prompt] = seq
        return seq

    def _check_cleared(self) -> None:
        if self._runtime.clears != self._clears:
            # The whole cache was emptied: nothing is kept any more.
            self._clears = self._runtime.clears
            self._kept.clear()
            self._free = list(range(self._runtime.sizes.n_seq_max - 1, 0, -1))


__all__ = ["SideTexts"]
