"""The Model Context Protocol server itself, on the official ``mcp`` SDK's low-level ``Server``:
``tools/list`` and ``tools/call``, answered through the daemon's own socket
(:class:`~edge_agentd.service.mcp.backend.DaemonBackend`). Both transports serve this one
server: streamable HTTP in ``serve`` (http.py), stdio in ``edge-agent mcp`` (stdio.py).

A tool's own failure (bad arguments, a skill that raised or overran its timeout, a busy daemon)
is a tool result with ``isError`` and a sentence saying what to do, the MCP way, so the calling
model can correct itself; an unknown tool is a JSON-RPC error, as the SDK answers an unknown
method. The blocking requests run on worker threads, a bounded number at once, never on the
event loop.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
from collections.abc import Callable
from typing import Any, NoReturn

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from edge_agentd.client.errors import DaemonError
from edge_agentd.service.config.mcp import McpSettings
from edge_agentd.service.mcp.backend import DaemonBackend
from edge_agentd.service.mcp.tools import (
    ASK,
    RESULT,
    model_tools,
    one_line,
    skill_text,
    skill_tools,
    structured,
)

log = logging.getLogger(__name__)

NAME = "edge-agent"
MAX_WORKERS = 8
"""Requests to the daemon at once; more wait their turn on the event loop, costing no thread."""
LISTENERS = 64


class Tools:
    """The tools one daemon offers, their calls, and the clients told when the list changes.

    ``counts`` holds ``tools_listed``, ``tool_calls``, ``tool_errors``, ``unknown_tools`` and
    ``list_changed_sent``; any thread may read it.
    """

    def __init__(
        self, backend: DaemonBackend, settings: McpSettings, *, notify: bool = False
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.notify = notify
        """Keep the clients that list the tools, for :meth:`watch` to tell (stdio only)."""
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(MAX_WORKERS)
        self._listeners: collections.deque[ServerSession] = collections.deque(maxlen=LISTENERS)
        self._names: frozenset[str] | None = None

    def _count(self, name: str) -> None:
        with self._lock:
            self.counts[name] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)

    async def _blocking(self, function: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(function, limiter=self._limiter)

    async def list(self) -> list[dict[str, Any]]:
        skills = await self._blocking(self.backend.skills)
        tools = skill_tools(skills, self.settings.skills)
        if self.settings.ask:
            tools += model_tools(self.settings.ask_wait_s)
        self._names = frozenset(tool["name"] for tool in tools)
        return tools

    # -- the handlers ---------------------------------------------------------------------------

    async def on_list_tools(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._count("tools_listed")
        if self.notify:
            self._listen(ctx.session)
        try:
            tools = await self.list()
        except DaemonError as exc:
            raise MCPError(types.INTERNAL_ERROR, f"the daemon did not answer: {exc}") from None
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in tools])

    async def on_call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._count("tool_calls")
        arguments = dict(params.arguments or {})
        name = params.name
        try:
            if self.settings.ask and name == ASK:
                return await self._ask(arguments)
            if self.settings.ask and name == RESULT:
                return await self._result(arguments)
            if self.settings.skills is not None and name not in self.settings.skills:
                await self._unknown(name)
            reply = await self._blocking(lambda: self.backend.call(name, arguments))
        except DaemonError as exc:
            if exc.code == "not_found" and not (self.settings.ask and _is_model_tool(name)):
                await self._unknown(name)
            if exc.code == "bad_request":
                return self.failed(exc.message)
            return self.failed(f"{name}: {exc.code}: {exc.message}")
        if not reply.get("ok"):
            return self.failed(f"{name} failed: {reply.get('error')}")
        return self.answer(skill_text(name, reply.get("result")), structured(reply.get("result")))

    async def _unknown(self, name: str) -> NoReturn:
        self._count("unknown_tools")
        try:
            await self.list()
        except DaemonError as exc:  # the error then says "see tools/list" instead of the names
            log.info("mcp: the tools could not be listed for an unknown tool's error: %s", exc)
        known = ", ".join(sorted(self._names or ())) or "see tools/list"
        raise MCPError(types.INVALID_PARAMS, f"no tool named {name[:128]!r}; the tools: {known}")

    # -- ask and result -------------------------------------------------------------------------

    async def _ask(self, arguments: dict[str, Any]) -> types.CallToolResult:
        question = arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            return self.failed("ask needs `question`, a non-empty string")
        wait = _seconds(arguments.get("wait_s"), self.settings.ask_wait_s)
        key = arguments.get("key")
        if wait is None or (key is not None and not isinstance(key, str)):
            return self.failed("ask: `wait_s` must be a number of seconds, `key` a string")
        extra = set(arguments) - {"question", "wait_s", "key"}
        if extra:
            return self.failed(
                f"ask takes question, wait_s and key, not {', '.join(sorted(extra))}"
            )
        asked = await self._blocking(lambda: self.backend.ask(question, wait_s=wait, key=key))
        if asked.reply is None:
            text = (
                f"Still running after {wait:g} s: call `result` with run_id {asked.run_id} "
                "for the answer."
            )
            return self.answer(text, {"run_id": asked.run_id, "key": asked.key, "state": "running"})
        return self._run_answer(asked.run_id, asked.reply)

    async def _result(self, arguments: dict[str, Any]) -> types.CallToolResult:
        run_id = arguments.get("run_id")
        key = arguments.get("key")
        given = [value for value in (run_id, key) if value is not None]
        if len(given) != 1 or not isinstance(given[0], str) or not given[0]:
            return self.failed("result needs `run_id` (the id `ask` returned) or `key`, one")
        wait = _seconds(arguments.get("wait_s"), 0.0)
        if wait is None:
            return self.failed("result: `wait_s` must be a number of seconds")
        record = await self._blocking(lambda: self.backend.result(run_id, key=key, wait_s=wait))
        run_id = str(record.get("run_id") or run_id)
        if record.get("state") in ("queued", "running"):
            text = f"Run {run_id} is still {record.get('state')}: ask `result` again shortly."
            return self.answer(text, {"run_id": run_id, "state": record.get("state")})
        return self._run_answer(run_id, record)

    def _run_answer(self, run_id: str, reply: dict[str, Any]) -> types.CallToolResult:
        answer = reply.get("answer")
        outcome = reply.get("outcome")
        content = {"run_id": run_id, "state": "done", "outcome": outcome, "answer": answer}
        if answer is None:
            return self.answer(
                f"No answer: the run ended {outcome or reply.get('reason')}.", content
            )
        return self.answer(str(answer), content)

    # -- results --------------------------------------------------------------------------------

    @staticmethod
    def answer(text: str, content: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(text=one_line(text))], structured_content=content
        )

    def failed(self, text: str) -> types.CallToolResult:
        self._count("tool_errors")
        return types.CallToolResult(content=[types.TextContent(text=one_line(text))], is_error=True)

    # -- the list changes -----------------------------------------------------------------------

    def _listen(self, session: ServerSession) -> None:
        with self._lock:
            if session not in self._listeners:
                self._listeners.append(session)

    async def watch(self) -> None:
        """Read the tool list every ``[mcp] watch_s``; when it changed, tell every client that
        listed it (a client gone is dropped)."""
        while True:
            await anyio.sleep(self.settings.watch_s)
            before = self._names
            try:
                await self.list()
            except DaemonError as exc:
                log.info(
                    "mcp: the skills could not be read (%s); the list is read again later", exc
                )
                continue
            if before is None or before == self._names:
                continue
            log.info("mcp: the tool list changed; telling %d clients", len(self._listeners))
            with self._lock:
                listeners = list(self._listeners)
            for session in listeners:
                try:
                    with anyio.fail_after(2):
                        await session.send_tool_list_changed()
                    self._count("list_changed_sent")
                except Exception as exc:  # noqa: BLE001 - a client gone: forgotten, logged
                    log.debug("mcp: a client could not be told (%s); forgotten", exc)
                    with self._lock:
                        if session in self._listeners:
                            self._listeners.remove(session)


def _is_model_tool(name: str) -> bool:
    return name in (ASK, RESULT)


def _seconds(value: Any, default: float) -> float | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), 3600.0)


def build(tools: Tools, version: str) -> Server[Any]:
    """The low-level server whose only handlers are ``tools/list`` and ``tools/call``."""
    return Server(
        NAME,
        version=version,
        instructions=(
            "Tools that read this device (its sensors, clock, system) and ask its own model; "
            "every result is read from the device itself."
        ),
        on_list_tools=tools.on_list_tools,
        on_call_tool=tools.on_call_tool,
    )


def init_options(server: Server[Any]) -> InitializationOptions:
    return server.create_initialization_options(NotificationOptions(tools_changed=True))


__all__ = ["NAME", "Tools", "build", "init_options"]
