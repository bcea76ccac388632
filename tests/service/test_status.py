"""What ``status`` says of the model: anything a handle reports survives msgpack, and the fast
path for plain values gives exactly what the full conversion gives."""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from edge_agentd.agent.jsonvalues import to_jsonable
from edge_agentd.service.status import model_info

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),  # lone surrogates included
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


class Handle:
    def __init__(self, info: dict[Any, Any]) -> None:
        self.info = info


@given(info=st.dictionaries(st.text() | st.integers(), values, max_size=6))
def test_whatever_a_model_reports_is_packed_as_the_full_conversion_gives_it(
    info: dict[Any, Any],
) -> None:
    described = model_info(Handle(info), "mock:x")  # type: ignore[arg-type]
    assert described == {"spec": "mock:x", **to_jsonable(info)}
    msgpack.packb(described)


def test_a_plain_report_is_taken_as_it_is() -> None:
    info = {"path": "/models/gemma.gguf", "n_ctx": 4096, "swa_full": True, "sha256": None}
    assert model_info(Handle(info), "default") == {"spec": "default", **info}  # type: ignore[arg-type]
    assert model_info(None, "default") == {"spec": "default"}
