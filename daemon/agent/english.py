"""The English the loop reads questions and answers by, in one place: its word lists and
patterns (docs/design.md, "Grounding"). Words of the language only, never of a skill: any
registered skill is read by the same lists."""

from __future__ import annotations

import re


def words(text: str) -> frozenset[str]:
    """The words of ``text``, split on white space."""
    return frozenset(text.split())


# -- noun phrases and the questions that ask about them -----------------------------------

ENDS_PHRASE = words(
    """in of on at over since until till from for by with about like between than as to into
    after before per during within without under above across through
    is are was were be been being am does do did has have had will would can could shall should
    may might must and or but nor so yet what which who whom whose when where why how
    it they them he she we you i me us him her there here
    now right today tonight tomorrow yesterday currently please"""
)
"""Words that end a noun phrase: prepositions, verbs of a question, conjunctions, pronouns, and
words that say when ("the pressure right now")."""

WHEN = words("current present latest last next previous")

WHEN_AFTER = words("now right today tonight tomorrow yesterday currently please here outside")
"""Words after a noun phrase that say when or where the asker is, not which thing: a fragment
("Humidity right now?") or "How loud is it here?" may end with them."""
"""Words before a noun that say when, not which: "the current time" asks for the time."""

DETERMINERS = words("the a an my your its our their this that these those all some any each every")

AUXILIARIES = words("is are was were does do did has have had will can could would should")

IMPERATIVES = words("tell give show list")

TOKEN = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")

SENTENCE_END = re.compile(r"[?!.](?:\s|$)")

POSSESSIVE_END = re.compile(r"['’]s$")

LETTERS = re.compile(r"[^\W\d_]+")

PLACE = words("in inside outside")
"""Words that open a place after the subject ("the CO2 level in the bedroom")."""

HERE = [["room"], ["house"], ["home"], ["flat"], ["apartment"]]
"""Places that, after "the" or "this", mean the asker's own surroundings."""

STATE_VERBS = words("is are was were")


# -- what an answer claims --------------------------------------------------------------------

CATALOGUE_HEADS = frozenset({"skill", "skills", "tool", "tools"})
"""A question whose subject is one of these asks about the catalogue, which answers it."""

CATALOGUE_QUESTION = re.compile(r"^\s*what\s+(?:else\s+)?can\s+you\s+(?:do|tell)\b", re.I)

INDEFINITE = frozenset(
    {"everything", "anything", "something", "nothing", "all", "one", "ones", "things", "thing"}
)
"""Heads that name no one thing: a question about them has no subject to find in the evidence."""

EVERY = frozenset({"everywhere", "everything", "every", "all", "each", "both"})
"""Words that ask about many things at once ("How warm is it everywhere?"): no one sentence
about one of them answers the question."""

WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")

NEGATIONS = frozenset({"not", "no", "never", "neither", "nor", "none", "nothing"})


# -- questions in two parts -----------------------------------------------------------------

AND = re.compile(r" ?,? and ", re.IGNORECASE)
"""Matched on the question with its spaces collapsed: on runs of spaces, a pattern with a space
class on both sides of its optional comma backtracks in cubic time (80 s for 4000 characters)."""

PAIRED = re.compile(r"\bbetween\b", re.IGNORECASE)
"""A word that pairs with the "and" after it: the "and" then joins the two things one question
relates ("the difference between the CPU and the probe"), unless a question opens after it.
Not "both": "What are both the CPU temperature and the humidity?" asks two things."""

QUESTION_OPENING = re.compile(
    r"(?:what|which|how|when|where|who|whose|why|is|are|was|were|does|do|did|can|will)\b",
    re.IGNORECASE,
)

ARTICLE = re.compile(r"(?:the|a|an)\s+", re.IGNORECASE)


# -- the noun a question opens with --------------------------------------------------------

DETERMINER_PATTERN = r"(?:the|a|an|my|your|its|our|their|this|that)\s+"

POSSESSIVE_PATTERN = r"[^\W\d_]+['’]s\s+"

