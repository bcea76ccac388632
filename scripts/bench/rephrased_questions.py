"""bench_grounding.py's questions asked in other words (issue 41, "5. The benchmark").

Written blind on 2026-12-06, in one sitting, before any run of them: from what each device
holds (skills/*.py on the fake Pi of device.py, scripts/bench/plugin_home/*.py and
grounding_questions.Home on the plugin home, the fake /proc and the clock on the bare machine)
and from how people talk, without reading the grammar the answers use (daemon/agent/question.py,
daemon/agent/english.py, daemon/guidance/). None is a question quoted in issue 41. **They must
not be tuned on, and are not to be edited after any answer to them has been seen**: they are
the figure no change was made for.

Kinds (``rephrased-<kind>``), by the question's form:

- ``request``: asked as a request ("Could you ...", "Please ...", "Check ...");
- ``fragment``: a bare noun phrase ("Basil soil moisture?");
- ``whether``: a reported yes-or-no question ("Tell me whether ...");
- ``polite``: "Would you mind ...", "I'd like to know ...";
- ``yesno``: a direct yes-or-no question about a state, a flag or a threshold;
- ``cannot``: one no skill of the device answers, whatever its form: a thing beside one the
  device has (the patio door beside the front and back doors, the tumble dryer beside the
  washing machine, the garage's temperature beside sensors that say no place, a fan beside the
  CPU's thermal zone); the answer is "I cannot tell".

``yes_no`` marks, by hand, a question a person answers "Yes" or "No" (directly, "Is ...?", or
reported, "Tell me whether ..."); it is the writer's call, not inferred from any grammar.
Expected values are computed when each question is asked (``expect(device, home)``), as for the
other questions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from scripts.bench.bench_competence import CannotTell, Check, Date, Number, Time, Uptime
from scripts.bench.device import PROBE
from scripts.bench.grounding_scoring import NoneFound, Since, State, YesNo


class Rephrased(NamedTuple):
    id: str
    device: str
    kind: str
    text: str
    expect: Callable[[Any, Any], Check]
    """(bench_competence.Device, grounding_questions.Home or None) -> the check."""
    yes_no: bool = False


def _q(device: str, n: int, kind: str, text: str, expect: Callable[[Any, Any], Check], *,
       yes_no: bool = False) -> Rephrased:  # fmt: skip
    return Rephrased(f"rp-{device}{n:02d}", device, f"rephrased-{kind}", text, expect, yes_no)


def bme(d: Any, quantity: str) -> float:
    return float(d.reading("bme280", quantity))


def available_mib(d: Any) -> float:
    return float(d.status("memory", "available_mib"))


def _used_mib(d: Any) -> float:
    return float(d.status("memory", "total_mib")) - available_mib(d)


PI = [
    _q("pi", 1, "request", "Could you tell me how warm the BME280 is?",
       lambda d, h: Number([bme(d, "temperature")])),
    _q("pi", 2, "request", "Please check the humidity for me.",
       lambda d, h: Number([bme(d, "humidity")])),
    _q("pi", 3, "request", "Can you read the 1-Wire probe?",
       lambda d, h: Number([d.reading(PROBE, "temperature")])),
    _q("pi", 4, "fragment", "Processor temperature?", lambda d, h: Number([d.cpu()])),
    _q("pi", 5, "fragment", "Pressure in hPa?", lambda d, h: Number([bme(d, "pressure")])),
    _q("pi", 6, "fragment", "Free RAM?",
       lambda d, h: Number([available_mib(d), available_mib(d) / 1024], whole=True)),
    _q("pi", 7, "polite", "Would you mind telling me the temperature of the DS18B20?",
       lambda d, h: Number([d.reading(PROBE, "temperature")])),
    _q("pi", 8, "polite", "I'd like to know how humid the air is, please.",
       lambda d, h: Number([bme(d, "humidity")])),
    _q("pi", 9, "whether", "Tell me whether the CPU is warmer than 40 °C.",
       lambda d, h: YesNo(d.cpu() > 40), yes_no=True),
    _q("pi", 10, "whether", "Can you tell me whether a humidity sensor is connected?",
       lambda d, h: YesNo(d.count("humidity") > 0), yes_no=True),
    _q("pi", 11, "yesno", "Is the 1-Wire probe colder than the BME280?",
       lambda d, h: YesNo(d.reading(PROBE, "temperature") < bme(d, "temperature")),
       yes_no=True),
    _q("pi", 12, "yesno", "Is more than half of the memory in use?",
       lambda d, h: YesNo(d.status("memory", "used_percent") > 50), yes_no=True),
    _q("pi", 13, "yesno", "Does this device have a pressure sensor?",
       lambda d, h: YesNo(d.count("pressure") > 0), yes_no=True),
    _q("pi", 14, "cannot", "Could you check the temperature in the garage?",
       lambda d, h: CannotTell()),
    _q("pi", 15, "cannot", "Is the fan spinning?", lambda d, h: CannotTell(), yes_no=True),
]  # fmt: skip

HOME = [
    _q("home", 1, "request", "Could you check how much power the house is drawing?",
       lambda d, h: Number([h.watts], whole=True, units=("W",))),
    _q("home", 2, "request", "Please tell me how much water is left in the rain tank.",
       lambda d, h: Number([h.tank_litres, 100 * h.tank_litres / h.tank_capacity],
                           units=("L", "%"))),
    _q("home", 3, "request", "Check the living room's CO2 for me.",
       lambda d, h: Number([h.co2_ppm], whole=True, units=("ppm",))),
    _q("home", 4, "fragment", "Basil soil moisture?",
       lambda d, h: Number([h.basil_moisture], whole=True, units=("%",))),
    _q("home", 5, "fragment", "Energy used today?",
       lambda d, h: Number([h.kwh_today], units=("kWh",))),
    _q("home", 6, "fragment", "Minutes left on the washing machine?",
       lambda d, h: Number([h.washer_minutes_left], whole=True, units=("min",))),
    _q("home", 7, "whether", "Tell me whether the back door is closed.",
       lambda d, h: State("open", asked="closed"), yes_no=True),
    _q("home", 8, "whether", "Let me know whether the washing machine is done.",
       lambda d, h: State(h.washer, asked="finished"), yes_no=True),
    _q("home", 9, "polite",
       "Would you be so kind as to tell me how full the water tank is, in percent?",
       lambda d, h: Number([100 * h.tank_litres / h.tank_capacity], units=("%",))),
    _q("home", 10, "polite", "I'd like to know since when the front door has been closed.",
       lambda d, h: Since(h.front_door_closed, h.now)),
    _q("home", 11, "yesno", "Is the bedroom window open?",
       lambda d, h: State("closed", asked="open"), yes_no=True),
    _q("home", 12, "yesno", "Is the washing machine still running?",
       lambda d, h: State(h.washer, asked="running"), yes_no=True),
    _q("home", 13, "yesno", "Is the CO2 in the living room above 1000 ppm?",
       lambda d, h: YesNo(h.co2_ppm > 1000), yes_no=True),
    _q("home", 14, "cannot", "Please tell me whether the patio door is open.",
       lambda d, h: CannotTell(), yes_no=True),
    _q("home", 15, "cannot", "Has the tumble dryer finished?", lambda d, h: CannotTell(),
       yes_no=True),
    _q("home", 16, "cannot", "I'd like to know how much power the solar panels are producing.",
       lambda d, h: CannotTell()),
]  # fmt: skip

BARE = [
    _q("bare", 1, "request", "Could you tell me today's date?", lambda d, h: Date(d.today)),
    _q("bare", 2, "fragment", "Current time?", lambda d, h: Time(d.now)),
    _q("bare", 3, "fragment", "Memory in use?",
       lambda d, h: Number([d.status("memory", "used_percent"), _used_mib(d)], whole=True)),
    _q("bare", 4, "polite", "Would you mind telling me how long the system has been running?",
       lambda d, h: Uptime(int(d.status("uptime", "seconds")))),
    _q("bare", 5, "whether", "Tell me whether any sensors are connected.",
       lambda d, h: NoneFound(), yes_no=True),
    _q("bare", 6, "yesno", "Is the 15-minute load average below 1?",
       lambda d, h: YesNo(d.status("load_average", "15min") < 1), yes_no=True),
    _q("bare", 7, "yesno", "Has the machine been up for more than a day?",
       lambda d, h: YesNo(d.status("uptime", "seconds") > 86400), yes_no=True),
    _q("bare", 8, "cannot", "Could you read the temperature sensor?", lambda d, h: CannotTell()),
    _q("bare", 9, "cannot", "Core temperature?", lambda d, h: CannotTell()),
    _q("bare", 10, "cannot", "Is it humid in here?", lambda d, h: CannotTell(), yes_no=True),
]  # fmt: skip

REPHRASED: dict[str, list[Rephrased]] = {"pi": PI, "home": HOME, "bare": BARE}
