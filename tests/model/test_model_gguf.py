"""Bad model files get a clear ModelLoadError before llama.cpp can trip over them."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd.model.embedded import default_model_path
from edge_agentd.model.gguf import ArraySummary, ModelLoadError, read_gguf
from edge_agentd.model.loading import load_model

_FILE_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def tiny_gguf(
    architecture: str = "gemma3",
    *,
    template: str | None = None,
    extra_kv: bytes = b"",
    n_extra_kv: int = 0,
) -> bytes:
    """A small, well-formed GGUF: a few metadata keys and one 32-element F32 tensor."""
    kv = _string("general.architecture") + struct.pack("<I", 8) + _string(architecture)
    kv += _string("general.alignment") + struct.pack("<II", 4, 32)
    kv += _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2)
    kv += _string("a") + _string("b")
    n_kv = 3 + n_extra_kv
    if template is not None:
        kv += _string("tokenizer.chat_template") + struct.pack("<I", 8) + _string(template)
        n_kv += 1
    kv += extra_kv
    tensor = _string("token_embd.weight") + struct.pack("<IQIQ", 1, 32, 0, 0)
    header = b"GGUF" + struct.pack("<IQQ", 3, 1, n_kv) + kv + tensor
    header += b"\0" * (-len(header) % 32)
    return header + struct.pack("<32f", *range(32))


def _write(tmp_path: Path, data: bytes, name: str = "model.gguf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_the_tiny_file_is_well_formed(tmp_path: Path) -> None:
    info = read_gguf(_write(tmp_path, tiny_gguf(template="{{ x }}")))
    assert info.architecture == "gemma3"
    assert info.chat_template == "{{ x }}"
    assert info.n_tensors == 1
    assert info.metadata["tokenizer.ggml.tokens"] == ArraySummary(8, 2)


def test_the_embedded_model_header() -> None:
    path, _ = default_model_path()
    info = read_gguf(path)
    assert info.architecture == "gemma3"
    assert info.version == 3
    assert info.context_length == 32768
    assert info.metadata["tokenizer.ggml.tokens"].count == 262144


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no model file"):
        read_gguf(tmp_path / "absent.gguf")
    with pytest.raises(ModelLoadError):
        read_gguf(tmp_path)


@_FILE_SETTINGS
@given(data=st.binary(max_size=4096))
def test_random_bytes_are_rejected_clearly(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(ModelLoadError, match=r"GGUF|bytes long"):
        read_gguf(_write(tmp_path, data))


@_FILE_SETTINGS
@given(cut=st.integers(min_value=0))
def test_every_truncation_is_caught(tmp_path: Path, cut: int) -> None:
    whole = tiny_gguf()
    path = _write(tmp_path, whole[: cut % len(whole)])
    with pytest.raises(ModelLoadError, match=r"truncated|bytes long|magic"):
        read_gguf(path)


@_FILE_SETTINGS
@given(position=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_a_corrupted_byte_is_parsed_or_rejected_never_crashes(
    tmp_path: Path, position: int, value: int
) -> None:
    data = bytearray(tiny_gguf())
    data[position % len(data)] = value
    try:
        info = read_gguf(_write(tmp_path, bytes(data)))
    except ModelLoadError as exc:
        assert "Download it again" in str(exc) or "GGUF" in str(exc)
    else:
        assert info.n_tensors <= 1


@pytest.mark.parametrize(
    ("field", "packed"),
    [
        ("version", struct.pack("<I", 99)),
        ("n_tensors", struct.pack("<Q", 1 << 62)),
        ("n_kv", struct.pack("<Q", 1 << 62)),
    ],
)
def test_lying_header_counts(tmp_path: Path, field: str, packed: bytes) -> None:
    data = bytearray(tiny_gguf())
    offset = {"version": 4, "n_tensors": 8, "n_kv": 16}[field]
    data[offset : offset + len(packed)] = packed
    with pytest.raises(ModelLoadError):
        read_gguf(_write(tmp_path, bytes(data)))


def test_huge_string_and_array_lengths(tmp_path: Path) -> None:
    huge_string = _string("general.name")[:0] + struct.pack("<Q", 1 << 60)
    bad = tiny_gguf(
        extra_kv=_string("general.name") + struct.pack("<I", 8) + huge_string, n_extra_kv=1
    )
    with pytest.raises(ModelLoadError, match="truncated"):
        read_gguf(_write(tmp_path, bad))
    huge_array = _string("x") + struct.pack("<IIQ", 9, 4, 1 << 61)
    with pytest.raises(ModelLoadError, match="truncated"):
        read_gguf(_write(tmp_path, tiny_gguf(extra_kv=huge_array, n_extra_kv=1)))


def test_not_gemma_without_template_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"not a Gemma model.*chat template"):
        load_model(_write(tmp_path, tiny_gguf("llama")))


def test_a_gemma_header_with_nonsense_weights_fails_cleanly_in_llama_cpp(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"llama\.cpp could not load"):
        load_model(_write(tmp_path, tiny_gguf("gemma3")), n_ctx=128)


@pytest.mark.parametrize("cut", [100, 4_000_000, -1])
def test_truncated_real_model_fails_cleanly(tmp_path: Path, cut: int) -> None:
    source, _ = default_model_path()
    size = source.stat().st_size
    length = cut if cut >= 0 else size + cut
    target = tmp_path / "cut.gguf"
    with source.open("rb") as src, target.open("wb") as dst:
        os.sendfile(dst.fileno(), src.fileno(), 0, length)
    with pytest.raises(ModelLoadError, match=r"truncated|ends"):
        load_model(target)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=4
    )
)
def test_corrupted_files_reach_llama_cpp_only_when_sound_and_never_crash(
    tmp_path: Path, edits: list[tuple[int, int]]
) -> None:
    data = bytearray(tiny_gguf())
    for position, value in edits:
        data[position % len(data)] = value
    with pytest.raises(ModelLoadError):
        load_model(_write(tmp_path, bytes(data)), n_ctx=128)


@pytest.mark.parametrize(
    ("key", "kind", "value"),
    [
        ("gemma3.block_count", 4, 0),
        ("gemma3.block_count", 4, 513),
        ("gemma3.block_count", 4, 0xFFFFFFFF),
        ("gemma3.attention.layer_norm_rms_epsilon", 6, -1.0),
        ("gemma3.attention.layer_norm_rms_epsilon", 6, float("nan")),
    ],
)
def test_hyperparameters_llama_cpp_would_abort_on(
    tmp_path: Path, key: str, kind: int, value: float
) -> None:
    packed = struct.pack("<I" if kind == 4 else "<f", value)
    entry = _string(key) + struct.pack("<I", kind) + packed
    with pytest.raises(ModelLoadError, match=r"layer count|epsilon"):
        read_gguf(_write(tmp_path, tiny_gguf(extra_kv=entry, n_extra_kv=1)))


@pytest.fixture(scope="module")
def real_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source, _ = default_model_path()
    target = tmp_path_factory.mktemp("model") / "copy.gguf"
    with source.open("rb") as src, target.open("wb") as dst:
        os.sendfile(dst.fileno(), src.fileno(), 0, source.stat().st_size)
    return target


@pytest.mark.parametrize(
    ("key", "packed"),
    [
        ("gemma3.block_count", struct.pack("<I", 0)),
        ("gemma3.block_count", struct.pack("<I", 0x600012)),
        ("gemma3.attention.layer_norm_rms_epsilon", struct.pack("<f", float("nan"))),
    ],
)
def test_real_model_with_an_aborting_hyperparameter_fails_cleanly(
    real_copy: Path, key: str, packed: bytes
) -> None:
    # These values made llama.cpp abort the whole process before the header checks knew them.
    header = real_copy.read_bytes()[:2048]
    offset = header.index(_string(key)) + len(_string(key)) + 4
    original = header[offset : offset + 4]
    with real_copy.open("r+b") as file:
        file.seek(offset)
        file.write(packed)
    try:
        with pytest.raises(ModelLoadError, match=r"layer count|epsilon"):
            load_model(real_copy, n_ctx=128)
    finally:
        with real_copy.open("r+b") as file:
            file.seek(offset)
            file.write(original)
