# The living room's CO2 sensor (an SCD40).
import os
from pathlib import Path

STATE = Path(os.environ.get("HOME_STATE_DIR", "/run/home"))


def register(registry):
    @registry.skill(timeout=1.0)
    def living_room_co2() -> dict:
        """The CO2 level in the living room, in ppm."""
        ppm = int((STATE / "co2_ppm").read_text())
        return {"room": "living room", "co2": {"value": ppm, "unit": "ppm"}}
