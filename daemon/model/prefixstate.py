"""The shared preamble's KV state on disk, so a restart loads it instead of evaluating it again.

After warm-up the cache's state (llama.cpp's ``llama_state_seq_get_data`` for the conversation's
sequence: the keys and values of both of Gemma's caches, sliding window included) is written to
one file in the daemon's cache directory (systemd's ``CacheDirectory``). At the next start the
file is used only when everything that shaped those keys and values is the same: the model file,
``n_ctx`` and the cache layout, the preamble's tokens and the llama.cpp build. That is the file's
key; its name is derived from it. A checksum over the whole file guards against truncation and
corruption, so llama.cpp only ever reads bytes it wrote itself for this very key.

A file that is missing, short, corrupt, too big or for another key is ignored (logged once),
deleted, and written again after the preamble is evaluated; loading never raises. Writes go to a
temporary file that is synced and renamed into place, and each save deletes the files of other
keys, so the directory holds one state file, at most the size of a full KV cache plus a header.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edge_agentd.model.sizing import ContextSizes

if TYPE_CHECKING:
    from edge_agentd.model.kvcache import KVCache
    from edge_agentd.model.runtime import LlamaRuntime

log = logging.getLogger(__name__)

MAGIC = b"edge-agent prefix state 1\n"
_DIGEST = 32
_LENGTH = struct.Struct("<I")
_MAX_HEADER = 16 * 1024 * 1024
PREFIX = "prefix-"
SUFFIX = ".kvstate"


def file_identity(path: Path, sha256: str | None) -> dict[str, Any]:
    """What names a model file: its sha256 when known, else where it is, its size and mtime
    (hashing gigabytes at every start would cost more than the state file saves)."""
    if sha256:
        return {"sha256": sha256}
    stat = path.stat()
    return {
        "path": str(path.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "inode": stat.st_ino,
    }


def llama_build() -> dict[str, Any]:
    """The llama.cpp build: the binding's version and the shared library file it loaded."""
    from edge_agentd.model.bindings import llama_cpp  # noqa: PLC0415 - only the model needs it

    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    build: dict[str, Any] = {"llama_cpp_python": version}
    library = getattr(llama_cpp, "_lib", None)
    name = getattr(library, "_name", None)
    if isinstance(name, str) and os.path.exists(name):
        stat = os.stat(name)
        build["library"] = {"path": name, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return build


def model_prefix_state(
    directory: str | os.PathLike[str],
    path: Path,
    sha256: str | None,
    sizes: ContextSizes,
    kv_cache_bytes: int | None,
) -> PrefixState:
    """The state file of a model loaded from ``path`` with ``sizes``, kept in ``directory``."""
    key = {
        "model": file_identity(path, sha256),
        "n_ctx": sizes.n_ctx,
        "n_seq_max": sizes.n_seq_max,
        "swa_full": True,
        "llama_cpp": llama_build(),
    }
    # A full KV cache, its cells' bookkeeping and the token list, and no more.
    max_bytes = (kv_cache_bytes or 1 << 30) * 9 // 8 + 16 * sizes.n_ctx + (4 << 20)
    return PrefixState(directory, key, max_bytes=max_bytes)


class PrefixState:
    """The state file for one key in ``directory``; each problem is logged once per instance."""

    def __init__(self, directory: str | os.PathLike[str], key: dict[str, Any], max_bytes: int):
        self.directory = Path(directory)
        self.key = key
        self.max_bytes = max_bytes
        """Files larger than this are neither written nor read."""
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
        self.path = self.directory / f"{PREFIX}{digest[:24]}{SUFFIX}"
        self.status = "unused"
        """What happened last: ``loaded``, ``saved``, or why the file was not used."""
        self._logged = False

    def _problem(self, status: str, level: int = logging.WARNING) -> None:
        self.status = status
        if not self._logged:
            self._logged = True
            log.log(
                level, "prefix state %s: %s; evaluating the preamble instead", self.path, status
            )

    def read(self, tokens: Sequence[int]) -> bytes | None:
        """The saved state for exactly ``tokens`` under this key, or None (and why, in status)."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            self.status = "missing"
            return None
        except OSError as exc:
            self._problem(f"unreadable ({exc.strerror})")
            return None
        if size > self.max_bytes:
            self._problem(f"too big ({size} bytes > {self.max_bytes})")
            self.discard()
            return None
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            self._problem(f"unreadable ({exc.strerror})")
            return None
        problem, payload = self._parse(data, tokens)
        if problem is not None:
            self._problem(problem)
            self.discard()
            return None
        return payload

    def _parse(self, data: bytes, tokens: Sequence[int]) -> tuple[str | None, bytes]:
        head = len(MAGIC) + _DIGEST + _LENGTH.size
        if len(data) < head or not data.startswith(MAGIC):
            return "not a state file, or truncated", b""
        digest = data[len(MAGIC) : len(MAGIC) + _DIGEST]
        body = data[len(MAGIC) + _DIGEST :]
        if hashlib.sha256(body).digest() != digest:
            return "checksum mismatch (truncated or corrupt)", b""
        (header_len,) = _LENGTH.unpack_from(body)
        if header_len > min(_MAX_HEADER, len(body) - _LENGTH.size):
            return "bad header length", b""
        try:
            header = json.loads(body[_LENGTH.size : _LENGTH.size + header_len])
        except (ValueError, RecursionError):
            return "bad header", b""
        if not isinstance(header, dict) or header.get("key") != self.key:
            return "written for another model, context or llama.cpp build", b""
        if header.get("tokens") != list(tokens):
            return "written for another preamble", b""
        payload = body[_LENGTH.size + header_len :]
        if not payload or header.get("payload_bytes") != len(payload):
            return "payload size mismatch", b""
        return None, payload

    def write(self, tokens: Sequence[int], payload: bytes) -> bool:
        """Save ``payload`` as the state after ``tokens``: atomically, within the size bound."""
        header = json.dumps(
            {"key": self.key, "tokens": list(tokens), "payload_bytes": len(payload)},
            sort_keys=True,
        ).encode()
        body = _LENGTH.pack(len(header)) + header + payload
        total = len(MAGIC) + _DIGEST + len(body)
        if not payload or total > self.max_bytes:
            self._problem(f"not saved: {total} bytes is over the bound of {self.max_bytes}")
            return False
        temporary: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=f".{PREFIX}", suffix=".tmp", dir=self.directory)
            with os.fdopen(fd, "wb") as out:
                out.write(MAGIC)
                out.write(hashlib.sha256(body).digest())
                out.write(body)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
            temporary = None
            # The rename is durable only once the directory entry is.
            directory = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            self._problem(f"not saved ({exc.strerror or exc})")
            return False
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
        self.status = "saved"
        self.remove_stale()
        return True

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()

    def remove_stale(self) -> None:
        """Delete the state files of other keys and temporary files left by a crash."""
        try:
            entries = list(self.directory.iterdir())
        except OSError:
            return
        for entry in entries:
            name = entry.name
            stale = (name.startswith(PREFIX) and name.endswith(SUFFIX) and entry != self.path) or (
                name.startswith(f".{PREFIX}") and name.endswith(".tmp")
            )
            if stale:
                with contextlib.suppress(OSError):
                    entry.unlink()


def load_prefix(
    state: PrefixState, runtime: LlamaRuntime, cache: KVCache, tokens: list[int]
) -> bool:
    """Fill the cache from the saved state of exactly ``tokens``; False if there is none."""
    payload = state.read(tokens)
    if payload is None:
        return False
    if not runtime.load_state(payload):
        state.discard()
        state.status = "refused by llama.cpp"
        log.warning("prefix state %s: refused by llama.cpp; evaluating instead", state.path)
        cache.tokens = []
        return False
    cache.tokens = list(tokens)
    state.status = "loaded"
    return True


__all__ = [
    "MAGIC",
    "PrefixState",
    "file_identity",
    "llama_build",
    "load_prefix",
    "model_prefix_state",
]
