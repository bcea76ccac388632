"""The MQTT bridge: protocol v1 over a home's MQTT broker, with Home Assistant discovery.

Off unless the config has an ``[mqtt]`` section; it needs the ``mqtt`` extra (paho-mqtt 2.x),
which is imported only when the bridge starts. ``docs/mqtt.md`` describes the topics.
"""
