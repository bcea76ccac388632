"""Streamable HTTP for ``serve``: the SDK's session manager behind a guard, served by uvicorn on a
:class:`~edge_agentd.service.threads.daemonthread.DaemonThread` of its own (so a crash of the
event loop shows in ``status``, and the ZeroMQ serving loop never waits on it).

The guard answers before the SDK reads a byte of the body: an address outside loopback and
``allow`` gets 403, a missing or wrong bearer token (with ``token_file``) 401, a request from a
browser page (it carries ``Origin``: a DNS-rebinding page on an allowed machine) 403. The SDK
bounds the rest: bodies (413), open sessions (503) and idle ones (closed); uvicorn bounds the
open connections (503) and the size of headers.
"""

from __future__ import annotations

import collections
import contextlib
import hmac
import ipaddress
import logging
import socket
import threading
from typing import Any

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from edge_agentd.service.config.mcp import LOOPBACK, McpSettings
from edge_agentd.service.mcp.server import Tools, build
from edge_agentd.service.threads.daemonthread import DaemonThread

log = logging.getLogger(__name__)

STOP_S = 5.0
MAX_HEADER_BYTES = 16 * 1024
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def client_address(scope: Scope) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The peer's address (an IPv4 address mapped into IPv6 as IPv4), or None if unknown."""
    client = scope.get("client")
    if not client:
        return None
    try:
        address = ipaddress.ip_address(str(client[0]).split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class Guard:
    """Refuses a request from anyone the config does not name, before the app sees it."""

    def __init__(
        self,
        app: ASGIApp,
        networks: list[Network],
        token: str | None,
        counts: collections.Counter[str],
        lock: threading.Lock,
    ) -> None:
        self.app = app
        self.networks = networks
        self.token = None if token is None else f"Bearer {token}".encode()
        self.counts = counts
        self.lock = lock

    def _count(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self._count("http_requests")
        address = client_address(scope)
        if address is None or not any(address in network for network in self.networks):
            self._count("refused_address")
            log.info("mcp: refused a request from %s: not loopback or in [mcp] allow", address)
            await _refuse(send, 403, "this address may not connect: see [mcp] allow")
            return
        headers = dict(scope.get("headers") or [])
        if b"origin" in headers:
            self._count("refused_origin")
            await _refuse(send, 403, "requests from web pages are refused")
            return
        if self.token is not None and not hmac.compare_digest(
            headers.get(b"authorization", b""), self.token
        ):
            self._count("refused_token")
            await _refuse(send, 401, "a bearer token is required", bearer=True)
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, text: str, *, bearer: bool = False) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(body)),
    ]
    if bearer:
        headers.append((b"www-authenticate", b'Bearer realm="edge-agent"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HttpListener:
    """The streamable HTTP server: bound at :meth:`bind` (so a port in use stops ``serve`` with
    a clear error), served from :meth:`start` until :meth:`stop`."""

    def __init__(self, settings: McpSettings, tools: Tools, token: str | None, version: str):
        self.settings = settings
        self.tools = tools
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        server = build(tools, version)
        loopback = settings.host in LOOPBACK
        app = server.streamable_http_app(
            streamable_http_path=settings.path,
            max_request_body_size=settings.max_body_bytes,
            session_idle_timeout=settings.session_idle_s,
            max_sessions=settings.max_sessions,
            host=settings.host,
            # On the LAN the Host header is whatever name the client used: the guard's address
            # and Origin checks stand in for the SDK's Host check, which needs every name.
            transport_security=None
            if loopback
            else TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.app = Guard(app, settings.networks(), token, self.counts, self._lock)
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._stopping = False
        self.address = ""
        self.thread = DaemonThread("edge-agent-mcp", self._serve, ask_stop=self._ask_stop)

    def bind(self) -> str:
        """Bind and listen; the URL clients use. OSError when the address cannot be had."""
        host = self.settings.host
        info = socket.getaddrinfo(host, self.settings.port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(info[4])
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        self._socket = sock
        bound_host, port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.address = f"http://{shown}:{port}{self.settings.path}"
        return self.address

    def start(self, endpoint: str) -> None:
        """Serve, reaching the daemon at ``endpoint``."""
        self.tools.backend.endpoint = endpoint
        self.thread.start()

    def _serve(self) -> None:
        sock = self._socket
        if sock is None:
            raise RuntimeError("the MCP listener was started before it was bound")
        config = uvicorn.Config(
            self.app,
            http="h11",
            ws="none",
            lifespan="on",
            log_config=None,
            access_log=False,
            limit_concurrency=self.settings.max_connections,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=2,
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        )
        server = uvicorn.Server(config)
        with self._lock:
            self._server = server
            server.should_exit = self._stopping
        # No watch of the tool list here: the skills change only when the daemon restarts, and
        # that ends this server and every session with it (stdio.py's server outlives them).
        anyio.run(self._main, server, sock)

    @staticmethod
    async def _main(server: uvicorn.Server, sock: socket.socket) -> None:
        await server.serve(sockets=[sock])

    def _ask_stop(self) -> None:
        with self._lock:
            self._stopping = True
            if self._server is not None:
                self._server.should_exit = True

    def stop(self) -> None:
        self.thread.stop(STOP_S)
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()

    def status(self) -> dict[str, Any]:
        with self._lock:
            counts = dict(self.counts)
        return {
            "url": self.address,
            "serving": self.thread.is_alive(),
            "counters": {**counts, **self.tools.snapshot()},
        }


__all__ = ["Guard", "HttpListener", "client_address"]
