"""Protocol v1: what the daemon and its clients agree on, and nothing else of the package.

framing (constants, the msgpack unpacker, ``decode_reply``; no pydantic), wire (the op table and
its models), mqttwire (the MQTT topics and payloads), endpoints (where the socket is).
"""
