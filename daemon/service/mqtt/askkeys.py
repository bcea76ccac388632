"""The seam to the run journal: an MQTT ask asked twice is run once.

MQTT delivers a QoS 1 ask at least once, and a requester that did not hear back may publish the
same ask again. The wire's ``run`` takes an optional ``key`` for that (the journal): runs with one
key are run once. The bridge derives the key from what identifies the ask to its requester, its
Correlation Data (MQTT v5) or its ``id`` (3.1.1), scoped by its reply topic, so two requesters
that happen to pick the same correlation never share a run.

The bridge also says where the run came from: every run it forwards is journaled with the source
``mqtt`` (the wire's ``run`` field ``source``), never the ``zmq`` of its own ZeroMQ connection.
"""

from __future__ import annotations

import hashlib
from typing import Any

KEY_PREFIX = "mqtt-"
SOURCE = "mqtt"
"""The journal's source of every run asked over MQTT."""


def journal_key(reply_to: str | None, request_id: Any, correlation: bytes | None) -> str | None:
    """The run's key: the same for the same ask again, None for an ask nothing identifies."""
    if reply_to is None or (correlation is None and request_id is None):
        return None
    ask = correlation if correlation is not None else repr(request_id).encode("utf-8")
    digest = hashlib.sha256(reply_to.encode("utf-8") + b"\0" + ask).hexdigest()
    return KEY_PREFIX + digest[:40]


def with_journal_key(
    fields: dict[str, Any], reply_to: str | None, request_id: Any, correlation: bytes | None
) -> dict[str, Any]:
    """A run's fields with its journal ``source`` (``mqtt``) and ``key``, unless the ask set a key
    itself. The bridge refuses an ask that names a source of its own (:func:`source_problem`)."""
    key = journal_key(reply_to, request_id, correlation)
    if key is None or "key" in fields:
        return {**fields, "source": SOURCE}
    return {**fields, "key": key, "source": SOURCE}


def source_problem(fields: dict[str, Any]) -> str | None:
    """Why an ask may not go to the daemon as it is: it names the journal's source itself."""
    if "source" in fields:
        return "'source' is not a field of an MQTT ask: the bridge journals every ask as 'mqtt'"
    return None


__all__ = ["SOURCE", "journal_key", "source_problem", "with_journal_key"]
