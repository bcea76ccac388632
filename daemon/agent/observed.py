"""What one run observed, as the grounding rules read it (docs/design.md, "Grounding"):
every result a skill returned, their texts and numbers, and the words of the calls that gave
them, gathered as the run's events come, so a run of n steps gathers in O(n)."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from edge_agentd.agent.claims import reading_units, unnamed_subject, unnamed_things
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.events import (
    AgentState,
    CallSkillAction,
    SkillResultObservation,
    ToolErrorObservation,
)
from edge_agentd.agent.jsonvalues import walk
from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question, in_language
from edge_agentd.agent.resultlines import is_number, reading_text, scalar_text
from edge_agentd.agent.units import asked_units, conversions
from edge_agentd.agent.vocabulary import is_known, known_words

if TYPE_CHECKING:
    from edge_agentd.agent.registry import Registry
    from edge_agentd.agent.skillspec import SkillSpec


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What one run observed, as the rules read it."""

    question: Question
    """The run's question, parsed once."""
    results: tuple[Any, ...]
    """Every result a skill returned in this run."""
    texts: tuple[str, ...]
    """The results' texts and numbers as written (and each list's count), and the question."""
    skills: tuple[str, ...]
    """The catalogue: the names of the skills the model may call."""
    called: bool = False
    """Whether the run has called a skill yet (whatever came of it)."""
    skill_words: frozenset[str] = frozenset()
    """The words of the skills whose calls returned a result: names, descriptions, examples."""
    arguments: tuple[str, ...] = ()
    """The arguments of those calls, as texts, and what the skill says such a call gets."""
    called_names: frozenset[str] = frozenset()
    """The skills the run has called, whatever came of it."""
    errors: tuple[str, ...] = ()
    """What the skills that failed said: no evidence of a value, but a reason an answer that
    cannot tell may give ("no thermal zone was found under /sys/class/thermal")."""
    wording: tuple[str, ...] = ()
    """The results' keys and texts, the words of them :attr:`vocabulary` reads (found in the
    one walk that finds :attr:`texts`)."""
    readings: tuple[tuple[str, float], ...] = ()
    """Each unit name the results give a value (:func:`~edge_agentd.agent.claims.reading_units`),
    found in the same walk."""
    asked: tuple[bool, ...] = ()
    """For each result a skill returned in the run, in order, kept or not: whether the call that
    gave it asked what the question asks (:func:`asks_what_was_asked`; True where no call is
    known). Judged once per result, here; the engine's answers read it too."""

    @functools.cached_property
    def vocabulary(self) -> frozenset[str]:
        """The words of the calls that returned a result and of those results, case folded:
        read only where a rule needs them (a question with a subject)."""
        language = self.question.language
        return self.skill_words | known_words((*self.arguments, *self.wording), (), language)

    def unnamed_subject(self) -> str | None:
        """What of the question's subject this evidence does not name (:func:`unnamed_subject`);
        None at once for a question with no subject."""
        question = self.question
        if question.subject is None and not question.parts:
            return None
        vocabulary = self.vocabulary
        return unnamed_subject(question, vocabulary) or unnamed_things(question, vocabulary)


class Gathered:
    """A run's evidence so far, added to as its events come: each step reads only the events
    since the last, so a run of n steps gathers in O(n), not O(n^2). The run keeps one
    (:class:`~edge_agentd.agent.run.RunCache`), never its state."""

    __slots__ = (
        "arguments",
        "asked",
        "called_names",
        "calls",
        "described",
        "errors",
        "evidence",
        "key",
        "last",
        "named",
        "query",
        "readings",
        "results",
        "seen",
        "texts",
        "units",
        "visit",
        "wording",
        "words",
    )

    def __init__(self) -> None:
        self.reset(None, "")

    def reset(
        self, key: tuple[int, int, int] | None, query: str, language: Language = ENGLISH
    ) -> None:
        """Start anew, for registry ``key`` (its id and version, and the language's id) and
        ``query``, its results read in ``language``."""
        self.key = key
        self.seen = 0
        self.last: object = None
        """The last event read: a stream that is not the one read so far starts anew."""
        self.calls: dict[str, CallSkillAction] = {}
        self.results: list[Any] = []
        self.asked: list[bool] = []
        self.texts: list[str] = [query]
        self.errors: list[str] = []
        self.words: set[str] = set()
        self.described = False
        self.called_names: set[str] = set()
        self.evidence: Evidence | None = None
        self.named: set[str] = set()
        """The skills whose words :attr:`words` holds."""
        self.arguments: list[str] = []
        self.wording: list[str] = []
        self.readings: list[tuple[str, float]] = []
        self.query = query
        """The question: what a call's free text may ask for."""
        self.units = asked_units(query, language)
        """The units the question asks its value in: each reading said in them is evidence
        too, the engine's arithmetic on the skill's value."""
        self.visit = _texts_of(self.texts, self.wording, self.readings, language)
        """What the walk of each result adds to the lists above (made once a run)."""

    def add_skill_words(self, name: str, registry: Registry, language: Language) -> None:
        """Add the words that name what a skill's calls ask about: its name, description and
        examples (read and added once a run, however often it is called)."""
        if name not in self.named:
            self.named.add(name)
            spec = registry.get(name)
            texts = [name] if spec is None else [name, spec.description, *spec.examples]
            self.words |= known_words(texts, [], language)


