"""A Python client for the daemon: one DEALER socket, timeouts, progress, Lazy-Pirate retries.

Only idempotent operations (``status``, ``skills``, ``cancel``, ``result``, ``runs``) are retried,
each time with the same request id on a fresh socket. A ``run`` is never sent twice: the model's
work is not repeatable (a ``run`` with a ``key`` may be sent again: the daemon runs it once).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import zmq

from edge_agentd.client.askoptions import AS_THE_DAEMON_SAYS, AskOptions

# framing, not wire: the client never imports pydantic (scripts/bench/bench_cli_start.py).
from edge_agentd.client.errors import (
    BadEndpoint,
    DaemonError,
    Timeout,
    Unavailable,
    new_request_id,
)
from edge_agentd.client.watching import Progress
from edge_agentd.client.watching import watch as watch_results
from edge_agentd.protocol.endpoints import EndpointError, check_endpoint, client_endpoint, ipc_path
from edge_agentd.protocol.framing import IDEMPOTENT_OPS, PROTOCOL_VERSION, FrameError, decode_reply
from edge_agentd.protocol.framing import encode_request as encode

RUN_GRACE_S = 2.0
"""A run's reply may trail its deadline by this much: the daemon interrupts it, then answers."""


def run_wait(timeout: float, wait: float | None, grace: float = RUN_GRACE_S) -> float:
    """How long a client waits for a run's result: its deadline and the grace a reply may trail it
    by, or ``wait`` when that is shorter (``ask --wait``)."""
    whole = timeout + grace
    return whole if wait is None else min(wait, whole)


def checked_endpoint(endpoint: str) -> str:
    """``endpoint`` if it is ``ipc://PATH`` or ``tcp://HOST:PORT`` (``serve``'s rule, any host),
    else BadEndpoint with the likely intended form."""
    try:
        return check_endpoint(endpoint, allow_remote=True)
    except EndpointError as exc:
        message = str(exc)
    rest = endpoint.split("://", 1)[-1].rstrip("/")
    if endpoint.startswith(("/", "./", "~")) or endpoint.endswith(".sock"):
        message += f" (did you mean ipc://{endpoint}?)"
    elif rest and ":" in rest and "/" not in rest:
        message += f" (did you mean tcp://{rest}?)"
    raise BadEndpoint(message)


def _encoded(op: str, request_id: str, fields: Mapping[str, Any]) -> bytes:
    """One request frame, or DaemonError ``bad_request`` naming what msgpack cannot carry (never
    the value itself: it may be huge, or not even printable)."""
    message = {"v": PROTOCOL_VERSION, "id": request_id, "op": op, **fields}
    try:
        return encode(message)
    except OverflowError:
        why = "a number is out of range (protocol v1 integers are at most 64 bits)"
    except UnicodeEncodeError:
        why = "a string is not valid Unicode text (a lone surrogate)"
    except (TypeError, ValueError) as exc:
        why = f"a value msgpack cannot carry ({type(exc).__name__})"
    raise DaemonError("bad_request", f"the request cannot be sent: {why}")


