"""Which result lines a question is about, and how a yes-or-no question is answered from them
(docs/design.md, "Small models", "Bound to the question").

A sentence is offered only when the thing the question names is named by the sentence's own
label source, not merely somewhere in the run's evidence: "Humidity?" is never answered with
the pressure because the result that holds both also holds a humidity. A line's own words are
its path (keys and a list item's name) and what its object says of itself (its short texts
and their keys); a skill's name and description are the line's too, but only where no line of
the run names the thing by its own words (a plugin ``ev_charger`` that says "the car" in its
description, whose keys do not). The subject is named as grounding names it
(:func:`~edge_agentd.agent.claims.unnamed_subject`): each word that says which one, a place
after it, and the head or another of its words. A "how <adjective>" question's adjective
picks, among those, the lines whose own path starts as it does ("charged" and
``state_of_charge_percent``), where any does; so do the question's other words ("available"
of "How much memory is available?"), the grammar's own left out (the language's
:attr:`~edge_agentd.agent.language.Language.grammar`).

A yes-or-no question (:attr:`~edge_agentd.agent.question.Question.state`) is answered "Yes,
..." or "No, ..." only from a line that writes its state: a flag whose key holds each word the
question asks ("plugged_in" of "Is the car plugged in?"), or a state text that has the word, or
whose own words, or (for a text under a state key, or the object's only text that the skill's
words name too) whose skill's words name it ("closed" under ``state`` of a skill that says
"open or closed"). Otherwise it
gets none. Every word is the question's, the result's or the language's (its yes, no, not and
sentences).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from edge_agentd.agent.claims import absent_value, holds_state, unnamed_subject
from edge_agentd.agent.language import Language
from edge_agentd.agent.listed import listed_things
from edge_agentd.agent.question import Question, normalised
from edge_agentd.agent.resultlines import Line, result_line_parts
from edge_agentd.agent.units import asked_units, converts
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.choicewords import ChoiceWords, with_choice_words
from edge_agentd.guidance.compared import Threshold, compared_sentences, threshold_of
from edge_agentd.guidance.counted import counted_things, counting_what_was_asked, says_how_many
from edge_agentd.guidance.keyed import compound_lines, of_amounts, quality_lines
from edge_agentd.guidance.labels import object_texts, prefix, words_of
from edge_agentd.guidance.whose import of_question

MAX_STATE_WORDS = 3
"""A text longer than this is no state ("closed", "fully open"), but a sentence of its own."""


MAX_BOUND_LINES = 256
"""The most lines of one result judged: a result of thousands is read from its first ones, as
its turn shows only its first lines."""


def own_words(
    line: Line, texts: dict[tuple[str, ...], list[str]], language: Language
) -> frozenset[str]:
    """The words ``line`` names by itself: its path, and the short texts and keys of its
    object and of the objects that object is in (``texts``, :func:`~edge_agentd.guidance.
    labels.object_texts` of its result's lines): a reading in a sensor's ``readings`` is that
    sensor's, named "DS18B20" by its ``label``; a sibling item's texts are not its."""
    path = prefix(line)
    # A text is named by its own object's texts only: what an enclosing object says (a list's
    # filter, ``quantity: humidity``) names the values inside it, not the inner objects' other
    # texts (the ``kind`` of each sensor listed is no humidity).
    depths = [len(path)] if isinstance(line.node, str) else range(len(path) + 1)
    found = [t for depth in depths for t in texts.get(path[:depth], ())]
    if isinstance(line.node, dict):
        found += texts.get(tuple(line.name.split()), ())  # a reading's own texts
    return known_words([line.name, *found], [], language)


def names_subject(question: Question, vocabulary: frozenset[str]) -> bool:
    """Whether ``vocabulary`` names ``question``'s subject as grounding's rule does."""
    return unnamed_subject(dataclasses.replace(question, parts=()), vocabulary) is None


def bound_lines(
    question: Question,
    chosen: Sequence[Line],
    lines: Sequence[Line],
    skill_words: frozenset[str],
    *,
    narrow: bool = True,
    call_words: frozenset[str] = frozenset(),
    ids: ChoiceWords | None = None,
) -> list[Line]:
    """Of ``chosen`` (lines of a result whose lines are ``lines``), those about ``question``'s
    subject (see the module's docstring); all of them for a question with no subject. With
    ``narrow``, a line whose own key is the thing, where there is one (not for a state, which
    its object's sibling holds: ``state`` beside ``door``). ``call_words``, the words of the
    call that gave the result (its arguments, what a listed call gets), name what every
    object of it is of ("the 1-Wire probe DS18B20" of a reading's ``readings``); ``ids``,
    what the skills call a thing a text of the result names by its id
    (:mod:`~edge_agentd.guidance.choicewords`)."""
    subject, language = question.subject, question.language
    # A unit says how another line's value is written, not a value: "The humidity unit is
    # %RH." answers no question but one about the unit.
    words_asked = {w.casefold() for w in language.token.findall(question.text)}
    if not words_asked & language.unit_keys:
        chosen = [line for line in chosen if not _keyed_by(line, language.unit_keys)]
    # A count says how many things there are, not what one of them reads: the count of the
    # sensors that measure the humidity is no humidity.
    how_many = language.how_many_question.match(normalised(question.text, language))
    if how_many is None and not words_asked & language.count_keys:
        chosen = [line for line in chosen if not _keyed_by(line, language.count_keys)]
    if subject is None:
        return of_amounts(question, chosen)
    chosen = list(chosen)[:MAX_BOUND_LINES]
    glued = compound_lines(question, chosen)
    if glued:
        return of_amounts(question, glued)  # ``weekday`` of "day of the week": its own key
    texts = with_choice_words(object_texts(lines), ids or {})
    # A count is of the list beside it: ``count`` names the ``sensors`` it counts.
    own = {
        id(line): own_words(line, texts, language)
        | known_words(counted_things(line, lines, language), [], language)
        for line in chosen
    }
    # A line named only by a word that says which one ("free" of "Free RAM?"), in an object
    # the question does not name (``disk``), is another thing's: not offered on that word.
    qualifiers = [*subject.which, *other_words(question)]
    bound = [line for line in chosen if names_subject(question, own[id(line)])]
    bound = of_question(question, bound, own, texts, qualifiers, call=call_words)
    if not bound:
        named = [line for line in chosen if names_subject(question, own[id(line)] | skill_words)]
        bound = of_question(question, named, own, texts, qualifiers, call=call_words)
        if not bound and subject.head.casefold() in language.itself:
            # "How long has this machine been up?": every line of a skill that says it reports
            # on the device ("this device" names "the Pi") is the device's; the adjective
            # alone says which ones.
            device = skill_words | language.itself if skill_words & language.itself else skill_words
            named = [line for line in chosen if names_subject(question, own[id(line)] | device)]
            bound = quality_lines(question, named)
    # A line whose own key is the thing ("time" of "What time is it?", the list ``sensors`` of
    # "How many sensors are there?") says it more than its siblings and children, which its
    # object's words or its path name too.
    if narrow:
        # The head first; else another word of the subject ("sensors" of "Which sensors measure
        # humidity?", which the grammar reads as saying which one).
        for words in ([subject.head], subject.which):
            keyed = [
                x for x in bound if any(is_known(w, _key_of(x, language), language) for w in words)
            ]
            if keyed:
                # The word itself before a longer one it begins: ``time``, not ``timezone``, of
                # "Current time?".
                exact = [x for x in keyed if any(_is_key(w, x, language) for w in words)]
                bound = exact or keyed
                break
    quality = subject.quality
    if quality and quality != subject.head:
        # "How charged is the car's battery?": of the car's lines, the one the adjective names;
        # "How long ...?" the durations.
        bound = quality_lines(question, bound) or bound
    # The question's other words may name the line too: "How much memory is available?" asks
    # for ``memory available_mib``, not the total or the share used, where a line is so named.
    others = other_words(question)
    keyed = [line for line in bound if _names_line(line, others, language)] or bound
    if words_asked & language.asks_state:
        # "What is the washing machine doing?" asks what state it is in, not its time left.
        keyed = [line for line in keyed if _keyed_by(line, language.state_keys)] or keyed
    # A unit the question asks in ("how full ..., in percent", "How many gallons ...") picks
    # the lines written in it, or in a unit the engine can say in it.
    units = {unit.casefold() for unit in asked_units(question.text, language)}
    keyed = [line for line in keyed if _written_in(line, units, language)] or keyed
    if how_many is not None:
        # A count of all the sensors is no count of those that measure the humidity.
        asked = [*subject.words, *other_words(question)]
        keyed = counting_what_was_asked(keyed, lines, asked, language)
        # Nothing but a number says how many: not a name, a state or a flag of what is counted.
        keyed = [line for line in keyed if says_how_many(line, subject.head, bool(units), language)]
    return of_amounts(question, keyed)


def _written_in(line: Line, units: set[str], language: Language) -> bool:
    """Whether ``line``'s value is written in one of ``units``, or its key's last word says so
    (``fill_percent``), or in a unit that converts to one of them."""
    key = language.name_word.findall(line.name.split()[-1].casefold()) if line.name else []
    said = {language.unit_suffixes.get(key[-1], "").casefold()} if key else set()
    shown = line.shown.split()
    written = ({shown[-1].casefold()} if shown else set()) | said
    return bool(units & written) or any(converts(unit, units) for unit in written if unit)


def _names_line(line: Line, words: Sequence[str], language: Language) -> bool:
    """Whether one of ``words`` is a word of ``line``'s name, or its participle ("use" of
    ``used_percent``: "Memory in use?")."""
    name = known_words([line.name], [], language)
    participles = {f"{w.casefold()}{s}" for w in words for s in language.participle_suffixes}
    return bool(participles & name) or any(is_known(word, name, language) for word in words)


def _keyed_by(line: Line, keys: frozenset[str]) -> bool:
    """Whether ``line``'s own key is one of ``keys`` (``measures humidity unit``)."""
    key = line.name.split()[-1] if line.name else ""
    return key.casefold() in keys


def _is_key(word: str, line: Line, language: Language) -> bool:
    """Whether each run of letters of ``word`` is a word of ``line``'s own key, or its plural
    or singular: no longer word it only begins."""
    key = _key_of(line, language)
    parts = language.letters.findall(word.casefold())
    return bool(parts) and all(language.forms(part) & key for part in parts)


def _key_of(line: Line, language: Language) -> frozenset[str]:
    """The words of ``line``'s own key (the last part of its name)."""
    return known_words([line.name.split()[-1] if line.name else ""], [], language)


def other_words(question: Question) -> list[str]:
    """The question's words that are neither its subject's nor the grammar's own (its verbs,
    pronouns, determiners, question words): "available" of "How much memory is available?"."""
    subject, language = question.subject, question.language
    taken: set[str] = set()
    if subject is not None:
        said = (
            *subject.words,
            *subject.owner,
            *subject.doer,
            *subject.where,
            subject.quality or "",
        )
        taken = {w.casefold() for w in said}
    found = []
    for word in language.token.findall(normalised(question.text, language)):
        folded = word.casefold()
        if len(folded) >= 3 and folded.isalpha() and folded not in language.grammar | taken:
            found.append(folded)
    return found


def subject_phrase(question: Question) -> str | None:
    """The question's subject as a sentence names it, the question's own words ("the front
    door", "the soil of the basil plant"); None when it has none."""
    subject, language = question.subject, question.language
    if subject is None:
        return None
    # A word with no letter ("1" of "W.1") is no name a sentence can copy: the question may
    # write it glued to another, where it is no number of its own.
    said = [w for w in (*subject.which, subject.head) if language.letters.search(w)]
    if not said:
        return None
    opening = question.text.lstrip()[: len(said[0])]
    if opening == said[0] and said[0][1:].islower():
        said[0] = said[0].lower()  # "Humidity?": capitalised as a sentence opens
    phrase = " ".join(said)
    of = [w for w in subject.of if language.letters.search(w)]
    if of:
        phrase = language.said_of.format(phrase=phrase, of=" ".join(of))
    # Its values as grounding reads them: a "1W" the question wrote as ".1W" is a 1 it lacks.
    return phrase if absent_value(phrase, [question.text], language) is None else None


def asks_existence(question: Question) -> bool:
    """Whether ``question`` asks whether something is there ("Is there mail?", "Does this
    device have a pressure sensor?"; :attr:`~edge_agentd.agent.question.Question.exists`)."""
    return question.exists


def yes_no_sentences(
    question: Question,
    bound: Sequence[Line],
    lines: Sequence[Line],
    skill_words: frozenset[str],
    result: Any = None,
) -> list[str]:
    """ "Yes, ..." or "No, ..." from each of ``bound`` (lines of ``result``) that writes the
    state ``question`` asks about, or whether its subject is there (see the module's
    docstring). No "No" where the result writes the state elsewhere: it says both."""
    phrase = subject_phrase(question)
    if phrase is None:
        return []
    la = question.language
    be = la.verb(words_of(phrase, la))
    state, predicate = question.state, " ".join(question.predicate)
    if state is None or not predicate:
        return _there(question, bound, result, phrase) if state is None else []
    said: list[str] = []
    for line in bound:
        key = known_words([line.name.split()[-1] if line.name else ""], [], la)
        if isinstance(line.node, bool) and all(is_known(w, key, la) for w in question.predicate):
            template = la.said_state if line.node else la.said_not_state
            answer = la.yes if line.node else la.no
            said.append(template.format(answer=answer, phrase=phrase, be=be, state=predicate))
    texts = [line for line in bound if _state_text(line, la)]
    strong = [
        line
        for line in texts
        if is_known(state, known_words([line.name.split()[-1], str(line.node)], [], la), la)
    ]
    if not strong:
        # The state is the skill's word ("open or closed"), and the line is its object's state.
        objects = object_texts(lines)
        weak = [t for t in texts if is_known(state, own_words(t, objects, la) | skill_words, la)]
        keyed = [line for line in weak if line.name.split()[-1].casefold() in la.state_keys]
        # An object's only text under another key answers only where the skill names it as
        # a state it can be ("closed" of "open or closed"): "humidity" under ``quantity``
        # is not whether a sensor is "connected", though the skill's examples say the word.
        named = [
            t for t in weak if all(is_known(w, skill_words, la) for w in words_of(str(t.node), la))
        ]
        strong = keyed or (named if len(texts) == 1 else [])
    for line in strong:
        text = str(line.node).strip()
        has = any(la.forms(w) & {state} for w in words_of(text, la))
        answer = la.yes if has else la.no
        said.append(la.said_state.format(answer=answer, phrase=phrase, be=be, state=text))
    if holds_state([result], state, la):
        said = [s for s in said if not s.startswith(la.no)]
    # "Is a humidity sensor connected?", when no line writes that state: a listing of one.
    return said or _there(question, [], result, phrase)


def _there(question: Question, bound: Sequence[Line], result: Any, phrase: str) -> list[str]:
    """ "Yes, ..." or "No, ..." to whether ``question``'s subject is there: from a flag of
    ``bound`` ("Is there mail?"), else "Yes" from the entries of ``result`` that are what was
    asked (:func:`~edge_agentd.agent.listed.listed_things`). Never "No" from a listing: one
    need not be complete."""
    la = question.language
    if not question.exists:
        return []
    be = la.verb(words_of(phrase, la))
    flags = [line for line in bound if isinstance(line.node, bool)]
    said = [
        (la.said_there if line.node else la.said_none_there).format(
            answer=la.yes if line.node else la.no, be=be, phrase=phrase
        )
        for line in flags
    ]
    names = listed_things(question, [result]) if not said else []
    # A name no line of the result shows is not said (a single entry is shown by its count).
    shown = {w for line in result_line_parts(result, la) for w in words_of(line.text, la)}
    names = [name for name in names if set(words_of(name, la)) <= shown]
    if names:
        consonant, vowel, vowels = la.articles
        article = vowel if phrase[:1].casefold() in vowels else consonant
        single = be == la.is_ and article
        said.append(
            la.said_exists.format(
                answer=la.yes,
                be=be,
                phrase=f"{article} {phrase}" if single else phrase,
                names=la.said_listing.format(names=", ".join(names[:-1]), last=names[-1])
                if len(names) > 1
                else names[0],
            )
        )
    return said


def _state_text(line: Line, language: Language) -> bool:
    """Whether ``line`` shows a text that can be a state: a few words of letters, with no
    negation (a "not open" would answer "Yes" to "open")."""
    node = line.node
    if not isinstance(node, str) or not line.name:
        return False
    found = words_of(node, language)
    negated = {w.casefold() for w in found} & language.negations
    plain = all(w.isalpha() for w in found) and not negated
    return (
        0 < len(found) <= MAX_STATE_WORDS
        and plain
        and not (language.negation_suffix and node.strip().endswith(language.negation_suffix))
    )


__all__ = [
    "MAX_BOUND_LINES",
    "MAX_STATE_WORDS",
    "Threshold",
    "asks_existence",
    "bound_lines",
    "compared_sentences",
    "names_subject",
    "own_words",
    "subject_phrase",
    "threshold_of",
    "yes_no_sentences",
]