def gather(
    state: AgentState,
    registry: Registry,
    skills: Iterable[str],
    gathered: Gathered | None = None,
    language: Language = ENGLISH,
) -> Evidence:
    """The evidence of ``state``'s run so far: each result, and each call that returned one,
    its question read in ``language``. ``gathered`` is what the run gathered before (read on
    from there), else none."""
    events = state.stream.root
    skills = tuple(skills)
    key = (id(registry), registry.version, id(language))
    if gathered is None:
        gathered = Gathered()
    if (
        gathered.key != key
        or gathered.seen > len(events)
        or (gathered.seen and events[gathered.seen - 1] is not gathered.last)
    ):
        gathered.reset(key, state.query, language)
    if gathered.seen < len(events):
        for index in range(gathered.seen, len(events)):
            event = events[index]
            if isinstance(event, CallSkillAction):
                gathered.described = True  # called, whatever came of it
                gathered.called_names.add(event.skill_name)
                if event.call_id:
                    gathered.calls[event.call_id] = event
            if isinstance(event, ToolErrorObservation):
                gathered.errors.append(event.error)
            if not isinstance(event, SkillResultObservation):
                continue
            call = gathered.calls.get(event.call_id) if event.call_id else None
            before = events[index - 1] if index else None
            if call is None and isinstance(before, CallSkillAction):
                call = before  # an event stream made by hand, without ids
            asked = call is None or asks_what_was_asked(
                registry.get(call.skill_name), call.arguments, gathered.query, language
            )
            gathered.asked.append(asked)
            if not asked:
                # "next friday" passed for "next Wednesday": its result is of another thing,
                # no evidence for an answer to this question.
                continue
            gathered.results.append(event.result)
            walk(event.result, gathered.visit, None)
            if call is not None:
                gathered.add_skill_words(call.skill_name, registry, language)
                gathered.arguments.extend(map(str, call.arguments.values()))
                # What the skill says such a call gets names what its result is of.
                spec = registry.get(call.skill_name)
                gathered.arguments.extend(spec.gets(call.arguments) if spec is not None else [])
        gathered.seen, gathered.last = len(events), events[-1]
        gathered.evidence = None
    evidence = gathered.evidence
    if evidence is None or evidence.skills != skills:
        said_in_units = conversions(gathered.readings, gathered.units)
        evidence = gathered.evidence = Evidence(
            in_language(state.question, language),
            tuple(gathered.results),
            (*gathered.texts, *(text for _, _, text in said_in_units)),
            skills,
            gathered.described,
            frozenset(gathered.words),
            tuple(gathered.arguments),
            frozenset(gathered.called_names),
            tuple(gathered.errors),
            tuple(gathered.wording),
            (*gathered.readings, *((unit, value) for unit, value, _ in said_in_units)),
            tuple(gathered.asked),
        )
    return evidence


def asks_what_was_asked(
    spec: SkillSpec | None,
    arguments: Mapping[str, Any],
    question: str,
    language: Language = ENGLISH,
) -> bool:
    """Whether a call of ``spec`` with ``arguments`` asked what ``question`` asks: every word
    of each free-text argument, one the skill lists no choices for, is the question's or the
    grammar's, and every number in it is one the question writes ("4/7/1976" of "4 July 1976"
    is a conversion, which a skill that reads the month first takes for April 7). A value
    chosen from a list (a sensor's name, or one of the calls the skill lists as ready) may
    name the thing otherwise ("28-0316a2791bff" for "the 1-Wire probe")."""
    listed = {name for name, _ in spec.current_choices()} if spec is not None else set()
    ready = (
        {(name, str(value)) for given, _ in spec.ready_calls() for name, value in given.items()}
        if spec is not None
        else set()
    )
    free = [
        value
        for name, value in arguments.items()
        if isinstance(value, str) and name not in listed and (name, value) not in ready
    ]
    if not free:
        return True
    asked = known_words([question], [], language)
    numbers = {int(n) for n in _DIGITS.findall(question)}
    return all(
        is_known(word, asked, language) or word.casefold() in language.grammar
        for value in free
        for word in language.word.findall(value)
    ) and all(int(n) in numbers for value in free for n in _DIGITS.findall(value))


_DIGITS = re.compile(r"\d+")


def _texts_of(
    texts: list[str], wording: list[str], readings: list[tuple[str, float]], language: Language
) -> Callable[[Any, str | None], list[tuple[Any, str | None]]]:
    """What a walk of a result adds to ``texts``: each reading as it is written, each key
    before what it holds, each list's count, and each text and number; to ``wording``, each
    key and each text (:func:`~edge_agentd.agent.vocabulary.known_words` of the result); and to
    ``readings``, the unit names each object gives its value."""

    def visit(node: Any, key: str | None) -> list[tuple[Any, str | None]]:
        if key is not None:
            texts.append(key)
            wording.append(key)
        if isinstance(node, str):
            texts.append(node)
            wording.append(node)
        elif isinstance(node, dict):
            reading = reading_text(node)
            if reading is not None:
                texts.append(reading)
            readings.extend(reading_units(node, language))
            return [(value, str(name)) for name, value in node.items()]
        elif isinstance(node, list):
            texts.append(str(len(node)))
            return [(item, None) for item in node]
        elif is_number(node):
            texts.append(scalar_text(node))
        return []

    return visit


__all__ = ["Evidence", "Gathered", "asks_what_was_asked", "gather"]