class Client:
    """Talks protocol v1 to one daemon. Not thread-safe: give each thread its own Client."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 2,
        run_grace: float = RUN_GRACE_S,
        context: zmq.Context[Any] | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        self.endpoint = checked_endpoint(endpoint or client_endpoint())
        self.timeout = timeout
        self.retries = retries
        self.run_grace = run_grace
        self._own_context = context is None
        self._context = context or zmq.Context()
        self._socket: zmq.Socket[bytes] | None = None

    # -- operations ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return self.request("status")

    def skills(self, workflow: str | None = None) -> list[dict[str, Any]]:
        skills: list[dict[str, Any]] = self.request("skills", workflow=workflow)["skills"]
        return skills

    def cancel(self, target: str) -> dict[str, Any]:
        return self.request("cancel", target=target)

    def triggers(self) -> list[dict[str, Any]]:
        """Each configured trigger and where it stands (docs/protocol.md, "`triggers`")."""
        triggers: list[dict[str, Any]] = self.request("triggers")["triggers"]
        return triggers

    def watch(
        self, on_result: Progress, *, trigger: str | None = None, check_every: float = 30.0
    ) -> None:
        """Call ``on_result`` with each trigger run's result as it ends, until Ctrl-C or a
        DaemonError (edge_agentd.client.watching)."""
        watch_results(self, on_result, trigger=trigger, check_every=check_every)

    def result(self, run_id: str, *, wait: float = 0.0) -> dict[str, Any]:
        """The journal's record of run ``run_id`` (``state``, ``outcome``, ``answer``, ``events``
        …); with ``wait``, asked again until the run has ended or ``wait`` seconds have passed."""
        until = time.monotonic() + wait
        pause = 0.1
        while True:
            record = self.request("result", target=run_id)
            if record.get("state") not in ("queued", "running") or time.monotonic() >= until:
                return record
            time.sleep(min(pause, max(0.0, until - time.monotonic())))
            pause = min(pause * 2, 1.0)

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The journal's latest runs, newest first."""
        runs: list[dict[str, Any]] = self.request("runs", limit=limit)["runs"]
        return runs

    def run(
        self,
        query: str,
        options: AskOptions = AS_THE_DAEMON_SAYS,
        *,
        on_event: Progress | None = None,
        on_accepted: Progress | None = None,
        request_id: str | None = None,
        key: str | None = None,
        wait: float | None = None,
    ) -> dict[str, Any]:
        """Run the agent on ``query`` as ``options`` ask and return the ``result`` reply.

        With ``key`` (an idempotency key), a run the daemon already has for the key is not run
        again: its result comes back (``run_id`` names it); if that run asked another query or
        workflow, DaemonError ``key_conflict`` (its message names the run). A keyed run that
        times out here is left to finish, so its result can be fetched (:meth:`result`) or asked
        for again.

        The daemon is given the options' timeout as the run's deadline, so it interrupts the run
        and still answers; this waits for it that long and the grace after, or only ``wait``
        seconds (a keyed run that outlasts ``wait`` goes on to its deadline, unkeyed it is
        cancelled);
        ``on_event`` (which asks for streaming) sees each event as it is appended, and
        ``on_accepted`` the ``accepted`` reply (queue position, steps allowed) of a streamed run.
        """

        def progress(reply: dict[str, Any]) -> None:
            if reply["kind"] == "event" and on_event is not None:
                on_event(reply["event"])
            elif reply["kind"] == "accepted" and on_accepted is not None:
                on_accepted(reply)

        streamed = on_event is not None or on_accepted is not None
        return self.request(
            "run",
            **options.fields(query, self.timeout),
            stream=True if streamed else None,
            on_progress=progress if streamed else None,
            timeout=run_wait(options.seconds(self.timeout), wait, self.run_grace),
            request_id=request_id,
            key=key,
        )

    # -- the exchange -------------------------------------------------------------------------

    def request(
        self,
        op: str,
        *,
        timeout: float | None = None,
        on_progress: Progress | None = None,
        request_id: str | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """Send one request and wait for its final reply; raises DaemonError on an error reply."""
        self.check_reachable()
        request_id = request_id or new_request_id()
        payload = _encoded(op, request_id, {k: v for k, v in fields.items() if v is not None})
        wait = self.timeout if timeout is None else timeout
        attempts = 1 + (self.retries if op in IDEMPOTENT_OPS else 0)
        for _ in range(attempts):
            sock = self._connected()
            sock.send(payload)
            try:
                reply = self._await(sock, request_id, time.monotonic() + wait, on_progress)
            except (KeyboardInterrupt, BrokenPipeError):
                # The caller gave up (Ctrl-C), or whoever reads what it prints has gone
                # (`ask --stream | head -1`): free the model for the next question.
                if op == "run":
                    self.cancel_quietly(request_id)
                raise
            if reply is not None:
                return reply
            if op == "run" and fields.get("key") is None:
                # (A keyed run is left to finish: its caller means to come back for it.)
                # On the run's own socket: the daemon takes a cancel only from the connection
                # that sent the run. cancel_quietly then closes it.
                self.cancel_quietly(request_id)
                break
            self._reset()  # Lazy Pirate: a fresh socket, so a late reply cannot be mistaken
        if op == "run":
            raise Timeout(f"no result for run {request_id} within {wait:g} s")
        raise Unavailable(f"no reply from {self.endpoint} after {attempts} tries of {wait:g} s")

    # -- many requests in flight on one connection (the MQTT bridge) ---------------------------

    def send(self, op: str, fields: Mapping[str, Any], *, request_id: str | None = None) -> str:
        """Send one request and return its id at once, without waiting for its reply.

        For a caller with many requests in flight on this one connection, which reads the
        replies with :meth:`receive` (polling :attr:`socket`). ``fields`` go out as given (a
        None is sent as nil). Never retried. DaemonError ``bad_request`` for a request the wire
        cannot carry (nothing is sent), ``busy`` when the socket's send queue is full.
        """
        request_id = request_id or new_request_id()
        payload = _encoded(op, request_id, fields)
        try:
            self.socket.send(payload, zmq.NOBLOCK)
        except zmq.Again:
            raise DaemonError(
                "busy", "the daemon is not taking requests; try again later"
            ) from None
        return request_id

    def receive(self, timeout: float = 0.0) -> dict[str, Any] | None:
        """The next reply to any request of :meth:`send`, or None after ``timeout`` seconds;
        DaemonError ``bad_reply`` for a frame that is not a protocol v1 reply."""
        sock = self.socket
        if timeout > 0 and not sock.poll(round(timeout * 1000)):
            return None
        try:
            frame = sock.recv(zmq.NOBLOCK)
        except zmq.Again:
            return None
        try:
            return decode_reply(frame)
        except FrameError as exc:
            raise DaemonError("bad_reply", exc.message) from None

    @property
    def socket(self) -> zmq.Socket[bytes]:
        """The connected DEALER, for a caller's ``zmq.Poller`` (read it with :meth:`receive`)."""
        return self._connected()

    def _await(
        self,
        sock: zmq.Socket[bytes],
        request_id: str,
        deadline: float,
        on_progress: Progress | None,
    ) -> dict[str, Any] | None:
        while (left := deadline - time.monotonic()) > 0:
            if not sock.poll(max(1, round(left * 1000))):
                return None
            try:
                reply = decode_reply(sock.recv())
            except FrameError as exc:
                raise DaemonError("bad_reply", exc.message) from None
            if reply.get("id") not in (request_id, None):
                continue  # a late reply to an earlier request on this socket
            kind = reply["kind"]
            if kind == "error":
                raise DaemonError(str(reply.get("code")), str(reply.get("message")), reply)
            if kind == "result":
                return reply
            if on_progress is not None:
                on_progress(reply)
        return None

    def cancel_quietly(self, target: str) -> None:
        """Ask the daemon to cancel ``target`` on this socket (the one that sent it), without
        waiting for the reply, then close the socket: a caller on its way out (Ctrl-C)."""
        sock = self._connected()
        sock.send(
            encode(
                {"v": PROTOCOL_VERSION, "id": new_request_id(), "op": "cancel", "target": target}
            )
        )
        # Up to 2 s for the cancel to leave (it waits only while the daemon does not take it):
        # on a loaded board half a second was sometimes too short, and a lost cancel keeps the
        # model busy with a question nobody waits for.
        self._reset(linger_ms=2000)

    def check_reachable(self) -> None:
        """Unavailable, saying why, when the ipc socket is absent or not ours to use: before a
        request waits out its timeout on a daemon that cannot answer."""
        path = ipc_path(self.endpoint)
        if path is None:
            return
        # Under systemd only the service's group may reach the socket (/run/edge-agent is 0750).
        denied = f"no permission to use {path}; join its group (sudo usermod -aG edge-agent USER)"
        try:
            present = Path(path).exists()
        except PermissionError:
            raise Unavailable(denied) from None
        if not present:
            raise Unavailable(f"no daemon socket at {path}; is `edge-agent serve` running?")
        if not os.access(path, os.W_OK):  # connecting to a unix socket needs write permission
            raise Unavailable(denied)

    def _connected(self) -> zmq.Socket[bytes]:
        if self._socket is None:
            sock: zmq.Socket[bytes] = self._context.socket(zmq.DEALER)
            try:
                sock.connect(self.endpoint)
            except zmq.ZMQError as exc:
                # An unclosed socket would make close()'s Context.term() wait for ever.
                sock.close(linger=0)
                raise BadEndpoint(f"cannot connect to {self.endpoint!r}: {exc}") from None
            self._socket = sock
        return self._socket

    def _reset(self, linger_ms: int = 0) -> None:
        if self._socket is not None:
            self._socket.close(linger=linger_ms)
            self._socket = None

    def close(self) -> None:
        self._reset()
        if self._own_context:
            # destroy, not term: any socket still open is closed with linger 0 first, so closing
            # never waits on a peer that is not there.
            self._context.destroy(linger=0)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = [
    "BadEndpoint",
    "Client",
    "DaemonError",
    "Timeout",
    "Unavailable",
    "checked_endpoint",
    "run_wait",
]
