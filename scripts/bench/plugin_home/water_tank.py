# The rainwater tank's level sensor.
import os
from pathlib import Path

STATE = Path(os.environ.get("HOME_STATE_DIR", "/run/home"))
CAPACITY_L = 300.0


def register(registry):
    @registry.skill(timeout=1.0)
    def water_tank_level() -> dict:
        """Water left in the rainwater tank, in litres and in percent of full."""
        litres = float((STATE / "tank_litres").read_text())
        return {
            "volume": {"value": litres, "unit": "L"},
            "fill": {"value": round(100 * litres / CAPACITY_L, 1), "unit": "%"},
            "capacity": {"value": CAPACITY_L, "unit": "L"},
        }
