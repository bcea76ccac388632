"""The language questions are read and answers are said in, as one value (docs/design.md,
"Grounding"): every word list, pattern, plural rule and sentence that the question's grammar,
grounding and the guidance read. English is its default instance,
:data:`~edge_agentd.agent.english.ENGLISH`; another is given where it is used
(``Grounding(language=...)``, ``Guidance(language=...)``, ``Question.parse(text, language)``).

Words of the language only, never of a skill: any registered skill is read by the same lists.
A language is compared by identity (``eq=False``), so it can key a cache.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True, eq=False)
class Language:
    """A language's words, patterns and sentences, as the grammar, grounding and the guidance
    read them."""

    # -- words: how a text is cut into them ---------------------------------------------------
    token: re.Pattern[str]
    """A word of a question as the grammar reads it (with its inner hyphens and apostrophes)."""
    letters: re.Pattern[str]
    """A run of letters: a word as the evidence's vocabulary holds it."""
    word: re.Pattern[str]
    """A word of letters, with an inner apostrophe ("isn't")."""
    name_word: re.Pattern[str]
    """A word of a label: letters and digits, with an inner apostrophe (``available_mib`` gives
    "available" and "mib")."""
    alnum: re.Pattern[str]
    """A run of letters and digits: the words of a text that may name something."""
    sentence_end: re.Pattern[str]
    possessive_end: re.Pattern[str]
    plural_suffix: str
    """How a plural ends: a word's forms are it, it without the suffix and it with it."""
    not_plural_suffix: tuple[str, ...]
    """Endings that look plural and are not ("glass", "status", "axis")."""
    negation_suffix: str
    """A verb's negation glued to it ("isn't"); empty where the language glues none."""
    comparative_suffix: str
    """How a comparison ends ("warmer")."""

    # -- reading a question: noun phrases and the questions that ask about them ---------------
    ends_phrase: frozenset[str]
    """Words that end a noun phrase: prepositions, verbs of a question, conjunctions, pronouns,
    and words that say when ("the pressure right now")."""
    when: frozenset[str]
    """Words before a noun that say when, not which: "the current time" asks for the time."""
    when_after: frozenset[str]
    """Words after a noun phrase that say when or where the asker is, not which thing: a
    fragment ("Humidity right now?") or "How loud is it here?" may end with them."""
    determiners: frozenset[str]
    auxiliaries: frozenset[str]
    state_verbs: frozenset[str]
    """The verbs a yes-or-no question about a state opens with ("Is the door open?")."""
    imperatives: frozenset[str]
    """A command's verbs the grammar reads a subject after ("Tell me the time.")."""
    recipients: frozenset[str]
    """Who a command is for, before what it asks ("me" of "Tell me the time.")."""
    what: frozenset[str]
    """The question words a what-question opens with ("what", "which")."""
    what_is: frozenset[str]
    """A what-question's opening glued to its verb ("what's")."""
    how: str
    how_many: frozenset[str]
    """What follows "how" in a question of an amount ("many", "much")."""
    do_forms: frozenset[str]
    """The auxiliaries after which the question's verb follows its subject ("What does the
    probe read?")."""
    be: str
    """The verb that follows the subject after a modal ("What will the date be?")."""
    of: str
    than: str
    it: str
    there: str
    place: frozenset[str]
    """Words that open a place after the subject ("the CO2 level in the bedroom")."""
    here: tuple[tuple[str, ...], ...]
    """Places that, after "the" or "this", mean the asker's own surroundings."""
    embedded: frozenset[str]
    """Words that open a yes-or-no question inside a sentence: "Tell me whether the door is
    open"."""
    question_words: frozenset[str]
    grammar: frozenset[str]
    """The grammar's own words: what a question says with them names no line of a result."""
    head_noun: re.Pattern[str]
    """The noun a what, which or how-many question opens with (its group 1)."""
    how_many_question: re.Pattern[str]
    and_: re.Pattern[str]
    """The "and" between a question's two parts, matched on its spaces collapsed."""
    paired: re.Pattern[str]
    """A word that pairs with the "and" after it ("between ... and"): one thing asked."""
    question_opening: re.Pattern[str]
    article: re.Pattern[str]
    request: re.Pattern[str]
    """What a request or a polite form opens with before the question it asks."""
    please: re.Pattern[str]
    """A "please" at either end: it says nothing of what is asked."""
    imperative_forms: re.Pattern[str]
    """A command's verb, with its "me" or "us": what follows is what it asks for."""

    # -- what an answer claims ----------------------------------------------------------------
    catalogue_heads: frozenset[str]
    """A question whose subject is one of these asks about the catalogue, which answers it."""
    catalogue_question: re.Pattern[str]
    indefinite: frozenset[str]
    """Heads that name no one thing: a question about them has no subject to find."""
    every: frozenset[str]
    """Words that ask about many things at once: no one sentence about one answers it."""
    negations: frozenset[str]
    quality_nouns: Mapping[str, tuple[str, ...]]
    """The nouns of the quantity a "how <adjective>" question asks about ("warm":
    temperature): words of the language, not of any skill."""

    # -- how a person says a result -----------------------------------------------------------
    unit_suffixes: Mapping[str, str]
    """A key's last word that says its number's unit (``charging_power_kw``), and how the unit
    is written after the value: units of measure, no skill's or key's name."""
    unit_words: frozenset[str]
    """The words the units above write: a rendered sentence may hold them."""
    unit_names: Mapping[str, str]
    """A question's word that names a unit ("kilowatts", "GB", "gallons", case folded), and
    the unit's symbol as a value is written with it: the units it may ask a value in
    (:func:`~edge_agentd.agent.units.asked_units`)."""
    unit_generic: frozenset[str]
    """A word that may stand before a unit's name and says only that a unit follows
    ("degrees" of "in degrees Fahrenheit")."""
    form_words: frozenset[str]
    """Words of a key that say how its value is written, not what it is (``uptime text``)."""
    count_keys: frozenset[str]
    """Keys that hold how many things there are: an answer only to a question of how many."""
    unit_keys: frozenset[str]
    """Keys that hold how another value is written, not a value of their own."""
    state_keys: frozenset[str]
    """Keys that hold what state their object is in."""
    asks_state: frozenset[str]
    """A question's words that ask what state a thing is in ("What is the washer doing?")."""
    yes: str
    no: str
    not_: str
    in_all: str
    """What a result line says after a list's count ("3 in all")."""
    lines_more: str
    """The last line of a result cut short (``{count}``: the lines left out)."""

    # -- the sentences the engine says ----------------------------------------------------------
    cannot_tell: str
    """How an answer that states no value begins: the honest way out."""
    own_words: frozenset[str]
    """Every word a rendered sentence may hold that is not a result's, a skill's or the
    question's: the engine's own, and the units'."""
    is_: str
    are: str
    said_value: str
    said_names: str
    said_count: tuple[str, str]
    """How many things there are: of any number but one, and of one ("The number of sensors is
    1.", where no rule of the language's makes a plural key singular)."""
    said_flag: str
    said_listing: str
    said_both: str
    said_of: str
    said_there: str
    said_none_there: str
    said_state: str
    said_not_state: str
    cannot_because: str
    cannot_asked: str
    cannot_how: str
    cannot_whether: str
    cannot_read: str
    """The reasons "I cannot tell" gives in its own words; ``{reads}`` and ``{says}`` are the
    one of :attr:`none_reads` and :attr:`none_says` that holds."""
    none_reads: tuple[str, str]
    """Who does not read what was asked: no skill here, and where results came, none of them
    ("no skill here reads", "no result gives"): a skill that was called and answered reads
    something, and saying that none does would be untrue."""
    none_says: tuple[str, str]
    """The same, for what no skill here, or no result, says ("no result says whether ...")."""

    # -- what an answer may write where the decoding is ours ----------------------------------
    answer_letters: str
    """The letters an answer may write between copied values, as a regular expression's class
    reads them (a range of each script the language writes)."""
    between: str
    """The punctuation an answer may write between copied values: no digit, no sign, nothing
    a JSON string escapes, no sentence's end."""

    # -- what a model is told, and scored after -------------------------------------------------
    rules: str
    """The grounding rules as the system prompt states them to a model that drives the loop."""
    value_absent: str
    no_evidence: str
    unknown_subject: str
    state_absent: str
    number_absent: str
    no_value_compared: str
    answer_examples: str
    """Worked answers about skills no registry has, with results as lines: the system prompt's
    last part under guidance."""
    skill_prompt: str
    """A candidate skill as the question is scored after it (empty, the content-free one)."""
    call_gets: str
    prompt_words: frozenset[str]
    """The words every candidate's prompt has from :attr:`skill_prompt`, not from the skill."""
    part_prompt: str
    part_questions: str
    answering_prompt: str
    content_free_question: str

    # -- comparing a value with a number the question gives ------------------------------------
    threshold: re.Pattern[str] | None = None
    """A comparison with a number ("warmer than 40 °C", "above 80 %"): its word before the
    language's "than" (group 1) or alone (group 2), the number (group 3) and the unit after it,
    if any (group 4). None: the language compares nothing, and such a question gets no engine
    sentence."""
    above: frozenset[str] = frozenset()
    """The comparison's words that ask whether a value is over the number."""
    below: frozenset[str] = frozenset()
    """Those that ask whether it is under."""
    itself: frozenset[str] = frozenset()
    """Words for the device the daemon runs on ("machine", "device"): a question's thing that
    is one of them names nothing the results must name."""
    one: frozenset[str] = frozenset()
    """Words that stand for the number one before a unit ("more than a day")."""
    be_forms: frozenset[str] = frozenset()
    """The forms of "to be" that are no auxiliary of a question ("been", "being")."""
    participle: re.Pattern[str] | None = None
    """A word that is a verb's participle ("opened"), as a question's last word."""
    when_asks: frozenset[str] = frozenset()
    """The question words that ask for a time ("when")."""
    since: frozenset[str] = frozenset()
    """Keys that say from when the state beside them holds."""
    said_since: tuple[str, str] = ("", "")
    """A state held since a time, of one thing and of several: ``label``, ``state``, ``value``."""
    said_which: str = "{it} is {compared}."
    """The answer to which of two is the more so: ``it``, ``compared`` ("colder")."""
    not_yes_or_no: str = ""
    """The feedback to an answer of a yes-or-no question that opens with neither yes, no nor
    the way out (``{yes}``, ``{no}``, ``{cannot}``); empty: no such rule."""
    said_none: str | None = None
    """That a list of things is empty (``label``: what the things are); None: never said."""
    said_by: str = "{it} is {difference} {compared}."
    """The answer to how much more so one of two is: ``it``, ``difference``, ``compared``."""
    difference_keys: frozenset[str] = frozenset()
    """Keys that hold by how much two values differ."""
    said_compared: str = "{answer}, {sentence}"
    """A value's sentence answering such a question, after its yes or no."""
    share: re.Pattern[str] | None = None
    """A comparison with a share ("more than half of", "over half"): its word before the
    language's "than" (group 1) or alone (group 2), and the share's (group 3, one of
    :attr:`shares`); None: the language reads no share."""
    shares: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """The percent each share's word names ("half": 50)."""
    participle_suffixes: tuple[str, ...] = ()
    """What a verb's participle ends with ("use" is "used"): a question's verb names a key
    written in its participle."""

    # -- whether a thing is there: "Does it have a pressure sensor?" ----------------------------
    having: frozenset[str] = frozenset()
    """The verbs a question asks whether something is there with ("Does this device have a
    pressure sensor?"); empty: the language reads existence only as "is there"."""
    presence: frozenset[str] = frozenset()
    """The states that say a thing is there ("Is a humidity sensor connected?")."""
    said_exists: str = "{answer}, there {be} {phrase}: {names}."
    """A listed thing that is what was asked, by its names ("Yes, there is a pressure sensor:
    bme280.")."""
    # -- amounts: a number and its unit, as a key, a question or an answer writes it ----------
    amount: re.Pattern[str] | None = None
    """A number and the word after it, glued, hyphened or spaced ("5min", "5-minute", "5
    minutes"): the number (group 1) and the word (group 2), an amount where the word names one
    of :attr:`unit_suffixes`. None: the language reads no amount, and no key is named by one."""
    said_amount_word: str = "{number} {unit}"
    """A key's amount said before a noun, its unit in words, one unit's worth ("5-minute")."""
    said_amount_sign: str = "{number} {unit}"
    """A key's amount said before a noun, its unit a sign ("2 GHz")."""
    said_amount_value: str | None = None
    """A number whose label opens with its unit in words ("days from today", "minutes
    left"), said as an amount ("It is 240 minutes left."): ``value``, ``label``. None: said
    as any other value."""
    time_units: frozenset[str] = frozenset()
    """The units a duration is written in, as :attr:`unit_suffixes` writes them."""
    asks_duration: frozenset[str] = frozenset()
    """The adjectives a "how" question asks a duration with ("How long has it been up?")."""

    articles: tuple[str, str, str] = ("", "", "")
    """The article before a singular thing said to be there, before a consonant and a vowel,
    and the vowels ("a", "an", "aeiou"); empty where the language writes none."""

    def forms(self, word: str) -> set[str]:
        """``word`` case folded, with its plural and singular."""
        folded = word.casefold()
        suffix = self.plural_suffix
        return {folded, folded.removesuffix(suffix), f"{folded}{suffix}"}

    def plural(self, word: str) -> bool:
        """Whether ``word`` reads as a plural (a verb after it agrees so)."""
        last = word.casefold()
        return (
            last.endswith(self.plural_suffix)
            and not last.endswith(self.not_plural_suffix)
            and len(last) > 3
        )

    def verb(self, label: tuple[str, ...] | list[str]) -> str:
        """The verb "to be" after ``label``: plural after a plural."""
        return self.are if label and self.plural(label[-1]) else self.is_

    def declines(self, answer: str) -> bool:
        """Whether ``answer`` says it cannot tell."""
        return answer.lstrip().startswith(self.cannot_tell)


def words(text: str) -> frozenset[str]:
    """The words of ``text``, split on white space: how a language's lists are written."""
    return frozenset(text.split())


__all__ = ["Language", "words"]
