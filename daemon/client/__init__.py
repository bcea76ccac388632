"""Clients of the daemon: the ZeroMQ request/reply client, the MQTT client, and the progress line.

Each module is imported on its own, so ``edge-agent ask`` pays only for what it uses.
"""
