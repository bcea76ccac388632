"""Memory the daemon gives back to the system once the model is loaded.

Two kinds: the C heap's free pages (malloc keeps what a load freed), and the model file's pages
that loading touched but no decode reads again. llama.cpp copies some weights into a buffer of
their own, rearranged for its faster kernels (the "repacked" weights); their pages in the file
mapping stay resident, counted in the process's RSS, though only the copies are used. Dropping
the mapping's pages leaves the file in the page cache: what decoding reads comes back at the
cost of a minor fault each, and what it never reads (those originals) becomes cache the kernel
may reclaim.
"""

from __future__ import annotations

import ctypes
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_MADV_DONTNEED = 4


def _libc_function(name: str) -> Any:
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), name)  # glibc; absent elsewhere
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _libc_function("malloc_trim")
_MADVISE = _libc_function("madvise")
if _MADVISE is not None:
    _MADVISE.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    _MADVISE.restype = ctypes.c_int


def trim_heap() -> None:
    """Hand the heap's free pages back to the system. Loading a model frees some ten MiB of
    scratch memory (the GGUF's metadata, weight repacking) that malloc would otherwise keep."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def file_mappings(path: Path, maps: Path = Path("/proc/self/maps")) -> list[tuple[int, int]]:
    """The (start, end) addresses of this process's read-only mappings of ``path``: only
    there is dropping a page never a loss (a written private page would be)."""
    try:
        text = maps.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []  # no /proc: nothing to drop, nothing is lost
    target = str(path.resolve())
    found = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5] == target and "w" not in fields[1]:
            start, end = (int(value, 16) for value in fields[0].split("-"))
            found.append((start, end))
    return found


def drop_file_pages(path: Path) -> int:
    """Drop this process's resident pages of its read-only mappings of ``path`` (the model
    file llama.cpp maps); returns the bytes of mapping advised. The pages stay in the page
    cache, and a later read maps them again."""
    if _MADVISE is None:
        return 0
    advised = 0
    for start, end in file_mappings(path):
        if _MADVISE(start, end - start, _MADV_DONTNEED) != 0:
            error = ctypes.get_errno()
            log.warning("could not drop the model file's pages: %s", os.strerror(error))
            continue
        advised += end - start
    return advised


__all__ = ["drop_file_pages", "file_mappings", "trim_heap"]
