# The electricity meter's optical reader.
import json
import os
from pathlib import Path

STATE = Path(os.environ.get("HOME_STATE_DIR", "/run/home"))


def register(registry):
    @registry.skill(timeout=1.0)
    def power_meter() -> dict:
        """Electric power the house draws now, in watts, and the energy used today, in kWh."""
        meter = json.loads((STATE / "power.json").read_text())
        return {
            "power": {"value": meter["watts"], "unit": "W"},
            "energy_today": {"value": meter["kwh_today"], "unit": "kWh"},
        }
