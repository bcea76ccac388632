"""How bench_grounding.py scores an answer: bench_competence's strict scoring, plus states and
claims.

An answer is **misleading** when bench_competence finds it so (a number, unit, date, weekday or
name that neither the skill results nor the question hold), and also when it

- names a state no result holds ("open" when the door's result says ``closed``; a state word
  the answer negates, "not open", claims nothing), or answers a yes/no question about a state
  with the wrong yes or no;
- makes a claim no result holds: a judgement ("overheating", "getting empty", "dry",
  "normal", "too high", "full") is in no reading, so an answer that adds one states more than
  its evidence; the question's words do not count here ("How full is the tank?" asks, and
  "The tank is full." for 45.8 % claims);
- answers a question no skill answers with anything but "I cannot tell".

Apart from right and misleading, an answer is one **a person would write** (issue 41) unless
``person_faults`` finds one of these (each fault names what it found):

- **a raw key**:
  - a word with ``_`` in it ("available_mib", "energy_today"), unless it is a name the device
    gives a thing (a string value of a result, such as the sensor ``thermal_zone0``) or a
    word of the question;
  - a unit glued to a name: a unit abbreviation that key names end in (``kw``, ``kwh``,
    ``mib``, ``gb``, ``percent``, ``ppm``, ``min`` ... see ``GLUED_UNITS``) right after a word
    rather than after a number ("The charging power kw is 7.2.", "The memory available mib
    is 2587.9.", "The state of charge percent is 64."), unless that word is one a person puts
    before a unit ("in percent", "how many MiB", "a few min", "ten percent":
    ``BEFORE_A_UNIT`` and number words); a unit written out in full (hours, days, seconds,
    minutes) only when a name before it is then the sentence's subject ("The uptime hours is
    127.2.");
  - a flag's raw value: "is true", "is false", ": null" ("The plugged in is true.");
  - a result's field as the thing a sentence is about: "The state is closed.", "The text is
    3 d 4 h 0 min.", "The value is ...", "The unit is ...", "The quantity is ..." at a
    sentence's start (a person names the door, the uptime, the sensor);
- **a yes-or-no question not answered yes or no**: the question is marked ``yes_no`` (set by
  hand where it is written) and the answer does not start "Yes", "No" or "I cannot tell"
  ("I can't tell" too).

An answer that is not ``answered`` has no faults here (it is already wrong).

The word lists are the scorer's, a reader's; the agent under test never sees them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any

from scripts.bench.bench_competence import Check, Number, judge
from scripts.bench.competence_scoring import Expected, says_cannot_tell

STATES: dict[str, str] = {
    "open": "open", "opened": "open", "closed": "closed", "shut": "closed",
    "running": "running", "finished": "finished", "done": "finished", "complete": "finished",
    "completed": "finished", "idle": "idle", "locked": "locked", "unlocked": "unlocked",
}  # fmt: skip
"""A state word and the state it names."""
CLAIMS = (
    r"overheat\w*", r"too (?:hot|cold|high|low|warm|dry|wet|humid)", r"hot", r"cold", r"high",
    r"low", r"empty", r"dry", r"wet", r"dangerous", r"unsafe", r"safe", r"healthy",
    r"unhealthy", r"poor", r"good", r"bad", r"normal", r"fine", r"excellent", r"critical",
    r"getting \w+", r"needs?", r"should", r"running out", r"nearly", r"almost", r"plenty",
)  # fmt: skip
"""Judgements a reading does not make by itself. ``full`` counts only without a percentage
before it ("45.8 % full" states a value)."""
_CLAIM = re.compile(r"\b(" + "|".join(CLAIMS) + r")\b")
_FULL = re.compile(r"(?<!%)(?<!% )(?<!percent )\bfull\b")
_NEGATION = re.compile(r"\b(?:not|no|never|isn't|isnt|aren't|wasn't|whether|if|n't)\W+(?:\w+\W+)?$")
_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> list[tuple[str, int]]:
    return [(m.group(), m.start()) for m in _WORD.finditer(text.lower())]


def states_named(text: str) -> set[str]:
    """The states ``text`` asserts: its state words, less those negated or asked about."""
    low = text.lower().replace("’", "'")
    named = set()
    for word, start in _words(low):
        if word in STATES and not _NEGATION.search(low[max(0, start - 30) : start]):
            named.add(STATES[word])
    return named


def _yes_no(answer: str) -> bool | None:
    first = _WORD.match(answer.strip().lower())
    if first is None:
        return None
    return {"yes": True, "no": False}.get(first.group())


@dataclasses.dataclass
class State(Check):
    """The answer names the ``state``, or, asked whether it is ``asked``, negates that
    ("No, it is not open" for ``closed``); a leading yes or no must be right."""

    state: str
    asked: str | None = None

    def __call__(self, answer: str) -> bool:
        yes = _yes_no(answer)
        if self.asked is not None and yes is not None and yes != (self.asked == self.state):
            return False
        if self.state in states_named(answer):
            return True
        low = answer.lower()
        return (
            self.asked is not None
            and self.asked != self.state
            and (f"not {self.asked}" in low or f"n't {self.asked}" in low)
        )

    def __str__(self) -> str:
        return self.state + (f" (asked: {self.asked}?)" if self.asked else "")


@dataclasses.dataclass
class YesNo(Check):
    """A yes-or-no question whose answer is no state word (a flag, a threshold, a comparison):
    right when the answer starts with the right "Yes" or "No"; the wrong one misleads."""

    yes: bool

    def __call__(self, answer: str) -> bool:
        return _yes_no(answer) == self.yes

    def __str__(self) -> str:
        return "yes" if self.yes else "no"


@dataclasses.dataclass
class Since(Check):
    """Since when: the clock time (to the minute, or one off), or how long ago, in minutes
    (within 2) or hours (as the answer rounds them)."""

    moment: dt.datetime
    now: dt.datetime

    def _ago_minutes(self) -> float:
        return (self.now - self.moment).total_seconds() / 60

    def __call__(self, answer: str) -> bool:
        for h, m in re.findall(r"\b(\d{1,2}):(\d{2})\b", answer):
            at = int(h) * 60 + int(m)
            if abs(at - (self.moment.hour * 60 + self.moment.minute)) <= 1:
                return True
        minutes = self._ago_minutes()
        return Number([minutes], whole=True, tolerance=2)(answer) or Number([minutes / 60])(answer)

    def expected(self) -> Expected:
        minutes = self._ago_minutes()
        values: list[tuple[float, str | None]] = [
            (minutes, "min"), (round(minutes), "min"), (minutes / 60, "h"),
            (int(minutes // 60), "h"), (round(minutes % 60), "min"),
        ]  # fmt: skip
        values += [(self.moment.hour, None), (self.moment.minute, None)]
        return Expected(values=values)

    def __str__(self) -> str:
        return f"since {self.moment:%H:%M} ({self._ago_minutes():.0f} min ago)"


@dataclasses.dataclass
class NoneFound(Check):
    """The answer says there are none (no sensors on a machine without any)."""

    def __call__(self, answer: str) -> bool:
        low = answer.lower()
        return bool(re.search(r"\b(no|none|zero|0|not any|any)\b", low)) and not re.search(
            r"\b[1-9]\d*\b", low
        )

    def expected(self) -> Expected:
        return Expected(values=[(0, None)])

    def __str__(self) -> str:
        return "none"


def _results_text(results: list[Any]) -> str:
    text: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                text.append(str(key))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif node is not None:
            text.append(str(node))

    walk(results)
    return " ".join(text).lower()


def _right_yes(check: Check) -> bool | None:
    """The right yes or no to a yes-or-no check (None: the check is no such question)."""
    if isinstance(check, YesNo):
        return check.yes
    if isinstance(check, State) and check.asked is not None:
        return check.asked == check.state
    return None


_DECLINES = re.compile(r"can't|cannot|can not|unable|don't know|do not know|not sure")


def judge_grounded(check: Check, answer: Any, question: str) -> tuple[bool, list[str]]:
    """(strictly right, what misleads), by bench_competence's judge and the rules above."""
    right, misleads = judge(check, answer, question)
    if answer.outcome != "answered" or answer.answer is None:
        return False, []
    text = answer.answer
    cannot_tell = says_cannot_tell(text)
    if type(check).__name__ == "CannotTell":
        if not cannot_tell:
            misleads.append("answers a question no skill answers")
        return right and not misleads, misleads
    if cannot_tell and (not isinstance(check, NoneFound) or _DECLINES.search(text.lower())):
        # Wrong, not misleading: it claims nothing. "No sensors are connected." says none; an
        # answer that cannot tell does not, whatever its reason's words ("no skill here reads
        # the sensors" beside an empty listing).
        return False, misleads
    right_yes = _right_yes(check)
    if right_yes is not None:
        yes = _yes_no(text)
        if yes is not None and yes != right_yes:
            misleads.append(f"says {'yes' if yes else 'no'}")
    misleads = list(dict.fromkeys([*misleads, *claims_misleading(text, answer.results)]))
    return right and not misleads, misleads


