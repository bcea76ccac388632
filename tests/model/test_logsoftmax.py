"""LogSoftmax: the log-probabilities a scorer reads, from a scratch array it reuses."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from edge_agentd.model.logsoftmax import LogSoftmax

LOGITS = arrays(
    np.float32,
    st.integers(1, 300),
    elements=st.floats(-80, 80, width=32, allow_nan=False, allow_infinity=False),
)


def exact(logits: np.ndarray, token: int) -> float:
    values = logits.astype(np.float64)
    top = values.max()
    return float(values[token] - top - math.log(np.exp(values - top).sum()))


@settings(max_examples=200, deadline=None)
@given(LOGITS, st.data())
def test_each_token_gets_its_log_probability(logits: np.ndarray, data: st.DataObject) -> None:
    tokens = data.draw(st.sets(st.integers(0, len(logits) - 1), min_size=1, max_size=5))
    got = LogSoftmax().of(logits, tokens)
    assert set(got) == tokens
    for token, value in got.items():
        assert value <= 1e-6
        assert math.isclose(value, exact(logits, token), rel_tol=1e-4, abs_tol=1e-4)


def test_the_scratch_array_is_reused_and_the_logits_left_alone() -> None:
    scorer = LogSoftmax()
    rng = np.random.default_rng(7)
    first, second = rng.normal(size=(2, 1000)).astype(np.float32)
    kept = first.copy()
    scorer.of(first, [3])
    scratch = scorer._scratch
    one = scorer.at(second, 5)
    assert scorer._scratch is scratch  # the same vocabulary: no new array
    assert np.array_equal(first, kept)
    assert math.isclose(one, exact(second, 5), rel_tol=1e-5)
    # The probabilities over the whole vocabulary add up to one.
    everything = scorer.of(second, range(1000))
    assert math.isclose(sum(math.exp(v) for v in everything.values()), 1.0, rel_tol=1e-4)
