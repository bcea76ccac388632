# A door contact on the front door and one on the back door (reed switches, read by a bridge
# that writes each door's state and since when into a file).
import os
from pathlib import Path

STATE = Path(os.environ.get("HOME_STATE_DIR", "/run/home"))


def register(registry):
    @registry.skill(timeout=1.0)
    def door_contact(door: str) -> dict:
        """Whether the front or back door is open or closed, and since when."""
        state, since = (STATE / "doors" / door.lower()).read_text().split(maxsplit=1)
        return {"door": door, "state": state, "since": since.strip()}