def claims_misleading(text: str, results: list[Any]) -> list[str]:
    """The states and claims of an answer that no result holds (an answer that says it cannot
    tell claims nothing)."""
    if says_cannot_tell(text):
        return []
    held = _results_text(results)
    found = [f"state {state!r}" for state in sorted(states_named(text) - states_named(held))]
    low = text.lower()
    found += [f"claim {m.group()!r}" for m in _CLAIM.finditer(low) if m.group() not in held]
    if _FULL.search(low) and "full" not in held:
        found.append("claim 'full'")
    return found


def rejudge(record: dict[str, Any]) -> dict[str, Any]:
    """A saved record judged again by today's state and claim rules (the rest of its verdict,
    which needs the expected values of the moment it was asked, stands)."""
    if record.get("outcome") != "answered" or not record.get("answer"):
        return record
    if record.get("cannot_tell_expected"):
        return record
    kept = [m for m in record["misleads"] if not m.startswith(("state ", "claim "))]
    claims = claims_misleading(record["answer"], record.get("results") or [])
    misleads = list(dict.fromkeys([*kept, *claims]))
    return {**record, "misleads": misleads, "correct": record["correct"] and not misleads}


# -- answers a person would write -----------------------------------------------------------------

GLUED_UNITS = (
    "kw", "kwh", "wh", "mw", "mib", "gib", "kib", "mb", "gb", "kb", "hpa", "kpa", "ppm",
    "percent", "pct", "degc", "degf", "ms", "min", "mins", "secs", "hrs", "lx",
)  # fmt: skip
"""Unit words that key names end in (``power_kw``, ``available_mib``, ``used_percent``)."""
SPELLED_UNITS = ("hours", "days", "seconds", "minutes")
"""Units written out: glued only when the name before them is a sentence's subject."""
BEFORE_A_UNIT = frozenset({
    "in", "of", "per", "a", "an", "the", "many", "much", "what", "as", "by", "to", "and", "or",
    "than", "few", "several", "into", "from", "some", "more", "less", "fewer", "whole", "any",
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "half", "dozen",
    "zero", "no", "those", "these", "which",
})  # fmt: skip
"""Words a person writes right before a unit ("in percent", "how many MiB", "ten percent")."""
_SNAKE = re.compile(r"(?<![\w-])[a-z0-9]+(?:_[a-z0-9]+)+(?![\w-])")
_GLUED = re.compile(r"\b([a-z]+)\s+(" + "|".join(GLUED_UNITS) + r")\b")
_SPELLED = re.compile(
    r"\b([a-z]+)\s+(" + "|".join(SPELLED_UNITS) + r")\s+(?:is|are|was|were|=|:)(?=\s|$)"
)
_RAW_FLAG = re.compile(r"(?:\b(?:is|are|was|were)|[=:])\s*(true|false|null)\b")
_FIELD_SUBJECT = re.compile(
    r"(?:^|[.!?;]\s+)the (state|text|value|unit|quantity)s? (?:is|are|was|were)\b"
)
YES_NO_FAULT = "a yes-or-no question not answered yes, no or 'I cannot tell'"
_YES_NO_START = re.compile(r"(?:yes|no|i (?:cannot|can't|can not) tell)\b")


