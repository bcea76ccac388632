"""English, the language the daemon reads questions and says answers in: the one instance of
:class:`~edge_agentd.agent.language.Language` every reader takes by default (docs/design.md,
"Grounding"). Words of the language only, never of a skill: any registered skill is read by the
same lists. Each field is described where the class declares it."""

from __future__ import annotations

import re
from types import MappingProxyType

from edge_agentd.agent.englishunits import UNIT_NAMES, UNIT_SUFFIXES, UNIT_WORDS
from edge_agentd.agent.language import Language, words

_ENDS_PHRASE = words(
    """in of on at over since until till from for by with about like between than as to into
    after before per during within without under above across through below beneath beyond
    beside behind near around against toward towards upon via along among versus
    is are was were be been being am does do did has have had will would can could shall should
    may might must and or but nor so yet what which who whom whose when where why how
    it they them he she we you i me us him her there here
    now right today tonight tomorrow yesterday currently please"""
)
_WHEN = words("current present latest last next previous")
_WHEN_AFTER = words("now right today tonight tomorrow yesterday currently please here outside")
_DETERMINERS = words("the a an my your its our their this that these those all some any each every")
_AUXILIARIES = words("is are was were does do did has have had will can could would should")
_IMPERATIVES = words("tell give show list")
_QUESTION_WORDS = words("what which who whom whose when where why how")
_LETTERS = re.compile(r"[^\W\d_]+")

_DETERMINER = r"(?:the|a|an|my|your|its|our|their|this|that)\s+"
_POSSESSIVE = r"[^\W\d_]+['’]s\s+"
_HEAD_NOUN = re.compile(
    r"^\s*(?:"
    # After a verb, a determiner or a possessive may come: "What is today's date?".
    rf"(?:what|which)(?:['’]s|\s+(?:is|are|was|were|will\s+be))\s+(?:{_DETERMINER})?"
    rf"(?:{_POSSESSIVE})?"
    # With a modal, "be" comes after the noun: "What will the date be in 30 days?".
    rf"|(?:what|which)\s+(?:will|would|could|might|should)\s+(?:{_DETERMINER})?"
    r"(?=[^\W\d_]+\s+be\b)"
    # Straight after "what", "X's" is "X is" ("What time's it?"): no possessive there.
    rf"|(?:what|which)\s+(?:{_DETERMINER}(?:{_POSSESSIVE})?)?"
    rf"|how\s+(?:many|much)\s+(?:of\s+)?(?:{_DETERMINER}(?:{_POSSESSIVE})?)?"
    r")(?!(?:the|a|an|is|are|was|were|will|would|could|might|should|of|it)\b)"
    r"([^\W\d_]+)\b",
    re.IGNORECASE,
)

_REQUEST = re.compile(
    r"^\s*(?:(?:please|kindly)\s*,?\s+)?"
    r"(?:would\s+you\s+mind\s+"
    r"|(?:would|could|will)\s+you\s+be\s+(?:so\s+kind\s+as|kind\s+enough)\s+to\s+"
    r"|(?:could|can|would|will)\s+you\s+(?:please\s+|kindly\s+)?"
    r"|(?:i['’]d|i\s+would|we['’]d|we\s+would)\s+like\s+(?:you\s+)?to\s+"
    r"|(?:i|we)\s+(?:want|need|wish)\s+(?:you\s+)?to\s+"
    r"|(?:do|does|did)\s+(?:you|anyone)\s+(?:happen\s+to\s+)?"
    r"|(?:could|can|may|might)\s+(?:i|we)\s+(?:please\s+)?(?:have|get|see|know)\s+"
    r"|i\s+(?:wonder|wondered|was\s+wondering)\s+"
    r"|let\s+me\s+"
    r")",
    re.IGNORECASE,
)

_IMPERATIVE_FORMS = re.compile(
    r"^(tell|telling|give|giving|show|showing|list|listing|read|reading|check|checking|get|"
    r"getting|find|finding|report|reporting|say|saying|know|knowing|see|seeing|measure|"
    r"measuring|look|looking)\b(?:\s+(?:me|us))?(?:\s+(?:up|at|out))?\s*",
    re.IGNORECASE,
)

