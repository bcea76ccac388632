# The bedroom window's contact sensor.
import os
from pathlib import Path

STATE = Path(os.environ.get("HOME_STATE_DIR", "/run/home"))


def register(registry):
    @registry.skill(timeout=1.0)
    def bedroom_window() -> dict:
        """Whether the bedroom window is open or closed, and since when."""
        state, since = (STATE / "bedroom_window").read_text().split(maxsplit=1)
        return {"window": "bedroom", "state": state, "since": since.strip()}
