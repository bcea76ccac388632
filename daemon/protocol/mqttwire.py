"""Protocol v1 over MQTT: the topics, the JSON request an ``ask`` carries, and the replies.

Shared by the daemon's bridge (:mod:`edge_agentd.service.mqtt`) and the MQTT client
(:mod:`edge_agentd.client.mqttclient`); nothing here touches the network. ``docs/mqtt.md`` is the
prose version.

An ask is a JSON object with the fields of protocol v1's ``run`` (``query``, ``workflow``,
``max_iterations``, ``deadline_ms``, ``stream``), plus, for MQTT 3.1.1 clients that cannot send an
MQTT v5 Response Topic, ``reply_to`` (the topic to answer on) and ``id`` (echoed in every reply).
The run fields themselves are checked by the daemon, exactly as for a ZeroMQ client: this module
reads only the envelope.

``{"op": "cancel", "target": ID}`` on the same topic cancels the ask whose ``id`` was ``ID`` and
whose reply topic is this one's: MQTT does not tell a subscriber who published, so the reply topic
and the id stand in for ZeroMQ's connection as the run's owner.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
from typing import TYPE_CHECKING, Any, Final

from edge_agentd.protocol.framing import MAX_ID_CHARS, PROTOCOL_VERSION

if TYPE_CHECKING:  # the wire models (pydantic) stay out of the client's start-up
    from edge_agentd.protocol.wire import ErrorCode

DEFAULT_PREFIX: Final = "edge-agent"
DEFAULT_DISCOVERY_PREFIX: Final = "homeassistant"
MAX_TOPIC_BYTES: Final = 65535
MQTT_FIELDS: Final = frozenset({"reply_to", "id", "v", "op"})
"""The envelope: read here; every other field (and ``v``) is the daemon's to judge."""
OPS: Final = ("run", "cancel")
"""The ops an ask may name (``op``, default ``run``)."""
ONLINE: Final = "online"
OFFLINE: Final = "offline"

_NODE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_NODE_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_PREFIX = re.compile(r"[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*")


def check_node_id(node: str) -> str:
    """``node`` if it is safe as one topic level and as a Home Assistant discovery node id.

    That is 1-64 characters from ``[A-Za-z0-9_-]``: no ``/``, no wildcard, no space, no dot.
    """
    if not _NODE.fullmatch(node):
        raise ValueError(
            f"{node!r} is not a topic-safe node id: use 1-64 letters, digits, '_' or '-'"
        )
    return node


def check_prefix(prefix: str) -> str:
    """A topic prefix: one or more topic-safe levels joined by ``/``, no wildcards."""
    if not _PREFIX.fullmatch(prefix) or len(prefix) > 200:
        raise ValueError(
            f"{prefix!r} is not a topic-safe prefix: levels of letters, digits, '_' or '-' "
            "joined by '/'"
        )
    return prefix


def default_node_id(hostname: str | None = None) -> str:
    """The host's name up to its first dot, with every other unsafe character made ``-``."""
    name = (hostname if hostname is not None else socket.gethostname()).split(".")[0]
    node = _NOT_NODE_CHARS.sub("-", name).strip("-")[:64]
    return node or "edge-agent"


def valid_reply_topic(topic: object) -> bool:
    """Whether a client may be answered on ``topic``: a publishable topic name."""
    return (
        isinstance(topic, str)
        and _is_text(topic)
        and 0 < len(topic.encode("utf-8")) <= MAX_TOPIC_BYTES
        and not any(c in topic for c in "+#\0")
        and not topic.startswith("$")
    )


@dataclasses.dataclass(frozen=True)
class Topics:
    """Every topic of one node, under ``<prefix>/<node>/``."""

    prefix: str
    node: str

    @property
    def base(self) -> str:
        return f"{self.prefix}/{self.node}"

    @property
    def ask(self) -> str:
        """Requests: JSON asks, answered on the Response Topic or ``reply_to``."""
        return f"{self.base}/ask"

    @property
    def status(self) -> str:
        """Retained ``online``/``offline``; ``offline`` is also the Last Will."""
        return f"{self.base}/status"

    @property
    def info(self) -> str:
        """Retained JSON: node, version, model, skills, workflows, topics."""
        return f"{self.base}/info"

    @property
    def question(self) -> str:
        """Plain text questions (Home Assistant's text entity); answered on :attr:`answer`."""
        return f"{self.base}/question"

    @property
    def answer(self) -> str:
        """Retained: the last answer to a :attr:`question`, at most 255 characters."""
        return f"{self.base}/answer"

    @property
    def answer_attributes(self) -> str:
        """Retained JSON: the last answer whole, its outcome, question and time."""
        return f"{self.base}/answer/attributes"

    @property
    def busy(self) -> str:
        """Retained ``ON`` while the model is running a question, else ``OFF``."""
        return f"{self.base}/busy"

    def sensor(self, key: str) -> str:
        """Retained: one hardware reading, a plain number."""
        return f"{self.base}/sensor/{key}"

    def owns(self, topic: str) -> bool:
        """Whether ``topic`` is this node's own: ``<prefix>/<node>`` or any topic below it."""
        return under(topic, self.base)

    @staticmethod
    def all_status(prefix: str) -> str:
        """The subscription that sees every node's status (a fleet)."""
        return f"{prefix}/+/status"

    @staticmethod
    def all_info(prefix: str) -> str:
        return f"{prefix}/+/info"

    def as_dict(self) -> dict[str, str]:
        return {
            "ask": self.ask,
            "status": self.status,
            "info": self.info,
            "question": self.question,
            "answer": self.answer,
            "answer_attributes": self.answer_attributes,
            "busy": self.busy,
            "sensors": self.sensor("+"),
        }