def _result_strings(results: list[Any]) -> set[str]:
    """The string values of the results (names the device gives things), lower-cased."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            found.update(_SNAKE.findall(node.lower()))

    walk(results)
    return found


def raw_keys(text: str, results: list[Any] | None = None, question: str = "") -> list[str]:
    """What in ``text`` reads as a raw key rather than as a person's words (see the module's
    rules); empty when nothing does."""
    low = text.lower().replace("’", "'")
    found: list[str] = []
    names = _result_strings(results or []) | set(_SNAKE.findall(question.lower()))
    found += [f"raw key {w!r}" for w in _SNAKE.findall(low) if w not in names]
    for pattern in (_GLUED, _SPELLED):
        for match in pattern.finditer(low):
            before = match.group(1)
            if before not in BEFORE_A_UNIT:
                found.append(f"unit glued to a name {match.group(1) + ' ' + match.group(2)!r}")
    found += [f"raw flag {m.group(1)!r}" for m in _RAW_FLAG.finditer(low)]
    found += [f"field as the subject {m.group(1)!r}" for m in _FIELD_SUBJECT.finditer(low)]
    return list(dict.fromkeys(found))


def answers_yes_or_no(text: str) -> bool:
    """Whether ``text`` starts "Yes", "No" or "I cannot tell" (quotes and marks before it
    aside)."""
    low = text.lower().replace("’", "'").lstrip(" \t\n\"'*_-")
    return bool(_YES_NO_START.match(low))


def person_faults(answer: Any, question: str, *, yes_no: bool) -> list[str]:
    """Why ``answer`` (an ``Answer`` or a saved record's fields) is not one a person would
    write: its raw keys, and a yes-or-no question not answered yes or no. Empty: it is one."""
    outcome = answer.get("outcome") if isinstance(answer, dict) else answer.outcome
    text = answer.get("answer") if isinstance(answer, dict) else answer.answer
    results = (answer.get("results") if isinstance(answer, dict) else answer.results) or []
    if outcome != "answered" or not text:
        return []
    faults = raw_keys(text, results, question)
    if yes_no and not answers_yes_or_no(text):
        faults.append(YES_NO_FAULT)
    return faults
