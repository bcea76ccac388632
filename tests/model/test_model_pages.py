"""Giving memory back: a read-only file mapping's pages dropped from the process (and read back
the same), a writable mapping of the same file never touched."""

from __future__ import annotations

import mmap
from pathlib import Path

from edge_agentd.model.pages import drop_file_pages, file_mappings, trim_heap

PAGE = mmap.PAGESIZE


def resident_kib(path: Path) -> int:
    """The resident KiB of this process's mappings of ``path`` (from /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and ":" not in fields[0]:
            inside = fields[-1] == str(path.resolve())
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


def test_a_read_only_mapping_is_dropped_and_reads_back_the_same(tmp_path: Path) -> None:
    path = tmp_path / "weights.bin"
    data = bytes(range(256)) * (64 * PAGE // 256)
    path.write_bytes(data)
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as view:
        assert sum(view[offset] for offset in range(0, len(data), PAGE)) >= 0  # touch each page
        assert resident_kib(path) >= 64 * PAGE // 1024
        assert file_mappings(path)
        assert drop_file_pages(path) == len(data)
        assert resident_kib(path) == 0
        assert view[:] == data  # the pages come back from the file, unchanged


def test_a_writable_mapping_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "scratch.bin"
    path.write_bytes(b"\0" * 8 * PAGE)
    with path.open("r+b") as file, mmap.mmap(file.fileno(), 0) as view:
        view[:5] = b"edits"
        assert file_mappings(path) == []
        assert drop_file_pages(path) == 0
        assert view[:5] == b"edits"


def test_no_mapping_and_a_missing_maps_file_drop_nothing(tmp_path: Path) -> None:
    assert drop_file_pages(tmp_path / "never-mapped.gguf") == 0
    assert file_mappings(tmp_path / "x", maps=tmp_path / "no-such-maps") == []
    trim_heap()  # harmless at any time
