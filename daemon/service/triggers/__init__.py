"""Triggers: the device watches its own sensors and clock and runs queries by itself
(docs/design.md, "Triggers")."""
