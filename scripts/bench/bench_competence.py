"""Does the embedded model answer home questions correctly? Competence of each loop strategy.

108 questions a home user would ask about the built-in skills (CPU, BME280 and 1-Wire sensors,
listing sensors, load, memory, disk, uptime, the clock and date arithmetic, conversions,
comparisons, two-part questions, counts, and questions no skill can answer) are asked of a fake
Raspberry Pi (device.py: the demo device's sysfs tree and a /proc of the benchmarks' own), built
in a temporary directory. Disk usage is the real ``statvfs`` of ``/``. A third of the questions are
``dev`` (tune on these), a third ``held-out`` (never tune on these; they were written once,
before any result was seen), and a third ``fresh``: written after the held-out answers had been
read over several sessions, so that one set of questions no change was ever made for stays blind.

Each answer is scored automatically, and strictly (competence_scoring.py), against values computed
when the question is asked: the skill functions themselves are called in-process on the same fake
tree, and the clock questions use ``datetime``, so the benchmark works on any day. One of the
answer's numbers must be the value within the rounding the answer shows (48.3 matches 48.312; a
whole number only where the question allows it); a weekday must be named, and no other; a date
may be written 2026-12-04, "December 4", "4 December 2026" or 12/4/2026; where no skill can answer,
the answer must say it cannot tell. And it must not be **misleading**: state no number, unit,
date, weekday or sensor name that is in neither the skill results it saw nor the question nor the
right value ("41.5 degrees" for a humidity in %RH is misleading, and so wrong). An answer that is
not ``answered`` is wrong, and not misleading.

Strategies, asked interleaved question by question in the same run:

- ``plain``: the daemon with ``[model] strategy = "plain"`` (today's loop); on a daemon that does
  not know the key yet, the daemon without it.
- ``guided``: the daemon with ``[model] strategy = "guided"``; skipped, with a message, on a
  daemon that does not know it.
- ``peer``: the peer baseline, llama-cpp-python's ``Llama.create_chat_completion`` on the same
  GGUF with ``response_format`` set to the same action schema, in a client loop written the way a
  user would write it (results sent back as user turns "Result of <skill>: <json>").

The daemons are real ``edge-agent serve --model default`` processes, asked over their socket
with ``edge_agentd.client.Client``, as users ask them. Every strategy gets the same
``--max-iterations`` per question (default 6).

Per question it records the outcome, answer, whether it was correct, the model calls (model
turns: skill calls, final answers and unparseable replies), the seconds, and the prompt tokens:
``prompt`` is what each call's prompt held, summed over the run; ``evaluated`` is what the model
actually ran (the daemon reports it; for the peer it is estimated from llama-cpp-python's prefix
match with the previous call, marked ``~``). The verdict is issue 19's goal: ``guided`` at least
80% strictly correct on each half with at most one misleading answer per half, a median of at
most 3 model calls, ahead of the peer on correct answers and no slower per question. It exits 1
when the goal is missed or cannot be judged because ``guided`` did not run. With ``--json`` the
records are written after every answer, so a run cut short leaves what it asked.

    .venv/bin/python -m scripts.bench.bench_competence [--strategies plain,guided,peer]
        [--split dev|held-out|fresh|all] [--only d01,h12,convert] [--limit N] [--max-iterations 6]
        [--json OUT] [--verbose]

``--only`` asks only the questions of those ids or categories; ``--limit N`` only the first N,
the halves taking turns. On a loaded 2-core
machine a full run of three strategies takes the better part of an hour.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import itertools
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.loop import Agent
from edge_agentd.agent.registry import Registry
from edge_agentd.client.askoptions import AskOptions
from edge_agentd.client.zmqclient import Client, DaemonError
from edge_agentd.model.scripted import MockModel
from edge_agentd.skills import register_builtins
from scripts.bench.competence_scoring import (
    WEEKDAYS,
    Expected,
    dates,
    gather,
    misleading,
    numbers,
    rounds_to,
    says_cannot_tell,
    weekdays_named,
)
from scripts.bench.device import PROBE, build_device

STRATEGIES = ("plain", "guided", "peer")
SPLITS = ("dev", "held-out", "fresh")
EXIT_CONFIG = 78  # what `edge-agent serve` exits with on a config error
GOAL_CORRECT = 0.8
GOAL_MEDIAN_CALLS = 3
GOAL_MISLEADING = 1  # answers per half

# -- scoring (strict; see competence_scoring.py) -----------------------------------------------


class Check:
    """What a correct answer must contain; ``str`` says it for the report."""

    def __call__(self, answer: str) -> bool:
        raise NotImplementedError

    def expected(self) -> Expected:
        """The right values: stating them is never misleading."""
        return Expected()


@dataclasses.dataclass
class Number(Check):
    """One of the answer's numbers is one of ``values`` as the answer rounds it: 48.3 and 48.31
    match 48.312, 48 only with ``whole``. ``tolerance`` widens the match for values that drift
    (free disk space). ``units``: the units the value may be stated in (canonical, see
    competence_scoring.UNIT_WORDS)."""

    values: list[float]
    whole: bool = False
    tolerance: float = 0.0
    units: tuple[str, ...] = ()

    def __call__(self, answer: str) -> bool:
        for number, decimals, _, _ in numbers(answer):
            for value in self.values:
                if decimals == 0 and not self.whole and value != round(value):
                    continue
                if rounds_to(number, decimals, value, self.tolerance):
                    return True
        return False

    def expected(self) -> Expected:
        units: tuple[str | None, ...] = (*self.units, None)
        return Expected(values=[(v, u) for v in self.values for u in units])

    def __str__(self) -> str:
        shown = " or ".join(f"{v:g}" for v in self.values)
        return shown + (" (whole number ok)" if self.whole else "")


@dataclasses.dataclass
class Weekday(Check):
    """The weekday is named, and no other weekday is."""

    day: int

    def __call__(self, answer: str) -> bool:
        return weekdays_named(answer) == {self.day}

    def expected(self) -> Expected:
        return Expected(weekdays={self.day})

    def __str__(self) -> str:
        return WEEKDAYS[self.day].capitalize()


@dataclasses.dataclass
class Date(Check):
    """The date is written in some common form; a year, where given, must match."""

    date: dt.date

    def __call__(self, answer: str) -> bool:
        return any(
            (y is None or y == self.date.year) and (m, d) == (self.date.month, self.date.day)
            for y, m, d, _, _ in dates(answer)
        )

    def expected(self) -> Expected:
        return Expected(dates=[self.date], weekdays={self.date.weekday()})

    def __str__(self) -> str:
        return self.date.isoformat()


@dataclasses.dataclass
class Time(Check):
    """A clock time (HH:MM, 24 h or with am/pm) between ``start`` - 2 min and now + 2 min."""

    start: dt.datetime

    def _window(self) -> tuple[dt.datetime, float]:
        begin = self.start - dt.timedelta(minutes=2)
        end = dt.datetime.now() + dt.timedelta(minutes=2)
        return begin, (end - begin).total_seconds() / 60

    def __call__(self, answer: str) -> bool:
        begin, span = self._window()
        clock = r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*([ap])?\.?m?\b"
        for h, m, half in re.findall(clock, answer.lower()):
            hour = int(h) % 12 + (12 if half == "p" else 0) if half else int(h)
            minutes = hour * 60 + int(m)
            after_begin = (minutes - (begin.hour * 60 + begin.minute)) % 1440
            if after_begin <= span:
                return True
        return False

    def expected(self) -> Expected:
        begin, span = self._window()
        values: list[tuple[float, str | None]] = []
        for minute in range(int(span) + 1):
            moment = begin + dt.timedelta(minutes=minute)
            values += [(moment.hour, None), (moment.hour % 12 or 12, None), (moment.minute, None)]
        return Expected(values=values)

    def __str__(self) -> str:
        return f"about {self.start:%H:%M}"


@dataclasses.dataclass
class Names(Check):
    """Each group has one of its words in the answer (case-insensitive)."""

    groups: list[list[str]]

    def __call__(self, answer: str) -> bool:
        low = answer.lower()
        return all(any(word.lower() in low for word in group) for group in self.groups)

    def __str__(self) -> str:
        return " and ".join("/".join(group) for group in self.groups)


@dataclasses.dataclass
class First(Check):
    """A comparison's answer: of the two, the ``winner`` is named first ("The CPU is warmer
    than the BME280", not "The BME280 is cooler than the CPU")."""

    winner: list[str]
    loser: list[str]

    def __call__(self, answer: str) -> bool:
        low = answer.lower()

        def first(words: list[str]) -> int:
            found = [i for w in words if (i := low.find(w.lower())) >= 0]
            return min(found) if found else len(low) + 1

        win, lose = first(self.winner), first(self.loser)
        return win <= len(low) and win < lose

    def __str__(self) -> str:
        return f"{'/'.join(self.winner)} (before {'/'.join(self.loser)})"


