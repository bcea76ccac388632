# A capacitive soil moisture probe in the basil pot.
import os
from pathlib import Path

STATE = Path(os.environ.get("HOME_STATE_DIR", "/run/home"))


def register(registry):
    @registry.skill(timeout=1.0)
    def basil_soil_moisture() -> dict:
        """Soil moisture of the basil plant's pot, in percent."""
        percent = float((STATE / "basil_moisture").read_text())
        return {"plant": "basil", "soil_moisture": {"value": percent, "unit": "%"}}
