"""The daemon's real work, run as the main process of edge-agent.service under a real systemd.

tests/package/test_systemd_unit.py starts this through the unit's own sandbox (only ExecStart and logging
are overridden) and reads the JSON report it prints. It loads a GGUF with llama.cpp and decodes
under a JSON-schema grammar, binds pyzmq ipc and tcp sockets and answers over them, tells systemd
READY=1, and probes that the hardening is really in force (so that a directive systemd silently
ignored cannot pass as one the workload survived).

Usage: python sandbox_workload.py MODEL.gguf
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any


def _status_fields() -> dict[str, str]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in {"NoNewPrivs", "Seccomp", "CapBnd", "CapEff", "Uid", "Gid"}:
            fields[key] = value.strip()
    return fields


def _errno_of(action: Any) -> str:
    """Runs ``action`` and names the errno it failed with, or "ok"."""
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return "ok"


def _write_under(directory: str) -> None:
    probe = Path(directory) / "edge-agent-write-probe"
    probe.write_text("x")
    probe.unlink()


def _send_off_device() -> None:
    # 192.0.2.1 is TEST-NET-1: never a real host, so nothing leaves even where the send succeeds.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"probe", ("192.0.2.1", 9))


def probe_sandbox() -> dict[str, Any]:
    return {
        "status": _status_fields(),
        "write_usr": _errno_of(lambda: _write_under("/usr")),
        "write_etc": _errno_of(lambda: _write_under("/etc")),
        "write_tmp": _errno_of(lambda: _write_under("/tmp")),
        "write_state": _errno_of(lambda: _write_under(os.environ["STATE_DIRECTORY"])),
        "write_cache": _errno_of(lambda: _write_under(os.environ["CACHE_DIRECTORY"])),
        "list_home": _errno_of(lambda: os.listdir("/home")),
        "list_root": _errno_of(lambda: os.listdir("/root")),
        "mmap_write_exec": _errno_of(
            lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        ),
        "socket_netlink": _errno_of(
            lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW).close()
        ),
        "socket_packet": _errno_of(
            lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
        ),
        "dev_entries": sorted(os.listdir("/dev")),
        "send_off_device": _errno_of(_send_off_device),
    }


def run_llama(model_path: str) -> dict[str, Any]:
    import llama_cpp

    # On a CPU with AMX, llama.cpp's AMX kernels crash on the embedded model (see runtime.py);
    # test_systemd_unit.py copies scripts/bench/peer_llama.py beside this file.
    from peer_llama import guard_high_level_llama

    guard_high_level_llama()

    llm = llama_cpp.Llama(model_path=model_path, n_ctx=512, n_threads=2, verbose=False)
    schema = {
        "type": "object",
        "properties": {"final_answer": {"type": "string"}},
        "required": ["final_answer"],
    }
    grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    completion = llm.create_completion(
        "Answer in JSON. What is 2 + 2?", max_tokens=12, temperature=0.0, grammar=grammar
    )
    usage = completion["usage"]  # type: ignore[index]
    return {
        "text": completion["choices"][0]["text"],  # type: ignore[index]
        "completion_tokens": usage["completion_tokens"],
    }


def run_zmq(runtime_directory: str) -> dict[str, Any]:
    import zmq

    context = zmq.Context()
    try:
        router = context.socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        socket_path = os.path.join(runtime_directory, "agent.sock")
        router.bind(f"ipc://{socket_path}")
        router.bind("tcp://127.0.0.1:*")
        tcp_endpoint = router.getsockopt(zmq.LAST_ENDPOINT).decode()
        mode = stat.S_IMODE(os.stat(socket_path).st_mode)
        replies = []
        for endpoint in (f"ipc://{socket_path}", tcp_endpoint):
            dealer = context.socket(zmq.DEALER)
            dealer.setsockopt(zmq.LINGER, 0)
            dealer.setsockopt(zmq.RCVTIMEO, 5000)
            dealer.connect(endpoint)
            dealer.send(b"ping")
            if not router.poll(5000):
                raise TimeoutError(f"no request arrived over {endpoint}")
            identity, request = router.recv_multipart()
            router.send_multipart([identity, b"pong:" + request])
            replies.append(dealer.recv().decode())
            dealer.close()
        router.close()
        return {
            "replies": replies,
            "socket_mode": oct(mode),
            "runtime_dir_mode": oct(stat.S_IMODE(os.stat(runtime_directory).st_mode)),
        }
    finally:
        context.term()


def notify(message: str) -> None:
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        sock.sendall(message.encode())


def main() -> int:
    report: dict[str, Any] = {"sandbox": probe_sandbox()}
    report["llama"] = run_llama(sys.argv[1])
    report["zmq"] = run_zmq(os.environ["RUNTIME_DIRECTORY"])
    notify("READY=1\nSTATUS=sandbox workload done")
    report["watchdog_usec"] = os.environ.get("WATCHDOG_USEC")
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
