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