HEAD_NOUN = re.compile(
    r"^\s*(?:"
    # After a verb, a determiner or a possessive may come: "What is today's date?".
    rf"(?:what|which)(?:['’]s|\s+(?:is|are|was|were|will\s+be))\s+(?:{DETERMINER_PATTERN})?"
    rf"(?:{POSSESSIVE_PATTERN})?"
    # With a modal, "be" comes after the noun: "What will the date be in 30 days?".
    rf"|(?:what|which)\s+(?:will|would|could|might|should)\s+(?:{DETERMINER_PATTERN})?"
    r"(?=[^\W\d_]+\s+be\b)"
    # Straight after "what", "X's" is "X is" ("What time's it?"): no possessive there.
    rf"|(?:what|which)\s+(?:{DETERMINER_PATTERN}(?:{POSSESSIVE_PATTERN})?)?"
    rf"|how\s+(?:many|much)\s+(?:of\s+)?(?:{DETERMINER_PATTERN}(?:{POSSESSIVE_PATTERN})?)?"
    r")(?!(?:the|a|an|is|are|was|were|will|would|could|might|should|of|it)\b)"
    r"([^\W\d_]+)\b",
    re.IGNORECASE,
)
"""The noun a what, which or how-many question opens with: "What date ...", "Which sensors
...", "What is the humidity ...", "How many hours ...", "What is today's date?" (a possessive
stands where an article would), "What will the date be ...?". "What does the probe read?" has
none: "does" names no line."""

HOW_MANY = re.compile(r"^\s*how\s+many\b", re.IGNORECASE)


# -- requests, polite forms and fragments: questions in other shapes ---------------------------

REQUEST = re.compile(
    r"^\s*(?:(?:please|kindly)\s*,?\s+)?"
    r"(?:would\s+you\s+mind\s+"
    r"|(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+)?"
    r"|(?:i['’]d|i\s+would|we['’]d|we\s+would)\s+like\s+(?:you\s+)?to\s+"
    r"|(?:i|we)\s+(?:want|need|wish)\s+(?:you\s+)?to\s+"
    r"|(?:do|does|did)\s+(?:you|anyone)\s+(?:happen\s+to\s+)?"
    r"|i\s+(?:wonder|wondered|was\s+wondering)\s+"
    r"|let\s+me\s+"
    r")",
    re.IGNORECASE,
)
"""What a request or a polite form opens with before the question it asks: "Could you check
the garage temperature?", "Would you mind telling me ...", "I'd like to know ...", "Do you know
...", "I wonder ...". Cut off, what is left reads as a command or a question."""

PLEASE = re.compile(r"(?:^\s*(?:please|kindly)\b\s*,?\s*|\s*,?\s*\bplease\s*(?=[?!.]?\s*$))", re.I)
"""A "please" at either end: it says nothing of what is asked."""

IMPERATIVE_FORMS = re.compile(
    r"^(tell|telling|give|giving|show|showing|list|listing|read|reading|check|checking|get|"
    r"getting|find|finding|report|reporting|say|saying|know|knowing|see|seeing|measure|"
    r"measuring|look|looking)\b(?:\s+(?:me|us))?(?:\s+(?:up|at|out))?\s*",
    re.IGNORECASE,
)
"""A command's verb (as "would you mind" takes it, too), with its "me" or "us": what follows is
what it asks for, or a clause ("whether ...", "what ... is")."""

EMBEDDED = words("whether if")
QUESTION_WORDS = words("what which who whom whose when where why how")
"""Words that open a yes-or-no question inside a sentence: "Tell me whether the door is open"."""

GRAMMAR = (
    ENDS_PHRASE | DETERMINERS | AUXILIARIES | WHEN | WHEN_AFTER | QUESTION_WORDS | IMPERATIVES
) | words("much many tell telling give show list read check say know like mind")
"""The grammar's own words: what a question says with them names no line of a result."""

# -- how a person says a result: units a key ends with -----------------------------------------

