"""Warm restarts: the preamble's KV state saved after warm-up and loaded at the next start.

The file format is fuzzed without a model (a damaged file is never used and never raises); the
real embedded model checks that a warm start answers token for token as a cold one does, and that
a damaged, mismatched or oversized file is rebuilt. No timing is asserted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd import Agent, AgentState, Registry, load_model
from edge_agentd.model.llama import LlamaModel
from edge_agentd.model.prefixstate import MAGIC, PrefixState

KEY = {"model": {"sha256": "ab" * 32}, "n_ctx": 1024, "llama_cpp": {"v": "1"}}
TOKENS = [2, 105, 2364, 107, 3048]
PAYLOAD = bytes(range(256)) * 8


def _written(tmp_path: Path) -> PrefixState:
    state = PrefixState(tmp_path, KEY, max_bytes=1 << 20)
    assert state.write(TOKENS, PAYLOAD)
    return state


# -- the file, without a model ----------------------------------------------------------------


def test_a_saved_state_reads_back(tmp_path: Path) -> None:
    state = _written(tmp_path)
    assert PrefixState(tmp_path, KEY, max_bytes=1 << 20).read(TOKENS) == PAYLOAD
    assert state.path.read_bytes().startswith(MAGIC)
    assert [p.name for p in tmp_path.iterdir()] == [state.path.name]  # no temporary left


def test_another_key_or_preamble_is_not_read(tmp_path: Path) -> None:
    _written(tmp_path)
    other = PrefixState(tmp_path, {**KEY, "n_ctx": 2048}, max_bytes=1 << 20)
    assert other.read(TOKENS) is None and other.status == "missing"
    same = PrefixState(tmp_path, KEY, max_bytes=1 << 20)
    assert same.read([*TOKENS, 7]) is None
    assert same.status == "written for another preamble"
    assert not same.path.exists()  # deleted, to be rebuilt


def test_saving_deletes_stale_files_and_respects_the_bound(tmp_path: Path) -> None:
    old = PrefixState(tmp_path, {**KEY, "n_ctx": 2048}, max_bytes=1 << 20)
    assert old.write(TOKENS, PAYLOAD)
    (tmp_path / ".prefix-crashed.tmp").write_bytes(b"half")
    (tmp_path / "unrelated.txt").write_text("kept")
    state = _written(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([state.path.name, "unrelated.txt"])
    small = PrefixState(tmp_path / "small", KEY, max_bytes=len(PAYLOAD))
    assert not small.write(TOKENS, PAYLOAD)
    assert not small.path.exists()


def test_an_oversized_file_is_not_read(tmp_path: Path) -> None:
    state = _written(tmp_path)
    assert PrefixState(tmp_path, KEY, max_bytes=len(PAYLOAD)).read(TOKENS) is None
    assert not state.path.exists()


def test_a_problem_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    state = _written(tmp_path)
    reader = PrefixState(tmp_path, KEY, max_bytes=1 << 20)
    with caplog.at_level(logging.WARNING, logger="edge_agentd.model.prefixstate"):
        for _ in range(3):
            state.path.write_bytes(b"garbage")
            assert reader.read(TOKENS) is None
    assert len(caplog.records) == 1


Edit = tuple[str, int, bytes]
edits = st.tuples(
    st.sampled_from(["truncate", "flip", "append", "insert", "replace"]),
    st.integers(0, 10_000),
    st.binary(min_size=1, max_size=64),
)


def _damage(data: bytes, edit: Edit) -> bytes:
    kind, where, blob = edit
    at = where % max(1, len(data))
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        if not data:
            return blob
        return data[:at] + bytes([data[at] ^ (blob[0] or 1)]) + data[at + 1 :]
    if kind == "append":
        return data + blob
    if kind == "insert":
        return data[:at] + blob + data[at:]
    return blob


@given(st.lists(edits, min_size=1, max_size=3))
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_damaged_file_is_never_used(tmp_path: Path, damage: list[Edit]) -> None:
    state = _written(tmp_path)
    data = good = state.path.read_bytes()
    for edit in damage:
        data = _damage(data, edit)
    state.path.write_bytes(data)
    got = PrefixState(tmp_path, KEY, max_bytes=1 << 20).read(TOKENS)
    assert got == (PAYLOAD if data == good else None)


def test_an_unwritable_directory_is_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    state = PrefixState(blocked / "cache", KEY, max_bytes=1 << 20)
    assert not state.write(TOKENS, PAYLOAD)
    assert state.read(TOKENS) is None


# -- the real model ---------------------------------------------------------------------------

N_CTX = 1024
QUERIES = ["What is the temperature of the kitchen sensor?"]


def _registry() -> Registry:
    registry = Registry()

    @registry.skill
    def read_sensor(name: str) -> float:
        """Read a temperature sensor, in degrees Celsius."""
        return 21.5

    @registry.skill
    def clock() -> str:
        """The current local time."""
        return "12:00"

    return registry


def _start(directory: Path) -> tuple[LlamaModel, Agent]:
    model = load_model(n_ctx=N_CTX, state_dir=directory)
    assert isinstance(model, LlamaModel)
    agent = Agent(model, _registry())
    model.warm_up(agent.preamble())
    return model, agent


def _answers(model: LlamaModel, agent: Agent) -> list[list[int]]:
    """Each reply's tokens: a constrained action and a stretch of free text per query."""
    schema = agent.registry.action_schema()
    out = []
    for query in QUERIES:
        prompt = agent.render_prompt(AgentState(query=query))
        out.append(
            model.tokenize(
                model.generate(prompt, action_schema=schema, max_tokens=24), add_bos=False
            )
        )
        out.append(
            model.tokenize(model.generate(prompt, constrained=False, max_tokens=8), add_bos=False)
        )
    return out


