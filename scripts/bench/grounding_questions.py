"""bench_grounding.py's three devices and their questions.

- ``pi``: the fake Raspberry Pi (device.py: CPU zone, BME280, DS18B20, fake /proc): 24 of
  its *fresh* questions (never tuned on) and its six that no skill answers.
- ``home``: a home's plugins (scripts/bench/plugin_home/, written in one sitting before any run
  as docs/skills.md's ten-line example shows, no ``examples=`` or ``calls=``, never tuned on)
  on a Pi whose sysfs has only its CPU zone. The questions were written with them, before any
  run, and are not to be tuned on or edited: readings, states, since when, counts,
  conversions, and seven that no skill answers, each beside a thing the home has a sensor for
  (the garage door beside the front and back doors, the bedroom's CO2 beside the living
  room's, the tomato beside the basil ...).
- ``bare``: a machine with no sensors at all (an empty sysfs tree; the fake /proc): the usual
  first questions, which only "I cannot tell" answers, and what it can answer (the clock,
  dates, load, memory, disk, uptime, and that it has no sensors).

Each device also gets the questions asked in other words (rephrased_questions.py, issue 41:
requests, fragments, "whether", polite forms, yes-or-no questions and ones no skill answers;
ids ``rp-<device>NN``, kinds ``rephrased-<form>``), written blind and never tuned on. A
question's ``yes_no`` says a person answers it "Yes" or "No": set by hand where each question
is written (the rephrased ones), or listed below (the earlier ones), never inferred.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from scripts.bench import bench_competence as comp
from scripts.bench.bench_competence import CannotTell, Check, Date, Number, Time, Uptime, Weekday
from scripts.bench.device import build_device, cpu_only, write_proc
from scripts.bench.grounding_scoring import NoneFound, Since, State
from scripts.bench.rephrased_questions import REPHRASED
from scripts.bench.unseen_questions import UNSEEN, UNSEEN_KIND

DEVICES = ("pi", "home", "bare")
PLUGINS = Path(__file__).resolve().parent / "plugin_home"

KINDS = {
    "cpu": "reading", "iio": "reading", "iio-2calls": "reading", "w1-2calls": "reading",
    "w1": "reading", "system": "reading", "list": "list", "clock": "clock", "dates": "dates",
    "2calls": "dates", "convert": "convert", "compare": "compare", "two-part": "two-part",
    "count": "count", "cannot": "cannot",
}  # fmt: skip
"""bench_competence's categories, as this benchmark's kinds."""
PI_IDS = (
    "f01", "f02", "f04", "f06", "f07", "f09", "f10", "f11", "f13", "f14", "f16", "f17", "f18",
    "f19", "f20", "f22", "f24", "f27", "f28", "f29", "f31", "f32", "f33", "f34",
    "d35", "h35", "d36", "h36", "f35", "f36",
)  # fmt: skip
YES_NO_IDS = frozenset({
    "pi-h35", "pi-f35",  # "Will it rain tomorrow?", "Is the front door locked?"
    "home08", "home09", "home10", "home11", "home22", "home23", "home26",
})  # fmt: skip
"""The earlier questions a person answers "Yes" or "No" (the rephrased ones say it themselves)."""
REPHRASED_KIND = "rephrased"


@dataclasses.dataclass
class Home:
    """The home's state, as its bridges would write it, relative to when the run starts."""

    now: dt.datetime
    front_door_closed: dt.datetime
    back_door_open: dt.datetime
    window_closed: dt.datetime
    watts: int = 1840
    kwh_today: float = 7.3
    tank_litres: float = 137.5
    tank_capacity: float = 300.0
    washer: str = "running"
    washer_minutes_left: int = 34
    co2_ppm: int = 870
    basil_moisture: float = 23.0

    @classmethod
    def at(cls, now: dt.datetime) -> Home:
        now = now.replace(second=0, microsecond=0)
        return cls(
            now=now,
            front_door_closed=now - dt.timedelta(hours=3, minutes=10),
            back_door_open=now - dt.timedelta(minutes=25),
            window_closed=now - dt.timedelta(hours=2, minutes=5),
        )

    def write(self, state: Path) -> None:
        (state / "doors").mkdir(parents=True)
        (state / "doors" / "front").write_text(f"closed {self.front_door_closed:%Y-%m-%d %H:%M}")
        (state / "doors" / "back").write_text(f"open {self.back_door_open:%Y-%m-%d %H:%M}")
        (state / "bedroom_window").write_text(f"closed {self.window_closed:%Y-%m-%d %H:%M}")
        (state / "power.json").write_text(
            json.dumps({"watts": self.watts, "kwh_today": self.kwh_today})
        )
        (state / "tank_litres").write_text(str(self.tank_litres))
        (state / "washer.json").write_text(
            json.dumps({"state": self.washer, "minutes_left": self.washer_minutes_left})
        )
        (state / "co2_ppm").write_text(str(self.co2_ppm))
        (state / "basil_moisture").write_text(str(self.basil_moisture))


