"""The run journal: every run the daemon accepts, kept in SQLite by its own thread, with the
replies, keys and file it owns."""
