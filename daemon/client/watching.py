"""``watch`` on a :class:`~edge_agentd.client.zmqclient.Client`: each trigger run's result as it
ends, on the client's own socket, until Ctrl-C (the watch is then cancelled) or a DaemonError.

After ``check_every`` s of quiet a ``status`` on the same socket (so no result is missed while it
is asked) tells a daemon that went away (Unavailable after the client's timeout) from one that
restarted (a new pid: the watch is opened again).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import zmq

# A part of Client kept apart (zmqclient.py stays under 400 lines). It names what it uses of the
# client as a protocol of its own, so that zmqclient imports this module and not the other way.
from edge_agentd.client.errors import DaemonError, Unavailable, new_request_id
from edge_agentd.protocol.framing import PROTOCOL_VERSION, FrameError, decode_reply
from edge_agentd.protocol.framing import encode_request as encode

Progress = Callable[[dict[str, Any]], None]
"""What the client calls with each event, result or acceptance it is given."""


class Watcher(Protocol):
    """What ``watch`` uses of a client: its socket, its timeout and three of its requests."""

    endpoint: str
    timeout: float

    @property
    def socket(self) -> zmq.Socket[bytes]: ...

    def status(self) -> dict[str, Any]: ...

    def cancel_quietly(self, target: str) -> None: ...

    def check_reachable(self) -> None: ...


def watch(
    client: Watcher, on_result: Progress, *, trigger: str | None = None, check_every: float = 30.0
) -> None:
    pid = client.status()["pid"]
    watch_id = _open(client, trigger)
    asked: tuple[str, float] | None = None  # the status asked, and when
    try:
        while True:
            sock = client.socket
            if not sock.poll(round(min(check_every, client.timeout) * 1000)):
                if asked is not None and time.monotonic() - asked[1] > client.timeout:
                    raise Unavailable(f"{client.endpoint} stopped answering")
                if asked is None:
                    asked = (new_request_id(), time.monotonic())
                    sock.send(encode({"v": PROTOCOL_VERSION, "id": asked[0], "op": "status"}))
                continue
            try:
                reply = decode_reply(sock.recv())
            except FrameError as exc:
                raise DaemonError("bad_reply", exc.message) from None
            if asked is not None and reply.get("id") == asked[0]:
                asked = None
                if reply.get("pid") != pid:
                    pid, watch_id = reply.get("pid"), _open(client, trigger)
                continue
            if reply.get("id") != watch_id:
                continue
            if reply["kind"] == "error":
                raise DaemonError(str(reply.get("code")), str(reply.get("message")), reply)
            if reply["kind"] != "event":
                return  # the watch was ended
            on_result(reply["event"])
    except KeyboardInterrupt:
        client.cancel_quietly(watch_id)
        raise


def _open(client: Watcher, trigger: str | None) -> str:
    client.check_reachable()
    watch_id = new_request_id()
    message = {"v": PROTOCOL_VERSION, "id": watch_id, "op": "watch"}
    if trigger is not None:
        message["trigger"] = trigger
    client.socket.send(encode(message))
    return watch_id


__all__ = ["Progress", "Watcher", "watch"]
