"""The Model Context Protocol server: the device's skills as tools (docs/mcp.md). It needs the
``mcp`` extra; only tools.py and backend.py import without it."""
