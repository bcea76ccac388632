"""Which kept run holds each idempotency key, and what it asked (the journal's thread).

A key belongs to its request: a ``run`` with a key answers from the run that holds it only when it
asks the same query with the same workflow; anything else is ``key_conflict`` (docs/protocol.md,
"The run journal"), as a payment API answers an idempotency key sent again with another request.
Only a digest of the query and workflow is kept, so the map's memory does not grow with the
queries' length.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Iterable

import msgpack


def asked_digest(query: str, workflow: str | None) -> bytes:
    """What a run asked, as 16 bytes: equal for the same query and workflow only."""
    packed: bytes = msgpack.packb([query, workflow], use_bin_type=True)
    return hashlib.blake2b(packed, digest_size=16).digest()


@dataclasses.dataclass(frozen=True)
class KeyHolder:
    """The run that holds a key, and the digest of what it asked."""

    run_id: str
    asked: bytes

    def asks(self, query: str, workflow: str | None) -> bool:
        return self.asked == asked_digest(query, workflow)


class Keys:
    """Key -> its holder, read on the serving loop's thread and pruned on the journal's.

    A run id may be used again once its run is over, and the new run's row replaces the old one
    in the journal: the key the old run held then names nothing kept, and is let go (a retry
    with it is run anew, never answered with the new run's result)."""

    def __init__(self) -> None:
        self._holders: dict[str, KeyHolder] = {}
        self._key_of: dict[str, str] = {}
        """Run id -> the key it holds: the other way round, to let go of a replaced run's."""
        self._lock = threading.Lock()

    def get(self, key: str) -> KeyHolder | None:
        with self._lock:
            return self._holders.get(key)

    def hold(self, key: str, run_id: str, query: str, workflow: str | None) -> None:
        holder = KeyHolder(run_id, asked_digest(query, workflow))
        with self._lock:
            self._let_go_of_run(run_id)
            previous = self._holders.get(key)
            if previous is not None:
                self._key_of.pop(previous.run_id, None)
            self._holders[key] = holder
            self._key_of[run_id] = key

    def load(self, rows: Iterable[tuple[str, str, str, str | None]]) -> None:
        """``(key, run_id, query, workflow)`` of the kept runs, at open."""
        holders = {key: KeyHolder(run_id, asked_digest(q, w)) for key, run_id, q, w in rows}
        with self._lock:
            for key, holder in holders.items():
                self._let_go_of_run(holder.run_id)
                self._holders[key] = holder
                self._key_of[holder.run_id] = key

    def release(self, key: str, run_id: str) -> None:
        """Let ``key`` go, unless a newer run than ``run_id`` holds it by now."""
        with self._lock:
            holder = self._holders.get(key)
            if holder is not None and holder.run_id == run_id:
                del self._holders[key]
                self._key_of.pop(run_id, None)

    def release_run(self, run_id: str) -> None:
        """Let go of the key ``run_id`` holds, if any: a run with its id replaces it."""
        with self._lock:
            self._let_go_of_run(run_id)

    def _let_go_of_run(self, run_id: str) -> None:
        key = self._key_of.pop(run_id, None)
        holder = None if key is None else self._holders.get(key)
        if key is not None and holder is not None and holder.run_id == run_id:
            del self._holders[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._holders)


__all__ = ["KeyHolder", "Keys", "asked_digest"]