@dataclasses.dataclass
class Built:
    """A device's trees: sysfs, /proc, the plugins' directory and state (the home only)."""

    sysfs: Path
    proc: Path
    skills: Path | None = None
    state: Path | None = None
    home: Home | None = None


def build(device: str, root: Path) -> Built:
    """The trees of ``device`` under ``root`` (a directory only root or the user can write)."""
    root.mkdir(parents=True)
    if device == "pi":
        sysfs, proc = build_device(root)
        return Built(sysfs, proc)
    sysfs = root / "sys"
    sysfs.mkdir()
    if device == "bare":
        return Built(sysfs, write_proc(root / "proc"))
    cpu_only(sysfs)
    skills = root / "skills.d"
    skills.mkdir(mode=0o755)
    for plugin in sorted(PLUGINS.glob("*.py")):
        target = skills / plugin.name
        shutil.copyfile(plugin, target)
        target.chmod(0o644)  # docs/skills.md, "Where plugins may live"
    state = root / "home-state"
    home = Home.at(dt.datetime.now())
    home.write(state)
    return Built(sysfs, write_proc(root / "proc"), skills, state, home)


@dataclasses.dataclass(frozen=True)
class Question:
    id: str
    device: str
    kind: str
    text: str
    expect: Callable[[comp.Device, Home | None], Check]
    yes_no: bool = False
    """A person answers it "Yes" or "No" (or "I cannot tell"); set where it is written."""

    @property
    def rephrased(self) -> bool:
        return self.kind.startswith(REPHRASED_KIND + "-")

    @property
    def unseen(self) -> bool:
        """One of unseen_questions.py's: a third set, neither original nor rephrased."""
        return self.kind.startswith(UNSEEN_KIND + "-")


def _h(n: int, kind: str, text: str, expect: Callable[[Home], Check]) -> Question:
    def check(_device: comp.Device, home: Home | None) -> Check:
        assert home is not None  # the home's questions are asked on the home only
        return expect(home)

    id = f"home{n:02d}"
    return Question(id, "home", kind, text, check, yes_no=id in YES_NO_IDS)


def _b(n: int, kind: str, text: str, expect: Callable[[comp.Device], Check]) -> Question:
    return Question(f"bare{n:02d}", "bare", kind, text, lambda device, _home: expect(device))


GALLONS = (3.785411784, 4.54609)  # US, imperial

HOME_QUESTIONS = [
    _h(1, "reading", "How much power is the house using right now?",
       lambda h: Number([h.watts], whole=True, units=("W",))),
    _h(2, "reading", "How much energy have we used today?",
       lambda h: Number([h.kwh_today], units=("kWh",))),
    _h(3, "reading", "How much water is in the rain tank?",
       lambda h: Number([h.tank_litres], units=("L",))),
    _h(4, "reading", "How full is the water tank, in percent?",
       lambda h: Number([100 * h.tank_litres / h.tank_capacity], units=("%",))),
    _h(5, "reading", "What is the CO2 level in the living room?",
       lambda h: Number([h.co2_ppm], whole=True, units=("ppm",))),
    _h(6, "reading", "How moist is the soil of the basil?",
       lambda h: Number([h.basil_moisture], whole=True, units=("%",))),
    _h(7, "reading", "How many minutes are left on the washing machine?",
       lambda h: Number([h.washer_minutes_left], whole=True, units=("min",))),
    _h(8, "state", "Is the back door open?", lambda h: State("open", asked="open")),
    _h(9, "state", "Is the front door open?", lambda h: State("closed", asked="open")),
    _h(10, "state", "Is the bedroom window closed?", lambda h: State("closed", asked="closed")),
    _h(11, "state", "Is the washing machine finished?",
       lambda h: State("running", asked="finished")),
    _h(12, "state", "What is the washing machine doing?", lambda h: State("running")),
    _h(13, "since", "Since when has the back door been open?",
       lambda h: Since(h.back_door_open, h.now)),
    _h(14, "since", "How long has the front door been closed?",
       lambda h: Since(h.front_door_closed, h.now)),
    _h(15, "since", "When was the bedroom window closed?", lambda h: Since(h.window_closed, h.now)),
    _h(16, "count", "How many doors are open?", lambda h: Number([1], whole=True)),
    _h(17, "count", "How many doors can you check?", lambda h: Number([2], whole=True)),
    _h(18, "convert", "How much power is the house using, in kilowatts?",
       lambda h: Number([h.watts / 1000], units=("kW",))),
    _h(19, "convert", "How many gallons of water are left in the tank?",
       lambda h: Number([h.tank_litres / g for g in GALLONS], units=("gal",))),
    _h(20, "convert", "How many watt-hours of energy have been used today?",
       lambda h: Number([h.kwh_today * 1000], whole=True, units=("Wh",))),
    _h(21, "convert", "How many more litres would fill the water tank?",
       lambda h: Number([h.tank_capacity - h.tank_litres], units=("L",))),
    _h(22, "cannot", "Is the garage door open?", lambda h: CannotTell()),
    _h(23, "cannot", "Is the kitchen window open?", lambda h: CannotTell()),
    _h(24, "cannot", "What is the CO2 level in the bedroom?", lambda h: CannotTell()),
    _h(25, "cannot", "How dry is the soil of the tomato plant?", lambda h: CannotTell()),
    _h(26, "cannot", "Is the dishwasher finished?", lambda h: CannotTell()),
    _h(27, "cannot", "How much gas has the house used today?", lambda h: CannotTell()),
    _h(28, "cannot", "What is the temperature in the living room?", lambda h: CannotTell()),
]  # fmt: skip