def under(topic: str, root: str) -> bool:
    """Whether ``topic`` is ``root`` or a topic below it (MQTT levels, case-sensitive)."""
    return topic == root or topic.startswith(root + "/")


def node_of(topic: str, prefix: str) -> str | None:
    """The node in ``<prefix>/<node>/...``, or None."""
    head = prefix + "/"
    if not topic.startswith(head):
        return None
    node = topic[len(head) :].split("/", 1)[0]
    return node or None


# -- asks --------------------------------------------------------------------------------------


class AskError(Exception):
    """An ask that gets an ``error`` reply (when it has a usable reply topic)."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        reply_to: str | None = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.reply_to = reply_to
        self.request_id = request_id


@dataclasses.dataclass(frozen=True)
class Ask:
    """A parsed ask: where to answer, the requester's id, the op (``run`` or ``cancel``) and its
    fields for the daemon."""

    reply_to: str
    request_id: Any
    fields: dict[str, Any]
    op: str = "run"

    @property
    def stream(self) -> bool:
        return self.fields.get("stream") is True


def _usable_id(value: Any) -> bool:
    """An ``id`` or ``target`` a reply can carry: an integer JSON and msgpack both keep exact,
    or 1-128 characters of real text (a lone surrogate cannot be written out as UTF-8)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) < 2**53
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and _is_text(value)


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_json(payload: bytes) -> Any:
    """The payload's JSON value; ValueError (never RecursionError) for anything else."""
    try:
        return json.loads(payload.decode("utf-8"))
    except RecursionError:
        raise ValueError("it is nested too deep") from None


def parse_ask(
    payload: bytes, *, response_topic: str | None, max_bytes: int, hard_max_bytes: int
) -> Ask:
    """Read an ask's envelope, or raise :class:`AskError` carrying whatever reply topic could be
    read.

    Only what is MQTT's own is checked here: the reply topic, the requester's ``id``, the ``op``
    and a cancel's ``target``. Every other field goes to the daemon as it came, and the daemon
    judges it exactly as it judges a ZeroMQ request (``wire.decode_request``): one set of rules,
    one set of error messages. ``response_topic`` is the MQTT v5 Response
    Topic, which wins over ``reply_to``. A payload over ``hard_max_bytes`` is not even parsed, so
    only a v5 requester hears back about it. No message here quotes the payload.
    """
    v5_reply = response_topic if valid_reply_topic(response_topic) else None
    if len(payload) > hard_max_bytes:
        raise AskError(
            "too_large",
            f"the ask is {len(payload)} bytes; the limit is {max_bytes}",
            v5_reply,
        )
    try:
        data = _read_json(payload)
    except (UnicodeDecodeError, ValueError) as exc:
        why = "it is not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)[:120]
        raise AskError("bad_request", f"the ask is not JSON: {why}", v5_reply) from None
    if not isinstance(data, dict):
        raise AskError("bad_request", "the ask must be a JSON object with a 'query'", v5_reply)
    raw_id = data.get("id")
    request_id = raw_id if _usable_id(raw_id) else None
    raw_reply = data.get("reply_to")
    reply_to = v5_reply or (raw_reply if valid_reply_topic(raw_reply) else None)
    if len(payload) > max_bytes:
        raise AskError(
            "too_large",
            f"the ask is {len(payload)} bytes; the limit is {max_bytes}",
            reply_to,
            request_id,
        )
    if reply_to is None:
        if "reply_to" in data:
            problem = "'reply_to' is not a topic one can publish to"
        else:
            problem = "no MQTT v5 Response Topic and no 'reply_to'"
        raise AskError("bad_request", f"no usable reply topic: {problem}", None, request_id)
    if "id" in data and request_id is None:
        raise AskError(
            "bad_request",
            f"'id' must be a string of 1-{MAX_ID_CHARS} characters or an integer",
            reply_to,
        )
    op = data.get("op", "run")
    if not isinstance(op, str) or op not in OPS:
        raise AskError(
            "bad_request",
            f"'op' must be one of {', '.join(OPS)} (default run)",
            reply_to,
            request_id,
        )
    if op == "cancel" and not _usable_id(data.get("target")):
        raise AskError(
            "bad_request",
            f"a cancel needs 'target': the 'id' of the ask to cancel (a string of "
            f"1-{MAX_ID_CHARS} characters or an integer)",
            reply_to,
            request_id,
        )
    fields = {k: v for k, v in data.items() if k not in MQTT_FIELDS or k == "v"}
    return Ask(reply_to=reply_to, request_id=request_id, fields=fields, op=op)


# -- replies -----------------------------------------------------------------------------------


def reply_payload(reply: dict[str, Any], request_id: Any, node: str) -> bytes:
    """A daemon reply as the JSON an MQTT requester gets: the requester's id, and the node."""
    out = {k: v for k, v in reply.items() if k != "_frames"}
    out["id"] = request_id
    out["node"] = node
    return json.dumps(out, ensure_ascii=False, default=_jsonable).encode("utf-8")


def error_payload(request_id: Any, code: ErrorCode, message: str, node: str) -> bytes:
    return reply_payload(
        {"v": PROTOCOL_VERSION, "kind": "error", "code": code, "message": message},
        request_id,
        node,
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


__all__ = [
    "DEFAULT_DISCOVERY_PREFIX",
    "DEFAULT_PREFIX",
    "OFFLINE",
    "ONLINE",
    "Ask",
    "AskError",
    "Topics",
    "check_node_id",
    "check_prefix",
    "default_node_id",
    "error_payload",
    "node_of",
    "parse_ask",
    "reply_payload",
    "under",
    "valid_reply_topic",
]
