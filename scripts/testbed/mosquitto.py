"""A real Mosquitto (Debian's ``mosquitto`` package) on a random loopback port, for the MQTT tests
and the soaks.

Each broker has its own config file, password file, TLS files and persistence directory in the
test's tmp directory, listens on 127.0.0.1 only, and is stopped (and waited for) afterwards.
Nothing here mocks the broker: the tests talk MQTT to the real thing.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from scripts.testbed.processes import free_port

MOSQUITTO = shutil.which("mosquitto") or (
    "/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None
)
MOSQUITTO_PASSWD = shutil.which("mosquitto_passwd") or (
    "/usr/bin/mosquitto_passwd" if Path("/usr/bin/mosquitto_passwd").exists() else None
)
OPENSSL = shutil.which("openssl")


def wait_for(condition: Callable[[], bool], timeout: float, what: str = "condition") -> None:
    until = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > until:
            raise TimeoutError(f"{what}: not met within {timeout} s")
        time.sleep(0.02)


class TlsFiles:
    """A CA made here with the openssl command, a server certificate for 127.0.0.1 signed by it,
    and a client certificate."""

    def __init__(self, directory: Path) -> None:
        assert OPENSSL, "the openssl command is needed for the TLS test"
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = directory / "ca.crt"
        self.ca_key = directory / "ca.key"
        self.server_cert = directory / "server.crt"
        self.server_key = directory / "server.key"
        self.client_cert = directory / "client.crt"
        self.client_key = directory / "client.key"

        def ssl(*args: str) -> None:
            subprocess.run(
                [OPENSSL, *args], check=True, capture_output=True, cwd=directory, timeout=60
            )

        ssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            str(self.ca_key),
            "-out",
            str(self.ca),
            "-subj",
            "/CN=edge-agent test CA",
        )
        for name, cert, key, ext in (
            (
                "server",
                self.server_cert,
                self.server_key,
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ),
            ("client", self.client_cert, self.client_key, "extendedKeyUsage=clientAuth"),
        ):
            csr = directory / f"{name}.csr"
            extfile = directory / f"{name}.ext"
            extfile.write_text(ext + "\n")
            ssl(
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(csr),
                "-subj",
                f"/CN={name}",
            )
            ssl(
                "x509",
                "-req",
                "-in",
                str(csr),
                "-CA",
                str(self.ca),
                "-CAkey",
                str(self.ca_key),
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                str(cert),
                "-extfile",
                str(extfile),
            )


class Broker:
    """``mosquitto -c <its own config>`` on 127.0.0.1:<random port>."""

    def __init__(
        self,
        directory: Path,
        *,
        users: dict[str, str] | None = None,
        tls: TlsFiles | None = None,
        persistence: bool = False,
        host: str = "127.0.0.1",
    ) -> None:
        assert MOSQUITTO, "Debian's mosquitto package is needed (apt-get install mosquitto)"
        self.directory = directory
        self.host = host
        """The address it listens on; loopback unless a test needs another (the unit's drop-in)."""
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.tls_port = free_port() if tls else None
        self.log = directory / "mosquitto.log"
        self.config = directory / "mosquitto.conf"
        lines = [
            f"log_dest file {self.log}",
            "log_type all",
            "connection_messages true",
            f"persistence {'true' if persistence else 'false'}",
            f"persistence_location {directory}/",
            "per_listener_settings false",
            f"allow_anonymous {'false' if users else 'true'}",
        ]
        if os.geteuid() == 0:
            lines.append("user root")  # stay root: the tmp directory is private to this user
        if users:
            assert MOSQUITTO_PASSWD, "mosquitto_passwd (package mosquitto) is needed"
            passwords = directory / "passwords"
            for n, (name, password) in enumerate(users.items()):
                flags = ["-b", "-c"] if n == 0 else ["-b"]
                subprocess.run(
                    [MOSQUITTO_PASSWD, *flags, str(passwords), name, password],
                    check=True,
                    capture_output=True,
                    timeout=30,
                )
            passwords.chmod(0o600)
            lines.append(f"password_file {passwords}")
        lines.append(f"listener {self.port} {host}")
        if tls is not None:
            lines += [
                f"listener {self.tls_port} 127.0.0.1",
                f"cafile {tls.ca}",
                f"certfile {tls.server_cert}",
                f"keyfile {tls.server_key}",
                "require_certificate false",
            ]
        self.config.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(MOSQUITTO), "-c", str(self.config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.directory / "stderr.log").open("ab"),
        )
        until = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"mosquitto exited: {self.output()}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection((self.host, self.port), timeout=0.5),
            ):
                return
            if time.monotonic() > until:
                raise TimeoutError(f"mosquitto did not listen: {self.output()}")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def output(self) -> str:
        text = ""
        for name in ("stderr.log", "mosquitto.log"):
            with contextlib.suppress(OSError):
                text += (self.directory / name).read_text(errors="replace")
        return text[-4000:]

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


