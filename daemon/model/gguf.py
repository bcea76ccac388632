"""Reading and checking a GGUF file before llama.cpp sees it.

llama.cpp trusts much of what a GGUF header says and may abort the whole process on a file that
lies, so every size and offset is checked here first, against the file's real length.
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import struct
from pathlib import Path
from typing import Any

from edge_agentd.agent.protocol import ModelError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4
MAX_TENSOR_NAME = 63
MAX_ARRAY_DEPTH = 4
MAX_KEPT_ARRAY = 1024
"""Arrays of numbers or booleans up to this long are kept (per-layer values); longer ones, and
arrays of strings (a vocabulary), are described by an :class:`ArraySummary` instead."""
# llama.cpp aborts the process (instead of failing the load) on a layer count above this.
MAX_LAYERS = 512
# Metadata strings longer than this are skipped rather than kept (chat templates are ~10 KB).
MAX_KEPT_STRING = 1 << 20

# ggml tensor types: (elements per block, bytes per block), from ggml's type traits.
GGML_TYPE_SIZES: dict[int, tuple[int, int]] = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    9: (32, 36),  # Q8_1
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    15: (256, 292),  # Q8_K
    16: (256, 66),  # IQ2_XXS
    17: (256, 74),  # IQ2_XS
    18: (256, 98),  # IQ3_XXS
    19: (256, 50),  # IQ1_S
    20: (32, 18),  # IQ4_NL
    21: (256, 110),  # IQ3_S
    22: (256, 82),  # IQ2_S
    23: (256, 136),  # IQ4_XS
    24: (1, 1),  # I8
    25: (1, 2),  # I16
    26: (1, 4),  # I32
    27: (1, 8),  # I64
    28: (1, 8),  # F64
    29: (256, 56),  # IQ1_M
    30: (1, 2),  # BF16
    34: (256, 54),  # TQ1_0
    35: (256, 66),  # TQ2_0
    39: (32, 17),  # MXFP4
}

# GGUF metadata value types: struct format of the scalar ones.
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING = 8
_ARRAY = 9


class ModelLoadError(ModelError):
    """The model file cannot be used; the message says why and how to fix it."""

    code = "model_load"


@dataclasses.dataclass(frozen=True)
class ArraySummary:
    """A metadata array, described instead of kept (a vocabulary has 262k entries)."""

    item_type: int
    count: int


@dataclasses.dataclass(frozen=True)
class GGUFInfo:
    """What the header of a checked GGUF file says."""

    path: Path
    size_bytes: int
    version: int
    n_tensors: int
    metadata: dict[str, Any]

    @property
    def architecture(self) -> str | None:
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None

    @property
    def chat_template(self) -> str | None:
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def name(self) -> str | None:
        value = self.metadata.get("general.name")
        return value if isinstance(value, str) else None

    @property
    def context_length(self) -> int | None:
        value = self.metadata.get(f"{self.architecture}.context_length")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Truncated(Exception):
    pass


class _Reader:
    """Bounds-checked little-endian reads over a buffer."""

    def __init__(self, data: mmap.mmap | bytes) -> None:
        self.data = data
        self.size = len(data)
        self.pos = 0

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Truncated

    def scalar(self, fmt: str) -> Any:
        n = struct.calcsize(fmt)
        self.need(n)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return value

    def u32(self) -> int:
        return int(self.scalar("<I"))

    def u64(self) -> int:
        return int(self.scalar("<Q"))

    def string(self, keep: bool = True) -> str | None:
        length = self.u64()
        self.need(length)
        start = self.pos
        self.pos += length
        if not keep or length > MAX_KEPT_STRING:
            return None
        raw = bytes(self.data[start : self.pos])
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        # Each string is at least its 8-byte length, so a lying count fails fast here.
        self.need(count * 8)
        data, pos, size = self.data, self.pos, self.size
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if pos + 8 > size:
                raise _Truncated
            (length,) = unpack(data, pos)
            pos += 8 + length
            if pos > size:
                raise _Truncated
        self.pos = pos


def _bad(path: Path, why: str) -> ModelLoadError:
    return ModelLoadError(
        f"{path} is not a usable GGUF model file: {why}. Download it again, or pass the path of "
        "a complete .gguf file (omit the path to use the embedded default model)."
    )


def _value(reader: _Reader, value_type: int, path: Path, depth: int = 0) -> Any:
    if value_type in _SCALARS:
        return reader.scalar(_SCALARS[value_type])
    if value_type == _STRING:
        return reader.string()
    if value_type == _ARRAY:
        if depth >= MAX_ARRAY_DEPTH:
            raise _bad(path, "its metadata nests arrays too deeply")
        item_type = reader.u32()
        count = reader.u64()
        if item_type in _SCALARS and count <= MAX_KEPT_ARRAY:
            # A per-layer hyperparameter (Gemma 4's sliding-window pattern, a head count per
            # layer): small, and what the KV cache's size depends on.
            return [reader.scalar(_SCALARS[item_type]) for _ in range(count)]
        if item_type in _SCALARS:
            reader.need(count * struct.calcsize(_SCALARS[item_type]))
            reader.pos += count * struct.calcsize(_SCALARS[item_type])
        elif item_type == _STRING:
            reader.skip_strings(count)
        elif item_type == _ARRAY:
            reader.need(count * 12)
            for _ in range(count):
                _value(reader, _ARRAY, path, depth + 1)
        else:
            raise _bad(path, f"a metadata array has the unknown item type {item_type}")
        return ArraySummary(item_type, count)
    raise _bad(path, f"a metadata value has the unknown type {value_type}")


def _tensor_bytes(path: Path, name: str, dims: list[int], ggml_type: int) -> int:
    sizes = GGML_TYPE_SIZES.get(ggml_type)
    if sizes is None:
        raise _bad(path, f"tensor {name!r} has the unknown type {ggml_type}")
    block, type_size = sizes
    elements = 1
    for dim in dims:
        if dim <= 0:
            raise _bad(path, f"tensor {name!r} has a dimension of {dim}")
        elements *= dim
        if elements > 1 << 60:
            raise _bad(path, f"tensor {name!r} is impossibly large")
    if dims[0] % block:
        raise _bad(path, f"tensor {name!r} has a row of {dims[0]}, not a multiple of {block}")
    return elements // block * type_size


def read_gguf(path: str | os.PathLike[str]) -> GGUFInfo:
    """Check that ``path`` is a complete GGUF file and return its header.

    Raises :class:`ModelLoadError`, with a message that says how to fix it, for a missing file, a
    file that is not GGUF, a truncated one, or one whose header does not add up.
    """
    file = Path(path)
    try:
        handle = file.open("rb")
    except FileNotFoundError:
        raise ModelLoadError(
            f"there is no model file at {file}. Pass the path of a .gguf file, or omit it to use "
            "the embedded default model."
        ) from None
    except OSError as exc:
        raise ModelLoadError(f"cannot open the model file {file}: {exc.strerror or exc}") from exc
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if not file.is_file():
            raise ModelLoadError(f"{file} is not a regular file; pass the path of a .gguf file")
        if size < 24:
            raise _bad(file, f"it is only {size} bytes long")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                return _parse(file, size, data)
            except _Truncated:
                raise _bad(file, "it ends in the middle of its header (truncated?)") from None


def _parse(file: Path, size: int, data: mmap.mmap) -> GGUFInfo:
    reader = _Reader(data)
    if data[:4] != GGUF_MAGIC:
        raise _bad(file, "it does not start with the GGUF magic bytes")
    reader.pos = 4
    version = reader.u32()
    if version not in SUPPORTED_VERSIONS:
        raise _bad(file, f"its GGUF version is {version}; versions 2 and 3 are supported")
    n_tensors = reader.u64()
    n_kv = reader.u64()
    # Every entry takes at least 8 bytes of name length plus its type, so a lying count is caught
    # here instead of after a long loop.
    if n_kv * 12 > size or n_tensors * 24 > size:
        raise _bad(file, "its header counts more entries than the file can hold (truncated?)")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = reader.string()
        value_type = reader.u32()
        value = _value(reader, value_type, file)
        if key is not None:
            metadata[key] = value
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (
        not isinstance(alignment, int)
        or isinstance(alignment, bool)
        or alignment <= 0
        or alignment & (alignment - 1)
    ):
        raise _bad(file, f"its alignment {alignment!r} is not a power of two")
    tensors: list[tuple[str, int, int]] = []
    names: set[str] = set()
    for _ in range(n_tensors):
        name = reader.string() or ""
        if not name or len(name.encode()) > MAX_TENSOR_NAME or name in names:
            raise _bad(file, f"tensor name {name[:80]!r} is empty, too long or repeated")
        names.add(name)
        n_dims = reader.u32()
        if not 1 <= n_dims <= MAX_DIMS:
            raise _bad(file, f"tensor {name!r} has {n_dims} dimensions")
        dims = [reader.u64() for _ in range(n_dims)]
        ggml_type = reader.u32()
        offset = reader.u64()
        if offset % alignment:
            raise _bad(file, f"tensor {name!r} is not aligned to {alignment} bytes")
        tensors.append((name, offset, _tensor_bytes(file, name, dims, ggml_type)))
    data_start = -(-reader.pos // alignment) * alignment
    for name, offset, nbytes in tensors:
        if data_start + offset + nbytes > size:
            raise _bad(
                file,
                f"tensor {name!r} ends at byte {data_start + offset + nbytes} but the file has "
                f"only {size} bytes (truncated?)",
            )
    _check_hyperparameters(file, metadata)
    return GGUFInfo(
        path=file, size_bytes=size, version=version, n_tensors=n_tensors, metadata=metadata
    )


def _check_hyperparameters(file: Path, metadata: dict[str, Any]) -> None:
    """Reject the values llama.cpp would abort on rather than report (found by fuzzing)."""
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str) or not architecture:
        raise _bad(file, "it does not name its architecture (general.architecture)")
    layers = metadata.get(f"{architecture}.block_count")
    if layers is not None and (
        not isinstance(layers, int) or isinstance(layers, bool) or not 1 <= layers <= MAX_LAYERS
    ):
        raise _bad(file, f"its layer count {layers!r} is not between 1 and {MAX_LAYERS}")
    for key, value in metadata.items():
        if not (key.startswith(f"{architecture}.") and key.endswith("epsilon")):
            continue
        if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise _bad(file, f"{key} is {value!r}, not a small non-negative number")