UNIT_SUFFIXES: dict[str, str] = {
    "percent": "%", "pct": "%", "perc": "%",
    "c": "°C", "celsius": "°C", "degc": "°C", "f": "°F", "fahrenheit": "°F", "degf": "°F",
    "kelvin": "K",
    "kw": "kW", "w": "W", "mw": "mW", "watts": "W", "kwh": "kWh", "wh": "Wh",
    "v": "V", "mv": "mV", "volts": "V", "ma": "mA", "amps": "A",
    "kib": "KiB", "mib": "MiB", "gib": "GiB", "tib": "TiB",
    "kb": "kB", "mb": "MB", "gb": "GB", "tb": "TB", "bytes": "bytes",
    "hz": "Hz", "khz": "kHz", "mhz": "MHz", "ghz": "GHz", "rpm": "rpm",
    "hpa": "hPa", "kpa": "kPa", "pa": "Pa", "mbar": "mbar", "bar": "bar", "psi": "psi",
    "mm": "mm", "cm": "cm", "km": "km", "kmh": "km/h", "mph": "mph", "ms": "ms",
    "l": "L", "ml": "mL", "litres": "L", "liters": "L",
    "lux": "lx", "lx": "lx", "db": "dB", "dba": "dBA", "ppm": "ppm", "ppb": "ppb",
    "kg": "kg",
    "s": "seconds", "sec": "seconds", "secs": "seconds", "seconds": "seconds",
    "min": "minutes", "mins": "minutes", "minutes": "minutes",
    "h": "hours", "hr": "hours", "hrs": "hours", "hours": "hours", "days": "days",
}
"""A key's last word that says its number's unit (``charging_power_kw``, ``available_mib``,
``uptime_s``), and how the unit is written after the value: units of measure, no skill's or
key's name. A number's key ending in one is said "The charging power is 7.2 kW.", the unit
after the value and not glued to the name; a duration in its unit's word ("3600 seconds": the
number is the result's, so no other is written). Only where the key has a word before it: a key
``s`` or ``min`` alone names what it is."""

UNIT_WORDS = frozenset(
    w.casefold() for unit in UNIT_SUFFIXES.values() for w in LETTERS.findall(unit)
)
"""The words the units above write: a rendered sentence may hold them (render.TEMPLATE_WORDS)."""

FORM_WORDS = words("text value display formatted human readable string str pretty")
"""Words of a key that say how its value is written, not what it is (``uptime text``,
``humidity_value``): a label says the thing without them."""

COUNT_KEYS = words("count number total")
"""Keys that hold how many things there are: an answer only to a question of how many."""

UNIT_KEYS = words("unit units")
"""Keys that hold how another value is written, not a value of their own."""

STATE_KEYS = words("state status position mode condition")
"""Keys that, by the language's convention, hold what state their object is in: the text of
one answers a yes-or-no question about the object when no line names the state asked."""

YES, NO, NOT = "Yes", "No", "not"
"""How a person answers a yes-or-no question, and denies a state."""


# -- what a "how <adjective>" question asks for -----------------------------------------------

QUALITY_NOUNS: dict[str, tuple[str, ...]] = {
    "warm": ("temperature",), "hot": ("temperature",), "cold": ("temperature",),
    "cool": ("temperature",), "chilly": ("temperature",), "humid": ("humidity",),
    "damp": ("humidity", "moisture"), "moist": ("moisture",), "wet": ("moisture",),
    "dry": ("humidity", "moisture"), "loud": ("loudness", "noise", "sound"),
    "noisy": ("noise", "loudness", "sound"), "quiet": ("noise", "loudness", "sound"),
    "bright": ("light", "brightness", "illuminance"), "dark": ("light", "brightness"),
    "full": ("level", "fill"), "empty": ("level", "fill"), "heavy": ("weight",),
    "fast": ("speed",), "windy": ("wind",), "busy": ("load", "usage"), "old": ("age",),
    "big": ("size",), "large": ("size",), "long": ("length", "duration"),
    "high": ("height", "level"), "deep": ("depth",), "far": ("distance",),
    "strong": ("strength",), "charged": ("charge",),
}  # fmt: skip
"""The nouns of the quantity a "how <adjective>" question asks about: "How warm is it?" asks
the temperature, as a person reading "temperature: 21.5 °C" knows. Words of the language, not
of any skill: a result names its quantity in any of them, or in the adjective itself."""
