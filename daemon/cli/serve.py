"""``edge-agent serve``: assemble the daemon from its config, bind, serve until a signal."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from edge_agentd.cli.exits import EXIT_CONFIG, EXIT_UNAVAILABLE

if TYPE_CHECKING:
    import logging


def serve(args: argparse.Namespace) -> int:
    import logging  # noqa: PLC0415 - the client commands start without it

    from edge_agentd.cli.logs import configure  # noqa: PLC0415

    configure(args.log_level)  # `<N>` syslog priorities under systemd (journalctl -p err)
    log = logging.getLogger("edge_agentd.cli")
    if not args.demo:
        return _serve(args, log, None)
    from edge_agentd.service.assembly.assemble import demo_device  # noqa: PLC0415

    with demo_device() as tree:
        return _serve(args, log, tree)


def _serve(args: argparse.Namespace, log: logging.Logger, demo_device: Path | None) -> int:
    import logging  # noqa: PLC0415 - the client commands start without it
    import signal  # noqa: PLC0415

    from edge_agentd.protocol.endpoints import (  # noqa: PLC0415
        EndpointError,
        EndpointInUse,
        own_endpoint,
    )
    from edge_agentd.service.assembly.assemble import assemble  # noqa: PLC0415
    from edge_agentd.service.config.settings import ConfigError  # noqa: PLC0415
    from edge_agentd.service.mcp.makelistener import make_listener  # noqa: PLC0415
    from edge_agentd.service.mqtt.makebridge import make_bridge  # noqa: PLC0415

    try:
        server = assemble(
            args.config, model=args.model, endpoints=args.endpoint, demo_device=demo_device
        )
        bridge = make_bridge(server.settings, server.options.registry)  # None without [mqtt]
        listener = make_listener(server.settings)  # None without [mcp]
    except ConfigError as exc:
        log.error("config error: %s", exc)
        return EXIT_CONFIG
    try:
        bound = server.bind()
    except EndpointInUse as exc:
        log.error("%s", exc)
        return EXIT_UNAVAILABLE
    except EndpointError as exc:
        log.error("%s", exc)
        return EXIT_CONFIG
    # The bridge and the MCP server are clients of the daemon's own socket: ipc if it has one.
    own = own_endpoint(bound) or ""
    if not own and (bridge is not None or listener is not None):
        log.error("config error: the daemon has no endpoint the bridge or MCP server can reach")
        server.close()
        return EXIT_CONFIG
    if listener is not None:
        try:
            url = listener.bind()
        except OSError as exc:
            section = server.settings.mcp
            where = f"{section.host}:{section.port}" if section else "?"
            log.error("mcp: cannot listen on %s: %s", where, exc.strerror or exc)
            server.close()
            return EXIT_UNAVAILABLE
        server.attach("mcp", listener.status, [listener.thread])
        listener.start(own)
        log.info("mcp: Model Context Protocol server on %s", url)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.stop())
    # SIGHUP (a closed terminal, a stray `kill -HUP`, a reload habit) would end the daemon by
    # default and lose the runs it accepted. It is ignored: the config is read at start only.
    # Each handler only sets a flag and wakes the loop, which acts and logs: a handler runs
    # between two bytecodes of the main thread, even inside another handler or a log write.
    signal.signal(signal.SIGHUP, lambda *_: server.lifecycle.hang_up())
    # Not "listening": the daemon is not ready until the model has loaded ("model ... ready").
    log.info(
        "edge-agent: loading model %s; %s answers `loading` until then",
        server.options.model_spec,
        ", ".join(bound),
    )
    if bridge is not None:
        server.attach("mqtt", bridge.status, bridge.threads)
        triggers = server.triggers.runner
        triggers.listeners.append(bridge.follow_triggers(triggers.enabled_names()))
        bridge.start(own)
    code = server.serve()
    if listener is not None:
        listener.stop()
    if bridge is not None:
        bridge.stop()  # passes on the daemon's last replies, then says offline
    log.info("edge-agent stopped")
    # Interpreter shutdown joins every non-daemon thread: a plugin's (started at import or by a
    # skill) would keep a stopped daemon alive for ever, and a run stuck in native code would
    # make shutdown wait on it or crash under it. Every client has had its reply by now, so
    # leave at once instead (docs/skills.md, "When a plugin is broken").
    left = [
        thread.name
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and thread.is_alive() and not thread.daemon
    ]
    if server.worker_alive or left:
        if server.worker_alive:
            log.warning("a run did not return in time; exiting without waiting for it")
        if left:
            log.warning("exiting without waiting for threads left running: %s", ", ".join(left))
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
