"""What the MQTT bridge costs: an ask over MQTT beside the same ask over ZeroMQ, and a fleet's load
on the broker.

1. Round trip: one `edge-agent serve --model mock:FILE` daemon with [mqtt] on, a local Mosquitto;
   the same mock run asked N times over ZeroMQ (edge_agentd.client.Client) and N times over MQTT v5
   (Response Topic + Correlation Data), sequentially. Reported: p50/p90 and the ratio of p50s.
2. Fleet: N simulated nodes on one broker, each doing on the wire what a bridge does (Last Will,
   retained status/info, 8 retained discovery configs, 5 sensor readings refreshed every second,
   a subscription to its ask topic). Reported: the broker's CPU time and resident memory.

Needs Debian's mosquitto and the mqtt extra. Usage: python -m scripts.bench.bench_mqtt [--runs 300]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edge_agentd.client.zmqclient import Client
from edge_agentd.protocol.mqttwire import Topics
from edge_agentd.service.mqtt.discovery import Discovery, Reading, encode_config
from scripts.testbed.mosquitto import MOSQUITTO
from scripts.testbed.processes import cpu_seconds, free_port, rss_kib

ANSWER = json.dumps({"final_answer": "It is 21 C."})


@contextlib.contextmanager
def mosquitto(directory: Path, *, nodelay: bool = False) -> Iterator[tuple[int, int]]:
    """A Mosquitto as lean as a deployed one: unlike the tests' (scripts.testbed.mosquitto), it
    logs nothing, so the figures are the broker's work alone; ``nodelay`` turns Nagle off."""
    assert MOSQUITTO, "Debian's mosquitto package is needed (apt-get install mosquitto)"
    port = free_port()
    config = directory / "mosquitto.conf"
    lines = [f"listener {port} 127.0.0.1", "allow_anonymous true", "persistence false"]
    if nodelay:  # Mosquitto's default is false: Nagle's algorithm on the broker's side
        lines.append("set_tcp_nodelay true")
    if os.geteuid() == 0:
        lines.append("user root")
    config.write_text("\n".join(lines) + "\n")
    process = subprocess.Popen(
        [str(MOSQUITTO), "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        until = time.monotonic() + 20
        while time.monotonic() < until:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            time.sleep(0.05)
        yield port, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)


def connected_client(port: int, client_id: str, will: str | None = None) -> mqtt.Client:
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2, client_id=client_id, protocol=MQTTProtocolVersion.MQTTv5
    )
    if will:
        client.will_set(will, "offline", qos=1, retain=True)
    ready = threading.Event()
    client.on_connect = lambda *a: ready.set()
    client.on_socket_open = lambda c, u, sock: sock.setsockopt(
        socket.IPPROTO_TCP, socket.TCP_NODELAY, 1
    )
    client.connect("127.0.0.1", port)
    client.loop_start()
    if not ready.wait(20):
        raise TimeoutError("no connection to the broker")
    return client


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def round_trips(port: int, runs: int, directory: Path) -> dict[str, Any]:
    mock = directory / "mock.json"
    mock.write_text(json.dumps([ANSWER]))
    config = directory / "edge.toml"
    config.write_text(
        f'[daemon]\nqueue_limit = 8\n[mqtt]\nhost = "127.0.0.1"\nport = {port}\n'
        'node_id = "bench"\nsensor_interval_s = 3600.0\n'
    )
    endpoint = f"ipc://{directory / 'agent.sock'}"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "edge_agentd.cli", "serve", "--model", f"mock:{mock}",
         "--endpoint", endpoint, "--config", str(config), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "XDG_STATE_HOME": str(directory)},  # its journal, not the user's
    )
    try:
        with Client(endpoint, timeout=30) as client:
            until = time.monotonic() + 60
            while True:
                with contextlib.suppress(Exception):
                    status = client.status()
                    if status.get("state") == "ready" and (status.get("mqtt") or {}).get(
                        "link"
                    ) == "connected":
                        break
                if time.monotonic() > until:
                    raise TimeoutError("the daemon did not become ready")
                time.sleep(0.1)
            for _ in range(20):
                client.run("warm-up")
            zmq_ms = []
            for _ in range(runs):
                started = time.perf_counter()
                client.run("How warm is it?")
                zmq_ms.append((time.perf_counter() - started) * 1000)
        replies: dict[bytes, threading.Event] = {}
        peer = connected_client(port, "bench-asker")
        reply_topic = f"bench/replies/{uuid.uuid4().hex}"

        def on_message(c: Any, u: Any, message: mqtt.MQTTMessage) -> None:
            kind = json.loads(message.payload).get("kind")
            if kind in ("result", "error"):
                replies[message.properties.CorrelationData].set()

        peer.on_message = on_message
        peer.subscribe(reply_topic, qos=1)
        time.sleep(0.5)
        mqtt_ms = []
        topics = Topics("edge-agent", "bench")
        for n in range(runs + 20):
            correlation = uuid.uuid4().bytes
            replies[correlation] = done = threading.Event()
            props = Properties(PacketTypes.PUBLISH)
            props.ResponseTopic = reply_topic
            props.CorrelationData = correlation
            started = time.perf_counter()
            peer.publish(topics.ask, json.dumps({"query": "How warm is it?"}), qos=1,
                         properties=props)
            if not done.wait(30):
                raise TimeoutError("no MQTT reply")
            if n >= 20:  # the first 20 warm up
                mqtt_ms.append((time.perf_counter() - started) * 1000)
        peer.disconnect()
        peer.loop_stop()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
    return {
        "runs": runs,
        "zmq_p50_ms": round(statistics.median(zmq_ms), 3),
        "zmq_p90_ms": round(percentile(zmq_ms, 0.9), 3),
        "mqtt_p50_ms": round(statistics.median(mqtt_ms), 3),
        "mqtt_p90_ms": round(percentile(mqtt_ms, 0.9), 3),
        "ratio_p50": round(statistics.median(mqtt_ms) / statistics.median(zmq_ms), 2),
    }


