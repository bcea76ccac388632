"""The daemon's own threads: one small pattern for each (daemonthread)."""
