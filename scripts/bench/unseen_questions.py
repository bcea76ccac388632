"""bench_grounding.py's third set: questions no rule was made for (issue 41).

Written on 2026-12-07 in one sitting, before any run of them, after the rephrased set
(rephrased_questions.py) stopped being blind: its failures had been read and rules made from
them. These are not to be tuned on, and not edited after any answer to them has been seen. The
writer knew the engine's rules (they are the same session's), and wrote from what each device
holds and how people talk, not from what the rules read; the first run of them is the figure.

Ids ``un-<device>NN``; kinds ``unseen-<form>`` with rephrased_questions.py's forms (request,
fragment, whether, polite, yesno, cannot).
"""

from __future__ import annotations

from typing import Any

from scripts.bench.bench_competence import CannotTell, Number, Time, Weekday
from scripts.bench.device import PROBE
from scripts.bench.grounding_scoring import State, YesNo
from scripts.bench.rephrased_questions import Rephrased, available_mib, bme

UNSEEN_KIND = "unseen"


def _q(device: str, n: int, kind: str, text: str, expect: Any, *, yes_no: bool = False
       ) -> Rephrased:  # fmt: skip
    return Rephrased(f"un-{device}{n:02d}", device, f"{UNSEEN_KIND}-{kind}", text, expect, yes_no)


PI = [
    _q("pi", 1, "request", "Can you give me the air pressure?",
       lambda d, h: Number([bme(d, "pressure")])),
    _q("pi", 2, "fragment", "BME280 humidity?", lambda d, h: Number([bme(d, "humidity")])),
    _q("pi", 3, "fragment", "Probe temperature?",
       lambda d, h: Number([d.reading(PROBE, "temperature")])),
    _q("pi", 4, "polite", "Could I have the room temperature from the BME280, please?",
       lambda d, h: Number([bme(d, "temperature")])),
    _q("pi", 5, "whether", "Tell me if the CPU is hotter than 60 °C.",
       lambda d, h: YesNo(d.cpu() > 60), yes_no=True),
    _q("pi", 6, "yesno", "Is the BME280 warmer than the CPU?",
       lambda d, h: YesNo(bme(d, "temperature") > d.cpu()), yes_no=True),
    _q("pi", 7, "yesno", "Is there a 1-Wire probe on this device?",
       lambda d, h: YesNo(True), yes_no=True),
    _q("pi", 8, "request", "How much disk space is free?",
       lambda d, h: Number([d.status("disk", "free_gib")], whole=True, tolerance=0.5)),
    _q("pi", 9, "cannot", "What is the light level in the room?", lambda d, h: CannotTell()),
    _q("pi", 10, "cannot", "How fast is the fan running?", lambda d, h: CannotTell()),
]  # fmt: skip

HOME = [
    _q("home", 1, "request", "Can you tell me the CO2 level in the living room?",
       lambda d, h: Number([h.co2_ppm], whole=True, units=("ppm",))),
    _q("home", 2, "fragment", "Rain tank level?",
       lambda d, h: Number([h.tank_litres, 100 * h.tank_litres / h.tank_capacity],
                           units=("L", "%"))),
    _q("home", 3, "fragment", "House power?",
       lambda d, h: Number([h.watts], whole=True, units=("W",))),
    _q("home", 4, "whether", "Tell me whether the back door is open.",
       lambda d, h: State("open", asked="open"), yes_no=True),
    _q("home", 5, "yesno", "Is the front door locked?", lambda d, h: CannotTell(),
       yes_no=True),
    _q("home", 6, "yesno", "Is the basil's soil moisture under 30 percent?",
       lambda d, h: YesNo(h.basil_moisture < 30), yes_no=True),
    _q("home", 7, "polite", "I'd like to know how many minutes the washing machine has left.",
       lambda d, h: Number([h.washer_minutes_left], whole=True, units=("min",))),
    _q("home", 8, "request", "Please check whether the bedroom window is closed.",
       lambda d, h: State("closed", asked="closed"), yes_no=True),
    _q("home", 9, "cannot", "What's the temperature in the greenhouse?",
       lambda d, h: CannotTell()),
    _q("home", 10, "cannot", "Is the dishwasher running?", lambda d, h: CannotTell(),
       yes_no=True),
]  # fmt: skip

BARE = [
    _q("bare", 1, "request", "Can you tell me what time it is?", lambda d, h: Time(d.now)),
    _q("bare", 2, "fragment", "Today's weekday?", lambda d, h: Weekday(d.today.weekday())),
    _q("bare", 3, "polite", "Would you tell me how much memory is available?",
       lambda d, h: Number([available_mib(d), available_mib(d) / 1024], whole=True)),
    _q("bare", 4, "yesno", "Is the disk more than half full?",
       lambda d, h: YesNo(d.status("disk", "used_percent") > 50), yes_no=True),
    _q("bare", 5, "whether", "Tell me whether the 1-minute load average is above 2.",
       lambda d, h: YesNo(d.status("load_average", "1min") > 2), yes_no=True),
    _q("bare", 6, "cannot", "What's the humidity?", lambda d, h: CannotTell()),
    _q("bare", 7, "cannot", "Is the CPU overheating?", lambda d, h: CannotTell(),
       yes_no=True),
]  # fmt: skip

UNSEEN: dict[str, list[Rephrased]] = {"pi": PI, "home": HOME, "bare": BARE}