def fleet(port: int, broker_pid: int, nodes: int, seconds: float) -> dict[str, Any]:
    """N simulated nodes publishing what a bridge publishes; the broker's cost over ``seconds``."""
    rss_before = rss_kib(broker_pid)
    clients = []
    readings = [
        Reading("thermal_zone0_temperature", "CPU temperature", "temperature", 48.3),
        Reading("bme280_temperature", "bme280 temperature", "temperature", 21.5),
        Reading("bme280_humidity", "bme280 humidity", "humidity", 45.2),
        Reading("bme280_pressure", "bme280 pressure", "pressure", 1013.2),
        Reading("28-0316a2796eff_temperature", "DS18B20 temperature", "temperature", 19.2),
    ]
    retained_bytes = 0
    for n in range(nodes):
        topics = Topics("edge-agent", f"sim-{n:03d}")
        client = connected_client(port, f"sim-{n}", will=topics.status)
        client.subscribe([(topics.ask, 1), (topics.question, 1), ("homeassistant/status", 1)])
        client.publish(topics.status, "online", qos=1, retain=True)
        info = json.dumps({"node": topics.node, "version": "0.1.0", "skills": ["x"] * 6})
        client.publish(topics.info, info, qos=1, retain=True)
        discovery = Discovery(topics, "homeassistant", "0.1.0", "Gemma", 60.0)
        for topic, config in discovery.configs(readings).items():
            payload = encode_config(config)
            retained_bytes += len(payload)
            client.publish(topic, payload, qos=1, retain=True)
        clients.append((client, topics))
    time.sleep(1.0)
    cpu_start = cpu_seconds(broker_pid)
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        for client, topics in clients:
            for reading in readings:
                client.publish(topics.sensor(reading.key), f"{reading.value:g}", retain=True)
        time.sleep(1.0)
    cpu = cpu_seconds(broker_pid) - cpu_start
    elapsed = time.monotonic() - started
    rss_after = rss_kib(broker_pid)
    for client, _ in clients:
        client.disconnect()
        client.loop_stop()
    return {
        "nodes": nodes,
        "broker_cpu_percent": round(100 * cpu / elapsed, 2),
        "broker_rss_mib": round(rss_after / 1024, 1),
        "broker_rss_growth_kib_per_node": round((rss_after - rss_before) / nodes, 1),
        "retained_discovery_kib_per_node": round(retained_bytes / nodes / 1024, 1),
        "messages_per_s": round(nodes * len(readings), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--fleet", type=int, nargs="*", default=[10, 100])
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    if not Path(MOSQUITTO).exists():
        print("bench_mqtt: needs Debian's mosquitto (apt-get install mosquitto)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        for nodelay in (False, True):
            with mosquitto(directory, nodelay=nodelay) as (port, _):
                trip = round_trips(port, args.runs, directory)
            trip["broker_set_tcp_nodelay"] = nodelay
            print(json.dumps({"round_trip": trip}))
            print(
                f"mock run round trip (mosquitto set_tcp_nodelay {str(nodelay).lower()}), p50: "
                f"ZeroMQ {trip['zmq_p50_ms']} ms, MQTT v5 {trip['mqtt_p50_ms']} ms "
                f"(x{trip['ratio_p50']}); p90 {trip['zmq_p90_ms']} / {trip['mqtt_p90_ms']} ms"
            )
        for nodes in args.fleet:
            with mosquitto(directory) as (port, pid):
                cost = fleet(port, pid, nodes, args.seconds)
            print(json.dumps({"fleet": cost}))
            print(
                f"fleet of {nodes}: broker {cost['broker_cpu_percent']}% CPU, "
                f"{cost['broker_rss_mib']} MiB RSS (+{cost['broker_rss_growth_kib_per_node']} KiB "
                f"per node), {cost['messages_per_s']} readings/s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