BARE_QUESTIONS = [
    _b(1, "cannot", "How hot is the CPU?", lambda d: CannotTell()),
    _b(2, "cannot", "What is the humidity?", lambda d: CannotTell()),
    _b(3, "cannot", "What is the temperature?", lambda d: CannotTell()),
    _b(4, "cannot", "What is the air pressure?", lambda d: CannotTell()),
    _b(5, "cannot", "What does the 1-Wire probe read?", lambda d: CannotTell()),
    _b(6, "cannot", "What is the CPU temperature in Fahrenheit?", lambda d: CannotTell()),
    _b(7, "cannot", "What is the light level in lux?", lambda d: CannotTell()),
    _b(8, "list", "Which sensors are connected to this device?", lambda d: NoneFound()),
    _b(9, "count", "How many sensors does this device have?", lambda d: NoneFound()),
    _b(10, "clock", "What time is it?", lambda d: Time(d.now)),
    _b(11, "clock", "What is today's date?", lambda d: Date(d.today)),
    _b(12, "clock", "What day of the week is it?", lambda d: Weekday(d.today.weekday())),
    _b(13, "reading", "What is the 1-minute load average?",
       lambda d: Number([d.status("load_average", "1min")])),
    _b(14, "reading", "How much memory is available, in MiB?",
       lambda d: Number([d.status("memory", "available_mib")], whole=True)),
    _b(15, "reading", "What percentage of the memory is in use?",
       lambda d: Number([d.status("memory", "used_percent")], whole=True)),
    _b(16, "reading", "How long has this machine been up?",
       lambda d: Uptime(int(d.status("uptime", "seconds")))),
    _b(17, "reading", "How much free disk space is there?",
       lambda d: Number([d.status("disk", "free_gib")], whole=True, tolerance=0.05)),
    _b(18, "dates", "What date is next Friday?", lambda d: Date(d.ahead(4))),
    _b(19, "convert", "How many days until 25 December?",
       lambda d: Number([(d.upcoming(12, 25) - d.today).days], whole=True, units=("d",))),
    _b(20, "convert", "How many hours has the machine been running?",
       lambda d: Number([d.status("uptime", "seconds") / 3600], whole=True, units=("h",))),
    _b(21, "reading", "What is the load average over 15 minutes?",
       lambda d: Number([d.status("load_average", "15min")])),
    _b(22, "dates", "What weekday will it be in 10 days?", lambda d: Weekday(d.days(10).weekday())),
]  # fmt: skip


def _pi_questions() -> list[Question]:
    by_id = {q.id: q for q in comp.QUESTIONS}
    return [
        Question(
            f"pi-{i}",
            "pi",
            KINDS[by_id[i].category],
            by_id[i].text,
            lambda device, _home, q=by_id[i]: q.expect(device),
            yes_no=f"pi-{i}" in YES_NO_IDS,
        )
        for i in PI_IDS
    ]


def _rephrased(device: str) -> list[Question]:
    return [Question(q.id, q.device, q.kind, q.text, q.expect, yes_no=q.yes_no)
            for q in [*REPHRASED[device], *UNSEEN[device]]]  # fmt: skip


QUESTIONS: dict[str, list[Question]] = {
    "pi": _pi_questions() + _rephrased("pi"),
    "home": HOME_QUESTIONS + _rephrased("home"),
    "bare": BARE_QUESTIONS + _rephrased("bare"),
}
