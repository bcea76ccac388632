"""A question's noun phrases and its plain form, by a language's grammar alone (docs/design.md,
"Grounding"): where a noun phrase starts and ends, and a request, a polite form, a command or a
"whether" cut to the question it holds. Read by :mod:`~edge_agentd.agent.question`, which names
:func:`normalised` too."""

from __future__ import annotations

from collections.abc import Sequence

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import Language


def noun_phrase(
    words: Sequence[str],
    start: int,
    verb_last: bool,
    language: Language,
    owner: list[str] | None = None,
) -> tuple[list[str], int]:
    """The noun phrase from ``start``: determiners, words that say when and a possessive skipped
    ("my Pi's CPU" is "CPU", its owner "Pi" put in ``owner``), then words to one that ends a
    phrase. ``verb_last``: the question's verb follows the phrase ("What does the probe read
    now?", "Is the door locked?"), so the phrase drops its last word, unless an "of" follows
    it."""
    skipped = language.determiners | language.when
    i = start
    while i < len(words) and words[i].casefold() in skipped:
        i += 1
    phrase: list[str] = []
    while i < len(words):
        folded = words[i].casefold()
        if folded in language.ends_phrase or folded in skipped:
            break
        if language.possessive_end.search(folded):
            if owner is not None:
                owner[:] = [*phrase, language.possessive_end.sub("", words[i])]
            phrase.clear()
        else:
            phrase.append(words[i])
        i += 1
    stop = words[i].casefold() if i < len(words) else ""
    # A verb or a word of time where the phrase stops is the question's verb's own place
    # ("How long has the garage door been open?"): no word of the phrase is the verb then.
    # So is a comparison with a number ("Is the pond temperature above 25 °C?"): the phrase
    # before it is the thing compared, whole.
    verb_after = stop in language.auxiliaries | language.be_forms | language.when
    verb_after = verb_after or opens_comparison(words, i, language)
    if verb_last and stop != language.of and not verb_after and len(phrase) >= 2:
        phrase.pop()
    return phrase, i


def opens_comparison(words: Sequence[str], at: int, language: Language) -> bool:
    """Whether the words from ``at`` compare a value with a number or a share: "above 2",
    "below 30 %", "over half" (not "warmer than 40", whose comparative ends the phrase)."""
    if at >= len(words) or words[at].casefold() not in language.above | language.below:
        return False
    rest = " ".join(words[at:])
    return any(p is not None and p.match(rest) for p in (language.threshold, language.share))


def normalised(query: str, language: Language = ENGLISH) -> str:
    """The first sentence of ``query`` as a question or a command the grammar reads: a request
    or a polite form cut off ("Could you check the garage temperature?" reads "the garage
    temperature", "Would you mind telling me ..." what follows), a yes-or-no question inside
    a sentence turned into one ("Tell me whether the garage door is open" reads "is the garage
    door open"), and "how warm the CPU is" into "how warm is the CPU"."""
    return plain_form(query, language)[0]


def plain_form(query: str, language: Language) -> tuple[str, bool]:
    """:func:`normalised`, and whether a command or a request was cut off (what is left is then
    what it asks for, whatever verb it holds)."""
    text = language.sentence_end.split(query.strip())[0]
    commanded = False
    for _ in range(3):  # "Please, could you tell me ...": each opening cut in turn
        before = text
        text = language.please.sub("", text)
        for opening in (language.request.match(text), language.imperative_forms.match(text)):
            if opening:
                text, commanded = text[opening.end() :], True
                break
        if text == before:
            break
    words = language.token.findall(text)
    low = [w.casefold() for w in words]
    auxiliaries = language.auxiliaries
    if low and low[0] in language.embedded:
        # "whether the garage door is open": its verb goes first, as the question asks it.
        verb = next((i for i, w in enumerate(low[1:], 1) if w in auxiliaries), None)
        if verb is not None:
            return " ".join([words[verb], *words[1:verb], *words[verb + 1 :]]), False
    how = len(low) > 3 and low[0] == language.how and low[1] not in language.how_many
    verb = next((i for i, w in enumerate(low[3:], 3) if w in auxiliaries), None) if how else None
    if verb is not None and low[2] not in auxiliaries:
        # "how warm the CPU is (, in percent)": the clause's verb is the question's.
        return " ".join([*words[:2], words[verb], *words[2:verb], *words[verb + 1 :]]), False
    if low and (low[0] in language.question_words or low[0] in auxiliaries):
        commanded = False  # "(Do you know) what time it is": a question, read as one
    return text, commanded


__all__ = ["normalised", "noun_phrase", "plain_form"]