@pytest.fixture(scope="module")
def cold(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[list[int]]]]:
    directory = tmp_path_factory.mktemp("cache")
    model, agent = _start(directory)
    try:
        assert model.info["prefix_state"] == "saved"
        yield directory, _answers(model, agent)
    finally:
        model.close()


def test_a_warm_start_answers_token_for_token_as_a_cold_one(
    cold: tuple[Path, list[list[int]]],
) -> None:
    directory, answers = cold
    model, agent = _start(directory)
    try:
        assert model.info["prefix_state"] == "loaded"
        assert model.info["cached_tokens"] == len(model.tokenize(agent.preamble()))
        assert _answers(model, agent) == answers
    finally:
        model.close()
    assert len(list(directory.iterdir())) == 1


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "another key"])
def test_a_damaged_state_file_is_rebuilt(
    cold: tuple[Path, list[list[int]]], damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    directory, answers = cold
    (path,) = list(directory.iterdir())
    data = path.read_bytes()
    if damage == "flip":
        at = len(data) * 3 // 4  # deep in the keys and values, where llama.cpp would not notice
        path.write_bytes(data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :])
    elif damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        # A state file from another model or build, under this key's name.
        path.write_bytes(data.replace(b'"n_ctx": 1024', b'"n_ctx": 1025'))
    with caplog.at_level(logging.WARNING):
        model, agent = _start(directory)
    try:
        assert model.info["prefix_state"] == "saved"  # evaluated, then saved again
        assert _answers(model, agent) == answers
    finally:
        model.close()
    assert sum("prefix state" in r.getMessage() for r in caplog.records) == 1
    assert path.read_bytes() == data  # the rebuilt file is the same as the first


def test_state_refused_by_llama_cpp_is_not_served(
    cold: tuple[Path, list[list[int]]], tmp_path: Path
) -> None:
    _, answers = cold
    model = load_model(n_ctx=N_CTX, state_dir=tmp_path)
    assert isinstance(model, LlamaModel)
    agent = Agent(model, _registry())
    tokens = model.tokenize(agent.preamble())
    state = model._prefix_state
    assert state is not None
    # A file that passes every check of ours but holds bytes llama.cpp never wrote.
    assert state.write(tokens, os.urandom(4096))
    state.status = "unused"
    try:
        model.warm_up(agent.preamble())
        assert model.info["prefix_state"] == "saved"
        assert _answers(model, agent) == answers
    finally:
        model.close()


# -- where the daemon keeps it -----------------------------------------------------------------


def test_the_state_directory_under_systemd_and_outside(tmp_path: Path) -> None:
    from edge_agentd.service.assembly.assemble import prefix_state_dir

    systemd = {"CACHE_DIRECTORY": f"{tmp_path}/unit:{tmp_path}/other", "XDG_CACHE_HOME": "/x"}
    assert prefix_state_dir(systemd) == tmp_path / "unit"
    assert prefix_state_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "edge-agent"
    # A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
    home = prefix_state_dir({"XDG_CACHE_HOME": "relative", "HOME": str(tmp_path)})
    assert home is not None and home.parent.name == ".cache"


@pytest.mark.parametrize("where", ["systemd", "outside"])
def test_the_daemons_loader_restarts_warm_under_systemd_and_outside(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``edge-agent serve`` (and so ``make run``) loads its model through this loader: the first
    start saves the preamble's state, the second loads it, with or without systemd."""
    from edge_agentd.model.embedded import default_model_path
    from edge_agentd.service.assembly.assemble import model_factory
    from edge_agentd.service.config.settings import Settings

    gguf, _ = default_model_path()  # before the environment moves the cache elsewhere
    monkeypatch.delenv("CACHE_DIRECTORY", raising=False)
    if where == "systemd":
        expected = tmp_path / "state"
        monkeypatch.setenv("CACHE_DIRECTORY", str(expected))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-here"))
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        expected = tmp_path / "edge-agent"
    settings = Settings.model_validate({"model": {"n_ctx": N_CTX}})
    load = model_factory(str(gguf), settings)
    statuses = []
    for _ in range(2):
        model = load()
        assert isinstance(model, LlamaModel)
        try:
            model.warm_up(Agent(model, _registry()).preamble())
            statuses.append(model.info["prefix_state"])
        finally:
            model.close()
    assert statuses == ["saved", "loaded"]
    assert [p.suffix for p in expected.iterdir()] == [".kvstate"]
    assert not (tmp_path / "not-here").exists()