@contextlib.contextmanager
def broker(directory: Path, **options: Any) -> Iterator[Broker]:
    b = Broker(directory, **options)
    try:
        yield b
    finally:
        b.stop()


class Peer:
    """A test's own MQTT client: everything it receives lands in a queue."""

    def __init__(
        self,
        port: int,
        *,
        v5: bool = True,
        subscribe: list[str] | tuple[str, ...] = (),
        client_id: str | None = None,
        clean: bool = True,
        username: str | None = None,
        password: str | None = None,
        tls_ca: Path | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.messages: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
        self.seen: list[mqtt.MQTTMessage] = []
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self._topics = list(subscribe)
        protocol = MQTTProtocolVersion.MQTTv5 if v5 else MQTTProtocolVersion.MQTTv311
        kwargs: dict[str, Any] = {}
        if not v5:
            kwargs["clean_session"] = clean
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id or f"test-{uuid.uuid4().hex[:8]}",
            protocol=protocol,
            **kwargs,
        )
        if username is not None:
            self.client.username_pw_set(username, password)
        if tls_ca is not None:
            self.client.tls_set(ca_certs=str(tls_ca))
        self.client.on_connect = self._on_connect
        self.client.on_message = lambda c, u, m: self.messages.put(m)
        self.client.on_subscribe = lambda *a: self.subscribed.set()
        self.client.reconnect_delay_set(1, 2)
        self.client.connect_async(host, port, keepalive=30)
        self.client.loop_start()
        if not self.connected.wait(20):
            self.close()
            raise TimeoutError(f"the test client did not connect to port {port}")
        if self._topics and not self.subscribed.wait(20):
            raise TimeoutError("the test client did not subscribe")

    def _on_connect(self, client: mqtt.Client, u: Any, f: Any, reason: Any, p: Any) -> None:
        if reason.is_failure:
            return
        if self._topics:
            self.subscribed.clear()
            client.subscribe([(t, 1) for t in self._topics])
        self.connected.set()

    def publish(
        self,
        topic: str,
        payload: Any,
        *,
        properties: Any = None,
        qos: int = 1,
        retain: bool = False,
    ) -> None:
        if isinstance(payload, dict | list):
            payload = json.dumps(payload)
        info = self.client.publish(topic, payload, qos=qos, retain=retain, properties=properties)
        info.wait_for_publish(20)

    def next(self, timeout: float = 30.0) -> mqtt.MQTTMessage:
        message = self.messages.get(timeout=timeout)
        self.seen.append(message)
        return message

    def wait(
        self, match: Callable[[mqtt.MQTTMessage], bool], timeout: float = 30.0
    ) -> mqtt.MQTTMessage:
        """The first message (already seen or still to come) that ``match`` accepts."""
        for message in self.seen:
            if match(message):
                return message
        until = time.monotonic() + timeout
        while (left := until - time.monotonic()) > 0:
            try:
                message = self.next(left)
            except queue.Empty:
                break
            if match(message):
                return message
        raise TimeoutError("no matching MQTT message arrived")

    def on_topic(
        self, topic: str, timeout: float = 30.0, payload: Callable[[bytes], bool] | None = None
    ) -> mqtt.MQTTMessage:
        return self.wait(
            lambda m: m.topic == topic and (payload is None or payload(m.payload)), timeout
        )

    def quiet(self, seconds: float) -> list[mqtt.MQTTMessage]:
        """What arrives in the next ``seconds`` (for checks that nothing more comes)."""
        got = []
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            try:
                got.append(self.next(left))
            except queue.Empty:
                break
        return got

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