@dataclasses.dataclass
class Uptime(Check):
    """The days and hours of an uptime, or its total seconds or hours."""

    seconds: int

    def __call__(self, answer: str) -> bool:
        days = self.seconds // 86400
        low = answer.lower()
        if re.search(rf"\b{days}\s*(d\b|days?)", low):
            return True
        return Number([self.seconds, round(self.seconds / 3600)], whole=True)(answer)

    def expected(self) -> Expected:
        days, rest = divmod(self.seconds, 86400)
        hours = self.seconds / 3600
        return Expected(values=[(days, "d"), (rest // 3600, "h"), (self.seconds, "s"),
                                (hours, "h"), (self.seconds / 86400, "d")])  # fmt: skip

    def __str__(self) -> str:
        days, rest = divmod(self.seconds, 86400)
        return f"{days} d {rest // 3600} h"


@dataclasses.dataclass
class CannotTell(Check):
    """No skill can answer: the answer says it cannot tell; any value it states misleads."""

    def __call__(self, answer: str) -> bool:
        return says_cannot_tell(answer)

    def expected(self) -> Expected:
        return Expected(any_value_misleads=True)

    def __str__(self) -> str:
        return "cannot tell"


@dataclasses.dataclass
class Both(Check):
    """A two-part question: each part's check holds."""

    parts: list[Check]

    def __call__(self, answer: str) -> bool:
        return all(part(answer) for part in self.parts)

    def expected(self) -> Expected:
        merged = Expected()
        for part in self.parts:
            got = part.expected()
            merged.values += got.values
            merged.dates += got.dates
            merged.weekdays |= got.weekdays
        return merged

    def __str__(self) -> str:
        return " and ".join(str(part) for part in self.parts)


def judge(check: Check, answer: Any, question: str) -> tuple[bool, list[str]]:
    """(strictly correct, what misleads) for one answer."""
    if answer.outcome != "answered" or answer.answer is None:
        return False, []
    misleads = misleading(answer.answer, gather(answer.results, question), check.expected())
    return bool(check(answer.answer)) and not misleads, misleads


# -- the questions --------------------------------------------------------------------------------


class Device:
    """The skills on the fake tree, called in-process for the expected values, and the clock."""

    def __init__(self, sysfs: Path, proc: Path) -> None:
        self.registry = Registry()
        register_builtins(self.registry, sysfs_root=sysfs, proc_root=proc, weather=False)
        self.now = dt.datetime.now()

    def tick(self) -> None:
        self.now = dt.datetime.now()

    @property
    def today(self) -> dt.date:
        return self.now.date()

    def call(self, skill: str, **arguments: Any) -> Any:
        spec = self.registry.get(skill)
        if spec is None:
            raise KeyError(skill)
        return self.registry.call(spec, spec.validate_arguments(arguments))

    def reading(self, sensor: str, quantity: str) -> float:
        readings = self.call("read_sensor", name=sensor)["readings"]
        return float(next(r["value"] for r in readings if r["quantity"] == quantity))

    def cpu(self) -> float:
        return float(self.call("cpu_temperature")["value"])

    def status(self, part: str, key: str) -> float:
        return float(self.call("system_status")[part][key])

    def ahead(self, weekday: int) -> dt.date:
        """The coming ``weekday``, 1 to 7 days ahead ("next friday")."""
        return self.today + dt.timedelta(days=(weekday - self.today.weekday() - 1) % 7 + 1)

    def days(self, n: int) -> dt.date:
        return self.today + dt.timedelta(days=n)

    def upcoming(self, month: int, day: int) -> dt.date:
        """The next ``month``/``day`` from today on (today itself included)."""
        date = dt.date(self.today.year, month, day)
        return date if date >= self.today else dt.date(self.today.year + 1, month, day)

    def count(self, quantity: str) -> int:
        """How many sensors measure ``quantity``."""
        sensors = self.call("list_sensors")["sensors"]
        return sum(any(m["quantity"] == quantity for m in s["measures"]) for s in sensors)


@dataclasses.dataclass(frozen=True)
class Question:
    id: str
    split: str
    category: str
    text: str
    expect: Callable[[Device], Check]


def _q(n: int, split: str, category: str, text: str, expect: Callable[[Device], Check]) -> Question:
    return Question(f"{split[0]}{n:02d}", split, category, text, expect)


SENSOR_GROUPS = [["thermal_zone0", "cpu"], ["bme280"], [PROBE, "ds18b20"]]

# Written once, before any result was seen. The held-out half is not to be tuned on or edited.
QUESTIONS: list[Question] = [
    # CPU
    _q(1, "dev", "cpu", "What is the CPU temperature?", lambda d: Number([d.cpu()])),
    _q(2, "dev", "cpu", "Is my Raspberry Pi's CPU running hot? Tell me its temperature.",
       lambda d: Number([d.cpu()])),
    _q(1, "held-out", "cpu", "How hot is the processor right now?", lambda d: Number([d.cpu()])),
    _q(2, "held-out", "cpu", "Tell me the CPU temp in degrees Celsius.",
       lambda d: Number([d.cpu()])),
    # the BME280's temperature, humidity and pressure
    _q(3, "dev", "iio", "What temperature does the BME280 sensor show?",
       lambda d: Number([d.reading("bme280", "temperature")])),
    _q(3, "held-out", "iio", "What is the temperature reading of the bme280?",
       lambda d: Number([d.reading("bme280", "temperature")])),
    _q(4, "dev", "iio-2calls", "What is the humidity?",
       lambda d: Number([d.reading("bme280", "humidity")])),
    _q(5, "dev", "iio-2calls", "What's the relative humidity in percent?",
       lambda d: Number([d.reading("bme280", "humidity")])),
    _q(4, "held-out", "iio-2calls", "How humid is it in here?",
       lambda d: Number([d.reading("bme280", "humidity")])),
    _q(5, "held-out", "iio-2calls", "Tell me the current humidity reading.",
       lambda d: Number([d.reading("bme280", "humidity")])),
    _q(6, "dev", "iio-2calls", "What is the air pressure?",
       lambda d: Number([d.reading("bme280", "pressure"), d.reading("bme280", "pressure") / 10])),
    _q(6, "held-out", "iio-2calls", "What's the barometric pressure in hPa?",
       lambda d: Number([d.reading("bme280", "pressure")])),
    # the 1-Wire probe
    _q(7, "dev", "w1-2calls", "What temperature does the DS18B20 probe read?",
       lambda d: Number([d.reading(PROBE, "temperature")])),
    _q(7, "held-out", "w1-2calls", "What does the 1-Wire temperature probe say?",
       lambda d: Number([d.reading(PROBE, "temperature")])),
    _q(8, "dev", "w1", "What is the ID of the 1-Wire sensor?", lambda d: Names([[PROBE]])),
    _q(8, "held-out", "w1", "What is the name of the DS18B20 probe?", lambda d: Names([[PROBE]])),
    # listing sensors
    _q(9, "dev", "list", "Which sensors are connected to this device?",
       lambda d: Names(SENSOR_GROUPS)),
    _q(9, "held-out", "list", "List all the sensors you have.", lambda d: Names(SENSOR_GROUPS)),
    _q(10, "dev", "list", "How many sensors does this device have?",
       lambda d: Number([len(d.call("list_sensors")["sensors"])], whole=True)),
    _q(10, "held-out", "list", "Does this device have a humidity sensor? What is its name?",
       lambda d: Names([["bme280"]])),
    # load, memory, disk, uptime
    _q(11, "dev", "system", "What is the 1-minute load average?",
       lambda d: Number([d.status("load_average", "1min")])),
    _q(11, "held-out", "system", "What's the load average over the last 15 minutes?",
       lambda d: Number([d.status("load_average", "15min")])),
    _q(12, "dev", "system", "How much memory is available, in MiB?",
       lambda d: Number([d.status("memory", "available_mib")], whole=True)),
    _q(12, "held-out", "system", "How much RAM is free right now?",
       lambda d: Number([d.status("memory", "available_mib"),
                         d.status("memory", "available_mib") / 1024], whole=True)),
    _q(13, "dev", "system", "What percentage of the memory is in use?",
       lambda d: Number([d.status("memory", "used_percent")], whole=True)),
    _q(13, "held-out", "system", "How much of the RAM is used, in percent?",
       lambda d: Number([d.status("memory", "used_percent")], whole=True)),
    _q(14, "dev", "system", "How many gigabytes of disk space are free?",
       lambda d: Number([d.status("disk", "free_gib")], whole=True, tolerance=0.05)),
    _q(14, "held-out", "system", "How much free space is left on the disk?",
       lambda d: Number([d.status("disk", "free_gib")], whole=True, tolerance=0.05)),
    _q(15, "dev", "system", "What percentage of the disk is used?",
       lambda d: Number([d.status("disk", "used_percent")], whole=True, tolerance=0.05)),
    _q(15, "held-out", "system", "How full is the disk, in percent?",
       lambda d: Number([d.status("disk", "used_percent")], whole=True, tolerance=0.05)),
    _q(16, "dev", "system", "How long has this device been up?",
       lambda d: Uptime(int(d.status("uptime", "seconds")))),
    _q(16, "held-out", "system", "How many days has it been since the last reboot?",
       lambda d: Number([int(d.status("uptime", "seconds")) // 86400], whole=True)),
    # the clock
    _q(17, "dev", "clock", "What time is it?", lambda d: Time(d.now)),
    _q(17, "held-out", "clock", "What's the time now?", lambda d: Time(d.now)),
    _q(18, "dev", "clock", "What day of the week is it today?",
       lambda d: Weekday(d.today.weekday())),
    _q(18, "held-out", "clock", "Which weekday is it?", lambda d: Weekday(d.today.weekday())),
    _q(19, "dev", "clock", "What is today's date?", lambda d: Date(d.today)),
    _q(19, "held-out", "clock", "What's the date today?", lambda d: Date(d.today)),
    # date arithmetic
    _q(20, "dev", "dates", "What date is next Friday?", lambda d: Date(d.ahead(4))),
    _q(20, "held-out", "dates", "What date will it be next Tuesday?", lambda d: Date(d.ahead(1))),
    _q(21, "dev", "dates", "What is the date tomorrow?", lambda d: Date(d.days(1))),
    _q(21, "held-out", "dates", "What date was it yesterday?", lambda d: Date(d.days(-1))),
    _q(22, "dev", "dates", "What weekday was 1 January 2000?",
       lambda d: Weekday(dt.date(2000, 1, 1).weekday())),
    _q(22, "held-out", "dates", "What day of the week is 15 August 2027?",
       lambda d: Weekday(dt.date(2027, 8, 15).weekday())),
    _q(23, "dev", "dates", "What weekday will it be in 10 days?",
       lambda d: Weekday(d.days(10).weekday())),
    _q(23, "held-out", "dates", "What day of the week was it 3 days ago?",
       lambda d: Weekday(d.days(-3).weekday())),
    _q(24, "dev", "dates", "How many days until next Monday?",
       lambda d: Number([(d.ahead(0) - d.today).days], whole=True)),
    _q(24, "held-out", "dates", "How many days is it until next Sunday?",
       lambda d: Number([(d.ahead(6) - d.today).days], whole=True)),
    _q(25, "dev", "dates", "What date is it 2 weeks from today?", lambda d: Date(d.days(14))),
    _q(25, "held-out", "dates", "What will the date be in 30 days?", lambda d: Date(d.days(30))),
    # two facts, then a step of reasoning
    _q(26, "dev", "2calls", "What day of the week is Christmas Eve this year?",
       lambda d: Weekday(dt.date(d.today.year, 12, 24).weekday())),
    _q(26, "held-out", "2calls", "What weekday is New Year's Day next year?",
       lambda d: Weekday(dt.date(d.today.year + 1, 1, 1).weekday())),
    _q(27, "dev", "2calls", "How much warmer is the CPU than the BME280 sensor, in °C?",
       lambda d: Number([d.cpu() - d.reading("bme280", "temperature")])),
    _q(27, "held-out", "2calls", "What is the temperature difference between the CPU and the "
       "1-Wire probe?", lambda d: Number([d.cpu() - d.reading(PROBE, "temperature")],
                                         units=("°C",))),
    # Added for issue 19, both halves written once, before any run of them: conversions,
    # comparisons, two-part questions, counts, and questions no skill can answer (the weather
    # skill is off; there is no light sensor and no garage sensor).
    _q(28, "dev", "convert", "What is the CPU temperature in Fahrenheit?",
       lambda d: Number([d.cpu() * 9 / 5 + 32], units=("°F",))),
    _q(28, "held-out", "convert", "Tell me the processor temperature in °F.",
       lambda d: Number([d.cpu() * 9 / 5 + 32], units=("°F",))),
    _q(29, "dev", "convert", "How many hours has the device been running?",
       lambda d: Number([d.status("uptime", "seconds") / 3600], whole=True, units=("h",))),
    _q(29, "held-out", "convert", "How many hours has it been since the last boot?",
       lambda d: Number([d.status("uptime", "seconds") / 3600], whole=True, units=("h",))),
    _q(30, "dev", "convert", "How many days until 25 December?",
       lambda d: Number([(d.upcoming(12, 25) - d.today).days], whole=True, units=("d",))),
    _q(30, "held-out", "convert", "How many days are left until 1 January?",
       lambda d: Number([(d.upcoming(1, 1) - d.today).days], whole=True, units=("d",))),
    _q(31, "dev", "convert", "How much free disk space is there in GB?",
       lambda d: Number([d.status("disk", "free_gib"), d.status("disk", "free_gib") * 1.073741824],
                        whole=True, tolerance=0.05, units=("GiB",))),
    _q(31, "held-out", "convert", "How many GB of storage are free?",
       lambda d: Number([d.status("disk", "free_gib"), d.status("disk", "free_gib") * 1.073741824],
                        whole=True, tolerance=0.05, units=("GiB",))),
    _q(32, "dev", "compare", "Which is warmer, the CPU or the BME280 sensor?",
       lambda d: First(["cpu", "processor", "thermal_zone0"], ["bme280"])),
    _q(32, "held-out", "compare", "Which sensor reads the higher temperature, the 1-Wire probe or "
       "the BME280?", lambda d: First(["bme280"], ["1-wire", PROBE, "probe", "ds18b20"])),
    _q(33, "dev", "two-part", "What are the CPU temperature and the humidity?",
       lambda d: Both([Number([d.cpu()]), Number([d.reading("bme280", "humidity")])])),
    _q(33, "held-out", "two-part", "What is the 1-minute load average, and what time is it?",
       lambda d: Both([Number([d.status("load_average", "1min")]), Time(d.now)])),
    _q(34, "dev", "count", "How many temperature sensors are there?",
       lambda d: Number([d.count("temperature")], whole=True)),
    _q(34, "held-out", "count", "How many sensors measure temperature?",
       lambda d: Number([d.count("temperature")], whole=True)),
    _q(35, "dev", "cannot", "What's the weather like outside today?", lambda d: CannotTell()),
    _q(35, "held-out", "cannot", "Will it rain tomorrow?", lambda d: CannotTell()),
    _q(36, "dev", "cannot", "What does the garage door sensor read?", lambda d: CannotTell()),
    _q(36, "held-out", "cannot", "What is the light level in lux?", lambda d: CannotTell()),
    # The fresh half: one question per kind above, written on 2026-12-04 in one sitting, before
    # any run of them, after every held-out answer had been read in earlier sessions. Never
    # tuned on or edited: the figure no change was made for.
    _q(1, "fresh", "cpu", "How warm is the CPU?", lambda d: Number([d.cpu()])),
    _q(2, "fresh", "cpu", "Give me the processor temperature, please.",
       lambda d: Number([d.cpu()])),
    _q(3, "fresh", "iio", "What does the BME280 say the temperature is?",
       lambda d: Number([d.reading("bme280", "temperature")])),
    _q(4, "fresh", "iio-2calls", "What's the humidity in the room?",
       lambda d: Number([d.reading("bme280", "humidity")])),
    _q(5, "fresh", "iio-2calls", "Tell me the relative humidity.",
       lambda d: Number([d.reading("bme280", "humidity")])),
    _q(6, "fresh", "iio-2calls", "What is the atmospheric pressure right now?",
       lambda d: Number([d.reading("bme280", "pressure"), d.reading("bme280", "pressure") / 10])),
    _q(7, "fresh", "w1-2calls", "What temperature is the 1-Wire probe reporting?",
       lambda d: Number([d.reading(PROBE, "temperature")])),
    _q(8, "fresh", "w1", "Which ID does the DS18B20 have?", lambda d: Names([[PROBE]])),
    _q(9, "fresh", "list", "What sensors can you read?", lambda d: Names(SENSOR_GROUPS)),
    _q(10, "fresh", "list", "How many sensors are attached?",
       lambda d: Number([len(d.call("list_sensors")["sensors"])], whole=True)),
    _q(11, "fresh", "system", "What is the load average over 5 minutes?",
       lambda d: Number([d.status("load_average", "5min")])),
    _q(12, "fresh", "system", "How many MiB of memory are available?",
       lambda d: Number([d.status("memory", "available_mib")], whole=True)),
    _q(13, "fresh", "system", "What percent of RAM is used?",
       lambda d: Number([d.status("memory", "used_percent")], whole=True)),
    _q(14, "fresh", "system", "How much disk space is free?",
       lambda d: Number([d.status("disk", "free_gib")], whole=True, tolerance=0.05)),
    _q(15, "fresh", "system", "How much of the disk is used, as a percentage?",
       lambda d: Number([d.status("disk", "used_percent")], whole=True, tolerance=0.05)),
    _q(16, "fresh", "system", "What is the uptime?",
       lambda d: Uptime(int(d.status("uptime", "seconds")))),
    _q(17, "fresh", "clock", "Tell me the current time.", lambda d: Time(d.now)),
    _q(18, "fresh", "clock", "What day of the week are we on?",
       lambda d: Weekday(d.today.weekday())),
    _q(19, "fresh", "clock", "Which date is it today?", lambda d: Date(d.today)),
    _q(20, "fresh", "dates", "What is the date of next Wednesday?", lambda d: Date(d.ahead(2))),
    _q(21, "fresh", "dates", "What date will it be the day after tomorrow?",
       lambda d: Date(d.days(2))),
    _q(22, "fresh", "dates", "What day of the week was 4 July 1976?",
       lambda d: Weekday(dt.date(1976, 7, 4).weekday())),
    _q(23, "fresh", "dates", "Which weekday will it be in 4 days?",
       lambda d: Weekday(d.days(4).weekday())),
    _q(24, "fresh", "dates", "How many days until next Saturday?",
       lambda d: Number([(d.ahead(5) - d.today).days], whole=True)),
    _q(25, "fresh", "dates", "What's the date 3 weeks from now?", lambda d: Date(d.days(21))),
    _q(26, "fresh", "2calls", "On what day of the week does Halloween fall this year?",
       lambda d: Weekday(dt.date(d.today.year, 10, 31).weekday())),
    _q(27, "fresh", "2calls", "How much cooler is the 1-Wire probe than the CPU?",
       lambda d: Number([d.cpu() - d.reading(PROBE, "temperature")], units=("°C",))),
    _q(28, "fresh", "convert", "What's the BME280 temperature in Fahrenheit?",
       lambda d: Number([d.reading("bme280", "temperature") * 9 / 5 + 32], units=("°F",))),
    _q(29, "fresh", "convert", "How many hours of uptime does it have?",
       lambda d: Number([d.status("uptime", "seconds") / 3600], whole=True, units=("h",))),
    _q(30, "fresh", "convert", "How many days are there until Halloween?",
       lambda d: Number([(d.upcoming(10, 31) - d.today).days], whole=True, units=("d",))),
    _q(31, "fresh", "convert", "How much memory is available in GB?",
       lambda d: Number([d.status("memory", "available_mib") / 1024,
                         d.status("memory", "available_mib") / 1024 * 1.073741824],
                        whole=True, tolerance=0.05, units=("GiB",))),
    _q(32, "fresh", "compare", "Which is colder, the BME280 or the 1-Wire probe?",
       lambda d: First(["1-wire", PROBE, "probe", "ds18b20"], ["bme280"])),
    _q(33, "fresh", "two-part", "What is the air pressure and what is the humidity?",
       lambda d: Both([Number([d.reading("bme280", "pressure"),
                               d.reading("bme280", "pressure") / 10]),
                       Number([d.reading("bme280", "humidity")])])),
    _q(34, "fresh", "count", "How many sensors can measure humidity?",
       lambda d: Number([d.count("humidity")], whole=True)),
    _q(35, "fresh", "cannot", "Is the front door locked?", lambda d: CannotTell()),
    _q(36, "fresh", "cannot", "What is the CO2 level in the living room?",
       lambda d: CannotTell()),
]  # fmt: skip


# -- the strategies -------------------------------------------------------------------------------


@dataclasses.dataclass
class Answer:
    outcome: str
    answer: str | None
    model_calls: int
    seconds: float
    prompt_tokens: int
    evaluated_tokens: int
    skills: list[str]
    error: str | None = None
    results: list[Any] = dataclasses.field(default_factory=list)
    """What each skill call returned: the evidence the answer is judged against."""
    events: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """The run's events as the daemon sent them (each action's ``usage``: what bench_pi prices)."""


class StrategyUnsupported(Exception):
    """The daemon refused the ``[model] strategy`` key or value."""


def _model_calls(events: list[dict[str, Any]]) -> int:
    """Model turns: each skill call and final answer, and each reply that failed to parse."""
    turns = 0
    for event in events:
        kind = event.get("type")
        if kind in ("CallSkillAction", "FinalAnswerAction") or (
            kind == "ValidationErrorObservation" and event.get("raw") is not None
        ):
            turns += 1
    return turns


def _tokens(events: list[dict[str, Any]], key: str) -> int:
    return sum(int((e.get("usage") or {}).get(key) or 0) for e in events)


class DaemonStrategy:
    """An ``edge-agent serve --model default`` process on the fake device, asked over ipc.

    ``name`` names its files and, unless ``strategy`` is given, the ``[model] strategy`` it runs;
    ``model`` is what ``--model`` gets; ``skills_directories`` are its ``[skills] directories``
    and ``env`` is added to its environment (bench_grounding.py runs other models and devices).
    """

    def __init__(
        self,
        name: str,
        workdir: Path,
        sysfs: Path,
        proc: Path,
        args: Any,
        *,
        strategy: str | None = None,
        model: str = "default",
        skills_directories: tuple[Path, ...] = (),
        env: dict[str, str] | None = None,
        model_settings: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.model_settings = model_settings or {}
        self.strategy = strategy or name
        self.model = model
        self.skills_directories = skills_directories
        self.extra_env = env or {}
        self.label = name
        self.workdir = workdir
        self.sysfs = sysfs
        self.proc_root = proc
        self.args = args
        self.endpoint = f"ipc://{workdir}/{name}.sock"
        self.log_path = workdir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.client: Client | None = None

    def _config(self, strategy: str | None) -> Path:
        lines = []
        if strategy is not None or self.model_settings:
            lines.append("[model]")
            if strategy is not None:
                lines.append(f'strategy = "{strategy}"')
            lines += [f"{key} = {json.dumps(value)}" for key, value in self.model_settings.items()]
            lines.append("")
        lines += [
            "[skills]",
            f"sysfs_root = {json.dumps(str(self.sysfs))}",
            "weather = false",
            "entry_points = false",
            f"directories = {json.dumps([str(d) for d in self.skills_directories])}",
            "",
        ]
        path = self.workdir / f"{self.name}.toml"
        path.write_text("\n".join(lines))
        return path

    def start(self) -> None:
        try:
            self._start(self.strategy)
        except StrategyUnsupported as exc:
            if self.strategy != "plain":
                raise
            print(f"  {exc}\n  plain: starting without the key: the daemon's only loop is today's")
            self.label = "plain (no key)"
            self._start(None)

    def _start(self, strategy: str | None) -> None:
        exe = Path(sys.executable).with_name("edge-agent")
        command = [str(exe)] if exe.exists() else [sys.executable, "-m", "edge_agentd.cli"]
        command += ["serve", "--model", self.model, "--config", str(self._config(strategy)),
                    "--endpoint", self.endpoint, "--log-level", "WARNING"]  # fmt: skip
        env = {
            **os.environ,
            "EDGE_AGENT_PROC_ROOT": str(self.proc_root),
            "XDG_STATE_HOME": str(self.workdir),  # its run journal, not the user's
            **self.extra_env,
        }
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        started = time.monotonic()
        probe = Client(self.endpoint, timeout=2.0, retries=0)
        try:
            while time.monotonic() - started < self.args.load_timeout:
                code = self.process.poll()
                if code is not None:
                    log_text = self.log_path.read_text(errors="replace")
                    if code == EXIT_CONFIG and "strategy" in log_text:
                        raise StrategyUnsupported(
                            f"{self.name}: the daemon refuses [model] strategy: "
                            f"{_last_line(log_text)}"
                        )
                    raise RuntimeError(
                        f"{self.name}: the daemon exited with {code}: {_last_line(log_text)}"
                    )
                with contextlib.suppress(DaemonError):
                    if probe.status().get("state") == "ready":
                        print(f"  {self.label}: ready in {time.monotonic() - started:.0f} s")
                        self.client = Client(self.endpoint, timeout=self.args.timeout, retries=0)
                        return
                time.sleep(0.5)
        finally:
            probe.close()
        raise RuntimeError(f"{self.name}: not ready after {self.args.load_timeout:g} s")

    def ask(self, question: str) -> Answer:
        assert self.client is not None and self.process is not None
        started = time.perf_counter()
        if self.process.poll() is not None:
            return Answer("error", None, 0, 0.0, 0, 0, [], f"the daemon exited ({self.log_path})")
        try:
            options = AskOptions(max_iterations=self.args.max_iterations, timeout=self.args.timeout)
            reply = self.client.run(question, options)
        except DaemonError as exc:
            return Answer("error", None, 0, time.perf_counter() - started, 0, 0, [], str(exc))
        seconds = time.perf_counter() - started
        events = reply.get("state", {}).get("events", [])
        return Answer(
            outcome=str(reply.get("outcome")),
            answer=reply.get("answer"),
            model_calls=_model_calls(events),
            seconds=seconds,
            prompt_tokens=_tokens(events, "prompt_tokens"),
            evaluated_tokens=_tokens(events, "evaluated_tokens"),
            skills=[e["skill_name"] for e in events if e.get("type") == "CallSkillAction"],
            results=[e.get("result") for e in events if e.get("type") == "SkillResultObservation"],
            events=events,
        )

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class PeerStrategy:
    """llama-cpp-python's chat completions on the same GGUF, in a loop a user would write."""

    label = "peer"

    def __init__(
        self,
        device: Device,
        args: Any,
        *,
        model_path: Path | None = None,
        chat_format: str | None = "gemma",
    ) -> None:
        self.device = device
        self.args = args
        self.model_path = model_path
        self.chat_format = chat_format
        self.llm: Any = None
        self.system = Agent(
            MockModel([]), device.registry, grounding=Grounding()
        ).system_prompt()
        self.schema = device.registry.action_schema()

    def start(self) -> None:
        from llama_cpp import Llama

        from edge_agentd.model.embedded import default_model_path
        from edge_agentd.model.sizing import default_threads
        from scripts.bench.peer_llama import guard_high_level_llama

        guard_high_level_llama()

        started = time.monotonic()
        # The embedded GGUF carries no chat template, so llama-cpp-python would guess llama-2's;
        # a user names Gemma's (``chat_format=None`` uses the file's own template). Same context
        # size and threads as the daemon.
        self.llm = Llama(
            model_path=str(self.model_path or default_model_path()[0]),
            n_ctx=4096,
            n_threads=default_threads(),
            chat_format=self.chat_format,
            verbose=False,
        )
        print(f"  {self.label}: loaded in {time.monotonic() - started:.0f} s")

    def _evaluated(self, before: list[int], prompt_tokens: int) -> int:
        """Prompt tokens llama-cpp-python ran: those past its prefix match with the last call."""
        after = [int(t) for t in getattr(self.llm, "_input_ids", [])[:prompt_tokens]]
        if not after:
            return prompt_tokens
        common = 0
        for a, b in zip(before, after, strict=False):
            if a != b:
                break
            common += 1
        # On a full match llama-cpp-python still runs the last prompt token again.
        return max(1, prompt_tokens - common)

    def ask(self, question: str) -> Answer:
        started = time.perf_counter()
        messages = [{"role": "user", "content": f"{self.system}\n\n{question}"}]
        calls = prompt = evaluated = 0
        skills: list[str] = []
        results: list[Any] = []
        deadline = started + self.args.timeout
        for _ in range(self.args.max_iterations):
            if time.perf_counter() > deadline:
                return Answer("interrupted", None, calls, time.perf_counter() - started,
                              prompt, evaluated, skills, results=results)  # fmt: skip
            before = [int(t) for t in getattr(self.llm, "_input_ids", [])]
            reply = self.llm.create_chat_completion(
                messages,
                response_format={"type": "json_object", "schema": self.schema},
                temperature=0.0,
                max_tokens=256,
            )
            calls += 1
            used = int(reply["usage"]["prompt_tokens"])
            prompt += used
            evaluated += self._evaluated(before, used)
            content = reply["choices"][0]["message"]["content"] or ""
            messages.append({"role": "assistant", "content": content})
            try:
                action = json.loads(content)
            except json.JSONDecodeError as exc:
                messages.append({"role": "user", "content": f"That is not valid JSON: {exc}"})
                continue
            if isinstance(action, dict) and isinstance(action.get("final_answer"), str):
                return Answer("answered", action["final_answer"], calls,
                              time.perf_counter() - started, prompt, evaluated, skills,
                              results=results)  # fmt: skip
            name = action.get("skill_name") if isinstance(action, dict) else None
            skills.append(str(name))
            try:
                result = self.device.call(str(name), **(action.get("arguments") or {}))
                results.append(result)
                text = f"Result of {name}: {json.dumps(result, ensure_ascii=False)}"
            except Exception as exc:
                text = f"Error from {name}: {exc}"
            messages.append({"role": "user", "content": text})
        return Answer("max_iterations", None, calls, time.perf_counter() - started,
                      prompt, evaluated, skills, results=results)  # fmt: skip

    def stop(self) -> None:
        if self.llm is not None:
            with contextlib.suppress(Exception):
                self.llm.close()
            self.llm = None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


# -- the report -----------------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    return {
        "n": n,
        "correct": sum(r["correct"] for r in records),
        "correct_rate": sum(r["correct"] for r in records) / n if n else 0.0,
        "misleading": sum(bool(r["misleads"]) for r in records),
        "answered_rate": sum(r["outcome"] == "answered" for r in records) / n if n else 0.0,
        "median_calls": _median([r["model_calls"] for r in records]),
        "median_s": _median([r["seconds"] for r in records]),
        "median_prompt": _median([r["prompt_tokens"] for r in records]),
        "total_prompt": sum(r["prompt_tokens"] for r in records),
        "median_evaluated": _median([r["evaluated_tokens"] for r in records]),
        "total_evaluated": sum(r["evaluated_tokens"] for r in records),
    }


def print_table(summaries: dict[tuple[str, str], dict[str, Any]], labels: dict[str, str]) -> None:
    print(
        "\nprompt = tokens in each call's prompt, summed per question; evaluated = tokens the "
        "model ran\n(the peer's is estimated from llama-cpp-python's prefix match: ~)"
    )
    header = (
        f"  {'strategy':<16} {'split':<9} {'strict correct':>14} {'misleading':>10} "
        f"{'answered':>9} {'calls':>6} "
        f"{'s/question':>10} {'prompt med':>10} {'evaluated med':>13} {'eval total':>10}"
    )
    print(header)
    print("  " + "-" * (len(header) - 2))
    for (name, split), s in summaries.items():
        mark = "~" if name == "peer" else ""
        print(
            f"  {labels[name]:<16} {split:<9} "
            f"{s['correct']:>4}/{s['n']:<3} ({s['correct_rate']:>4.0%}) {s['misleading']:>10} "
            f"{s['answered_rate']:>9.0%} {s['median_calls']:>6.1f} {s['median_s']:>10.1f} "
            f"{s['median_prompt']:>10.0f} {mark + format(s['median_evaluated'], '.0f'):>13} "
            f"{mark + str(s['total_evaluated']):>10}"
        )  # fmt: skip


def print_ratios(summaries: dict[tuple[str, str], dict[str, Any]], names: list[str]) -> None:
    if "guided" not in names:
        return
    guided = summaries[("guided", "all")]
    for other in ("peer", "plain"):
        if other not in names:
            continue
        base = summaries[(other, "all")]

        def ratio(key: str, base: dict[str, Any] = base) -> str:
            return f"{guided[key] / base[key]:.2f}x" if base[key] else "n/a"

        print(f"  guided/{other}: correct {ratio('correct')}, median calls "
              f"{ratio('median_calls')}, median s/question {ratio('median_s')}, "
              f"evaluated tokens {ratio('total_evaluated')}")  # fmt: skip


def verdict(summaries: dict[tuple[str, str], dict[str, Any]], names: list[str],
            splits: list[str]) -> bool:  # fmt: skip
    print("\ngoal (issue 19):")
    if "guided" not in names:
        print("  not judged: the guided strategy did not run")
        return False
    guided = summaries[("guided", "all")]
    checks = {
        f"guided >= {GOAL_CORRECT:.0%} strictly correct on {split}": summaries[("guided", split)][
            "correct_rate"
        ]
        >= GOAL_CORRECT
        for split in splits
    }
    for split in splits:
        checks[f"guided misleading <= {GOAL_MISLEADING} on {split}"] = (
            summaries[("guided", split)]["misleading"] <= GOAL_MISLEADING
        )
    checks[f"guided median model calls <= {GOAL_MEDIAN_CALLS}"] = (
        guided["median_calls"] <= GOAL_MEDIAN_CALLS
    )
    if "peer" in names:
        peer = summaries[("peer", "all")]
        checks["guided more correct than peer"] = guided["correct"] > peer["correct"]
        checks["guided no slower per question than peer (median s)"] = (
            guided["median_s"] <= peer["median_s"]
        )
    else:
        checks["peer ran (needed to compare)"] = False
    if set(splits) != set(SPLITS):
        print("  note: only " + ", ".join(splits) + " asked; the goal needs every half")
        checks["every half asked"] = False
    for text, met in checks.items():
        print(f"  {text:<52} {'met' if met else 'NOT MET'}")
    return all(checks.values())


# -- main -----------------------------------------------------------------------------------------


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--strategies",
        default=",".join(STRATEGIES),
        help="comma-separated, of plain, guided, peer (default: all three)",
    )
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="ask only the first N questions (the halves take turns)",
    )
    parser.add_argument(
        "--only", default=None, help="comma-separated question ids (d01,h12) or categories to ask"
    )
    parser.add_argument(
        "--max-iterations",
        type=int,
        default=6,
        help="model steps per question, the same for every strategy (default 6)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=240.0,
        help="seconds per question before it is cut off (default 240)",
    )
    parser.add_argument(
        "--load-timeout",
        type=float,
        default=600.0,
        help="seconds a daemon may take to load and warm up (default 600)",
    )
    parser.add_argument("--json", metavar="OUT", help="write the per-question records here")
    parser.add_argument("--verbose", action="store_true", help="print every answer")
    args = parser.parse_args(argv)  # fmt: skip
    names = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = sorted(set(names) - set(STRATEGIES))
    if unknown or not names:
        parser.error(f"unknown strategies: {', '.join(unknown) or '(none)'}")
    args.names = list(dict.fromkeys(names))
    if args.max_iterations < 1:
        parser.error("--max-iterations must be at least 1")
    return args


def select_questions(split: str, limit: int | None, only: str | None = None) -> list[Question]:
    """The questions of ``split`` (and of ``only``'s ids or categories), the halves taking
    turns, the first ``limit`` of them."""
    wanted = {w.strip() for w in only.split(",") if w.strip()} if only else None
    chosen = [q for q in QUESTIONS if wanted is None or q.id in wanted or q.category in wanted]
    halves = [[q for q in chosen if q.split == s] for s in SPLITS if split in (s, "all")]
    mixed = [q for turn in itertools.zip_longest(*halves) for q in turn if q is not None]
    return mixed[:limit]


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # so that the daemons are stopped on the way out


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    questions = select_questions(args.split, args.limit, args.only)
    workdir = Path(tempfile.mkdtemp(prefix="bench-comp-"))
    sysfs, proc = build_device(workdir)
    device = Device(sysfs, proc)
    print(f"{len(questions)} questions ({args.split}), strategies {', '.join(args.names)}, "
          f"max {args.max_iterations} iterations, fake device in {workdir}")  # fmt: skip
    runners: dict[str, DaemonStrategy | PeerStrategy] = {}
    skipped: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    try:
        for name in args.names:
            runner: DaemonStrategy | PeerStrategy = (
                PeerStrategy(device, args) if name == "peer"
                else DaemonStrategy(name, workdir, sysfs, proc, args)
            )  # fmt: skip
            try:
                runner.start()
            except StrategyUnsupported as exc:
                print(f"  SKIPPED {name}: {exc} (the daemon does not have this strategy yet)")
                skipped[name] = str(exc)
                runner.stop()
                continue
            except BaseException:
                runner.stop()
                raise
            runners[name] = runner
        order = list(runners)
        for index, question in enumerate(questions):
            # Rotate who goes first, so no strategy always follows another one's cache.
            turn = order[index % len(order) :] + order[: index % len(order)] if order else []
            for name in turn:
                device.tick()
                check = question.expect(device)
                answer = runners[name].ask(question.text)
                correct, misleads = judge(check, answer, question.text)
                record = {
                    "strategy": name,
                    "label": runners[name].label,
                    "id": question.id,
                    "split": question.split,
                    "category": question.category,
                    "question": question.text,
                    "expected": str(check),
                    "correct": correct,
                    "misleads": misleads,
                    **dataclasses.asdict(answer),
                }
                records.append(record)
                if args.json:
                    # As it goes, so that a run cut short still leaves what it asked.
                    Path(args.json).write_text(json.dumps({"partial": True, "records": records},
                                                          ensure_ascii=False))  # fmt: skip
                if args.verbose:
                    mark = "ok " if correct else "MIS" if misleads else "BAD"
                    shown = answer.answer if answer.answer is not None else f"({answer.outcome})"
                    print(f"  {mark} {name:<6} {question.id} {question.text!r} -> {shown!r} "
                          f"[expected {check}; {answer.model_calls} calls "
                          f"{'/'.join(answer.skills) or '-'}; {answer.seconds:.1f} s]"
                          + (f" misleads: {'; '.join(misleads)}" if misleads else ""))  # fmt: skip
            if not args.verbose:
                done = sum(r["correct"] for r in records if r["id"] == question.id)
                print(f"  {index + 1}/{len(questions)} {question.id}: {done}/{len(turn)} correct",
                      flush=True)  # fmt: skip
    finally:
        for runner in runners.values():
            runner.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    names = list(runners)
    splits = [s for s in SPLITS if any(q.split == s for q in questions)]
    summaries: dict[tuple[str, str], dict[str, Any]] = {}
    for name in names:
        mine = [r for r in records if r["strategy"] == name]
        for split in [*splits, "all"]:
            summaries[(name, split)] = summarize(
                [r for r in mine if split == "all" or r["split"] == split]
            )
    print_table(summaries, {name: runners[name].label for name in names})
    print_ratios(summaries, names)
    for name, why in skipped.items():
        print(f"  {name}: skipped: {why}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "max_iterations": args.max_iterations,
            "strategies": {name: runners[name].label for name in names},
            "skipped": skipped,
            "summaries": [{"strategy": n, "split": s, **v} for (n, s), v in summaries.items()],
            "records": records,
        }, indent=1, ensure_ascii=False))  # fmt: skip
        print(f"\nrecords written to {args.json}")
    met = verdict(summaries, names, splits)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
