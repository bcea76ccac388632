"""The broker link's state as paho's callbacks move it: ``connected`` only once the broker has
acknowledged the bridge's subscriptions (docs/mqtt.md), since an ask published after the CONNACK
but before the SUBACK reaches no subscriber and is lost.

No broker is needed: the callbacks are called as paho's network thread calls them, in the order
a broker's packets come.
"""

from __future__ import annotations

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from edge_agentd.service.config.mqtt import MqttSettings
from edge_agentd.service.mqtt.broker import BrokerConnection
from edge_agentd.service.mqtt.state import BridgeState


def connection(state: BridgeState, subscribed: list[bool]) -> BrokerConnection:
    return BrokerConnection(
        MqttSettings(),
        state,
        password=None,
        on_connected=lambda: subscribed.append(True),
        on_message=lambda message: None,
    )


def test_the_link_reads_connected_at_the_suback_not_the_connack() -> None:
    state = BridgeState()
    subscribed: list[bool] = []
    broker = connection(state, subscribed)
    client = broker.client
    client.on_connect(client, None, mqtt.ConnectFlags(False), ReasonCode(PacketTypes.CONNACK), None)
    assert subscribed == [True]  # the bridge subscribes at the CONNACK...
    assert state.link == "connecting"  # ...and is not heard until the broker acknowledges it
    granted = [ReasonCode(PacketTypes.SUBACK, "Granted QoS 1")] * 4
    client.on_subscribe(client, None, 1, granted, None)
    snapshot = state.snapshot()
    assert snapshot["link"] == "connected"
    assert snapshot["last_problem"] is None
    assert snapshot["counters"]["connects"] == 1


def test_a_refused_subscription_is_the_links_last_problem() -> None:
    state = BridgeState()
    broker = connection(state, [])
    client = broker.client
    client.on_connect(client, None, mqtt.ConnectFlags(False), ReasonCode(PacketTypes.CONNACK), None)
    reasons = [
        ReasonCode(PacketTypes.SUBACK, "Granted QoS 1"),
        ReasonCode(PacketTypes.SUBACK, "Not authorized"),
    ]
    client.on_subscribe(client, None, 1, reasons, None)
    snapshot = state.snapshot()
    assert snapshot["link"] == "connected"
    assert "refused a subscription: Not authorized" in snapshot["last_problem"]
