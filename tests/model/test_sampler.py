"""The token sampler: greedy at temperature 0, seeded and repeatable above it, never a masked token."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.model.sampler import Sampler

logit_lists = st.lists(
    st.one_of(st.floats(-30, 30, width=32), st.just(-math.inf)), min_size=1, max_size=40
).filter(lambda values: any(math.isfinite(v) for v in values))


@settings(max_examples=200, deadline=None)
@given(logits=logit_lists, temperature=st.floats(0.05, 5.0), seed=st.integers(0, 2**32))
def test_a_sampled_token_is_never_one_the_mask_forbids(
    logits: list[float], temperature: float, seed: int
) -> None:
    values = np.array(logits, dtype=np.float32)
    sampler = Sampler(temperature, seed)
    for _ in range(20):
        assert math.isfinite(values[sampler.pick(values)])


@given(logits=logit_lists, seed=st.integers(0, 2**32))
def test_the_same_seed_picks_the_same_tokens(logits: list[float], seed: int) -> None:
    values = np.array(logits, dtype=np.float32)
    first, second = Sampler(1.0, seed), Sampler(1.0, seed)
    assert [first.pick(values) for _ in range(30)] == [second.pick(values) for _ in range(30)]


def test_greedy_takes_the_best_and_names_it_by_its_id() -> None:
    logits = np.array([0.5, 3.0, -math.inf, 2.0], dtype=np.float32)
    ids = np.array([10, 11, 12, 13], dtype=np.int32)
    assert Sampler().pick(logits) == 1
    assert Sampler(0.8).pick(logits, temperature=0.0, ids=ids) == 11


def test_sampling_follows_the_softmax() -> None:
    logits = np.array([0.0, 1.0, -math.inf, 2.0], dtype=np.float32)
    sampler = Sampler(1.0, seed=7)
    draws = 20_000
    counts = np.bincount([sampler.pick(logits) for _ in range(draws)], minlength=4)
    expected = np.exp([0.0, 1.0, 0.0, 2.0]) * [1, 1, 0, 1]
    expected = expected / expected.sum() * draws
    assert counts[2] == 0
    # Four standard deviations of a binomial count: a wrong distribution fails, luck does not.
    for seen, wanted in zip(counts, expected, strict=True):
        assert abs(seen - wanted) <= 4 * math.sqrt(wanted + 1)