_QUALITY_NOUNS: dict[str, tuple[str, ...]] = {
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

ENGLISH = Language(
    token=re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?"),
    letters=_LETTERS,
    word=re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?"),
    name_word=re.compile(r"[^\W_]+(?:['’][^\W_]+)?"),
    alnum=re.compile(r"[^\W_]+"),
    sentence_end=re.compile(r"[?!.](?:\s|$)"),
    possessive_end=re.compile(r"['’]s$"),
    plural_suffix="s",
    not_plural_suffix=("ss", "us", "is"),
    negation_suffix="n't",
    comparative_suffix="er",
    ends_phrase=_ENDS_PHRASE,
    when=_WHEN,
    when_after=_WHEN_AFTER,
    determiners=_DETERMINERS,
    auxiliaries=_AUXILIARIES,
    state_verbs=words("is are was were"),
    imperatives=_IMPERATIVES,
    recipients=words("me us"),
    what=words("what which"),
    what_is=words("what's what’s"),
    how="how",
    how_many=words("many much"),
    do_forms=words("does do did"),
    # The single words the grammar reads a question's shape by.
    be="be",
    of="of",
    than="than",
    it="it",
    there="there",
    place=words("in inside outside"),
    here=(("room",), ("house",), ("home",), ("flat",), ("apartment",)),
    embedded=words("whether if"),
    question_words=_QUESTION_WORDS,
    grammar=(
        _ENDS_PHRASE
        | _DETERMINERS
        | _AUXILIARIES
        | _WHEN
        | _WHEN_AFTER
        | _QUESTION_WORDS
        | _IMPERATIVES
        | words("much many tell telling give show list read check say know like mind")
    ),
    head_noun=_HEAD_NOUN,
    how_many_question=re.compile(r"^\s*how\s+many\b", re.IGNORECASE),
    # Matched on the question with its spaces collapsed: on runs of spaces, a pattern with a
    # space class on both sides of its optional comma backtracks in cubic time.
    and_=re.compile(r" ?,? and ", re.IGNORECASE),
    # Not "both": "What are both the CPU temperature and the humidity?" asks two things.
    paired=re.compile(r"\bbetween\b", re.IGNORECASE),
    question_opening=re.compile(
        r"(?:what|which|how|when|where|who|whose|why|is|are|was|were|does|do|did|can|will)\b",
        re.IGNORECASE,
    ),
    article=re.compile(r"(?:the|a|an)\s+", re.IGNORECASE),
    request=_REQUEST,
    please=re.compile(
        r"(?:^\s*(?:please|kindly)\b\s*,?\s*|\s*,?\s*\bplease\s*(?=[?!.]?\s*$))", re.I
    ),
    imperative_forms=_IMPERATIVE_FORMS,
    catalogue_heads=words("skill skills tool tools"),
    catalogue_question=re.compile(r"^\s*what\s+(?:else\s+)?can\s+you\s+(?:do|tell)\b", re.I),
    indefinite=words("everything anything something nothing all one ones things thing"),
    every=words("everywhere everything every all each both"),
    negations=words("not no never neither nor none nothing"),
    quality_nouns=MappingProxyType(_QUALITY_NOUNS),
    unit_suffixes=MappingProxyType(UNIT_SUFFIXES),
    unit_words=UNIT_WORDS,
    unit_names=MappingProxyType(UNIT_NAMES),
    unit_generic=words("degrees degree"),
    form_words=words("text value display formatted human readable string str pretty"),
    count_keys=words("count number total"),
    unit_keys=words("unit units"),
    state_keys=words("state status position mode condition"),
    asks_state=words("doing"),
    yes="Yes",
    no="No",
    not_="not",
    in_all="in all",
    lines_more="... and {count} lines more",
    cannot_tell="I cannot tell",
    own_words=words(
        "the is are there in all and no result says i cannot tell what was asked skill here "
        "reads gives whether of yes not a an it"
    )
    | UNIT_WORDS,
    is_="is",
    are="are",
    said_value="The {label} {be} {value}.",
    said_names="The {label} {be} {names}.",
    said_count=("There are {count} {label}.", "The number of {label} is {count}."),
    said_flag="{label}: {answer}.",
    said_listing="{names} and {last}",
    said_both="{first} and {second}",
    said_of="{phrase} of the {of}",
    said_there="{answer}, there {be} {phrase}.",
    said_none_there="{answer}, there {be} no {phrase}.",
    said_state="{answer}, the {phrase} {be} {state}.",
    said_not_state="{answer}, the {phrase} {be} not {state}.",
    cannot_because="{cannot}: {reason}.",
    cannot_asked="{cannot}: {says} what was asked.",
    cannot_how="{cannot}: {says} how {phrase} it is.",
    cannot_whether="{cannot}: {says} whether the {phrase} {be} {state}.",
    cannot_read="{cannot}: {reads} the {phrase}.",
    none_reads=("no skill here reads", "no result gives"),
    none_says=("no skill here says", "no result says"),
    # The letters of the Latin, Greek and Cyrillic scripts, each range written as its letters
    # (a grammar's class reads no escape): no digit, sign or punctuation among them.
    answer_letters="a-zA-ZÀ-ÖØ-öø-ɏΆΈ-ώЀ-ҁҊ-ӿ",
    between=" ,;:'()/&",
    rules=(
        "Rules for answers. Until a skill has returned a result, the only answer you may give "
        'begins "I cannot tell", so call a skill that can answer first. Every value in an answer '
        "(a number, a unit, a date, a state) must be written in a result or in the question: "
        'copy it as written. If no result says what was asked, answer "I cannot tell" and why.'
    ),
    value_absent=(
        "Your answer states {value!r}, which no skill result and not the question holds. "
        "State only values copied from a result as it writes them, call a skill that gives "
        'the value, or answer "{cannot}" and why.'
    ),
    no_evidence=(
        "No skill has returned a result in this run, so nothing supports an answer yet. "
        "Call a skill that can answer the question; if no skill can, answer "
        '"{cannot}" and why.'
    ),
    unknown_subject=(
        "No skill called and no result names {subject!r}, which the question asks about. "
        'Call a skill that gives it, or answer "{cannot}" and why.'
    ),
    state_absent=(
        "Your answer says it is {said!r}, and no result says so. State what the result "
        'says, as it writes it, or answer "{cannot}" and why.'
    ),
    number_absent=(
        "The question asks about {number}, which no call made and no result states: its "
        'results are of something else. Call a skill with it, or answer "{cannot}" and why.'
    ),
    no_value_compared=(
        "The question compares a value with a number: say the value the result gives, as it "
        'writes it, after "Yes" or "No", or answer "{cannot}" and why.'
    ),
    not_yes_or_no=(
        'The question asks yes or no: begin the answer with "{yes}" or "{no}" and what the '
        'result says, or answer "{cannot}" and why.'
    ),
    answer_examples=(
        "How answers read. After a result, answer the question in one short sentence, with the "
        "value and unit of the line the question asks about, copied as the result writes it. "
        "When no line holds what was asked, or no skill gives it, say you cannot tell:\n"
        "Result of battery_state:\npercent: 87\ncharging: false\nminutes_left: 240\n"
        "The question was: How long will the battery last?\n"
        '{"final_answer": "The battery will last 240 minutes."}\n'
        "Result of garden_station:\nreadings: 2 in all\nreadings rain: 3.5 mm\n"
        "readings wind: 12.0 km/h\n"
        "The question was: What is the wind speed?\n"
        '{"final_answer": "The wind speed is 12.0 km/h."}\n'
        "The question was: How much snow fell?\n"
        '{"final_answer": "I cannot tell: no result says how much snow fell."}'
    ),
    skill_prompt="The skill {signature}: {description}{extra}\nQuestions it answers:{listed}\n-",
    call_gets="\nThis call gets: {what}",
    prompt_words=words("the skill questions answers this call gets"),
    part_prompt="Result of {skill}: {text}",
    part_questions="\nQuestions this part answers:\n-",
    answering_prompt="Question: {question}\nThe part of the result of {skill} that answers it:",
    content_free_question="What is it?",
    threshold=re.compile(
        r"\b(?:([a-z]+)\s+than|(above|over|below|under|exceeds?))\s+"
        r"(-?\d+(?:\.\d+)?|(?:an?|one)\b)\s*(°\s?[cf]\b|%|[a-z]+)?",
        re.IGNORECASE,
    ),
    share=re.compile(
        r"\b(?:([a-z]+)\s+than|(over|under))\s+(?:a\s+|an\s+|one\s+)?"
        r"(half|quarter|third|tenth)\b(?:\s+of\b)?",
        re.IGNORECASE,
    ),
    shares=MappingProxyType({"half": 50.0, "quarter": 25.0, "third": 100 / 3, "tenth": 10.0}),
    participle_suffixes=("d", "ed"),
    having=words("have has"),
    presence=words("connected attached present installed fitted"),
    articles=("a", "an", "aeiou"),
    above=words(
        "warmer hotter higher more greater larger bigger above over exceed exceeds heavier"
        " longer faster louder brighter wetter"
    ),
    below=words(
        "colder cooler lower less fewer smaller below under lighter shorter slower quieter"
        " darker drier"
    ),
    one=words("a an one"),
    since=words("since"),
    said_which="The {it} is {compared}.",
    said_by="The {it} is {difference} {compared}.",
    said_none="There are no {label}.",
    difference_keys=words("difference diff delta"),
    when_asks=words("when"),
    participle=re.compile(r"^[^\W\d_]{2,}ed$", re.IGNORECASE),
    be_forms=words("be been being am"),
    said_since=(
        "The {label} has been {state} since {value}.",
        "The {label} have been {state} since {value}.",
    ),
    itself=words("device machine computer system box host server board pi"),
    amount=re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[ -]?([^\W\d_]+)(?!\w)"),
    said_amount_word="{number}-{unit}",
    said_amount_sign="{number} {unit}",
    said_amount_value="It is {value} {label}.",
    time_units=words("ms seconds minutes hours days"),
    asks_duration=words("long"),
)
"""English, as every reader of a question and every sayer of an answer takes it by default."""

__all__ = ["ENGLISH"]
