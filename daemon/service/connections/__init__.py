"""Connections: counted, capped, and paused before the fds run out (the listeners and their
watcher)."""
