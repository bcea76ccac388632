"""docs/design.md, "Grounding": the language is one value, English its default instance.

A second language can be given where a question is read and an answer judged and said (the
question's reader, ``Grounding``, the guides): a few words of German here, enough to read a
question in it and to decline in it. And no word of English stands outside the value: the
string literals of the modules that read questions, judge answers and say them are scanned.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from edge_agentd import (
    Agent,
    FinalAnswerAction,
    Grounding,
    MockModel,
    Registry,
    ValidationErrorObservation,
)
from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.language import words
from edge_agentd.agent.question import Question
from edge_agentd.guidance.answering import Answering
from edge_agentd.guidance.declines import cannot_tell_sentence

DAEMON = Path(__file__).resolve().parents[2] / "daemon"

GERMAN = dataclasses.replace(
    ENGLISH,
    ends_phrase=words(
        "in im von vom auf an mit für über als zu ist sind war waren wird kann hat haben und "
        "oder was welche wer wie wo wann warum es er sie wir ihr ich mir uns jetzt heute bitte"
    ),
    when=words("aktuelle aktuellen heutige"),
    when_after=words("jetzt heute bitte hier draußen"),
    determiners=words("der die das den dem des ein eine einen mein meine unser unsere alle"),
    auxiliaries=words("ist sind war waren wird kann hat haben"),
    state_verbs=words("ist sind war waren"),
    imperatives=words("sag zeig nenne"),
    recipients=words("mir uns"),
    what=words("was welche welcher welches"),
    what_is=frozenset(),
    how="wie",
    how_many=words("viele viel"),
    do_forms=frozenset(),
    be="sein", of="von", than="als", it="es", there="da",
    place=words("in im"),
    here=(("zimmer",), ("haus",), ("wohnung",)),
    embedded=words("ob"),
    question_words=words("was welche wer wo wann warum wie"),
    grammar=words("was welche wer wo wann warum wie ist sind der die das es bitte viele"),
    request=re.compile(r"^\s*(?:kannst|könntest)\s+du\s+(?:bitte\s+)?", re.I),
    please=re.compile(r"(?:^\s*bitte\b\s*,?\s*|\s*,?\s*\bbitte\s*(?=[?!.]?\s*$))", re.I),
    imperative_forms=re.compile(r"^(sag|zeig|nenne|lies|prüfe)\b(?:\s+(?:mir|uns))?\s*", re.I),
    and_=re.compile(r" ?,? und ", re.I),
    question_opening=re.compile(r"(?:was|welche|wie|wo|wann|wer|ist|sind)\b", re.I),
    article=re.compile(r"(?:der|die|das|ein|eine)\s+", re.I),
    negations=words("nicht kein keine nie nichts"),
    negation_suffix="",
    quality_nouns={"warm": ("temperatur", "temperature"), "feucht": ("feuchte", "humidity")},
    yes="Ja", no="Nein", not_="nicht", is_="ist", are="sind",
    cannot_tell="Ich weiß es nicht",
    said_value="{label} {be} {value}.",
    cannot_read="{cannot}: keine Fähigkeit hier liest {phrase}.",
    cannot_asked="{cannot}: keine Fähigkeit hier sagt, was gefragt wurde.",
    unknown_subject=(
        "Kein Ergebnis nennt {subject!r}, wonach die Frage fragt. Rufe eine Fähigkeit auf, "
        'die es liefert, oder antworte "{cannot}" und warum.'
    ),
    no_evidence=(
        "Noch hat keine Fähigkeit ein Ergebnis geliefert. Rufe eine auf, oder antworte "
        '"{cannot}" und warum.'
    ),
)
"""A few words of German: the questions below are read by these, the rest stays English's."""


def answer(text: str) -> str:
    return json.dumps({"final_answer": text})


def call(skill: str) -> str:
    return json.dumps({"skill_name": skill, "arguments": {}})


def home() -> Registry:
    registry = Registry()

    @registry.skill()
    def cpu() -> dict[str, Any]:
        """The CPU temperature."""
        return {"cpu_temperature": 48.3}

    return registry


def refusals(events: Any) -> list[tuple[str | None, str]]:
    return [
        (e.error_type, e.feedback)
        for e in events
        if isinstance(e, ValidationErrorObservation) and e.validator_name == "grounding"
    ]


def test_a_question_in_the_second_language_is_read_by_its_grammar() -> None:
    question = Question.parse("Wie warm ist die Garage?", GERMAN)
    assert question.subject is not None and question.language is GERMAN
    assert (question.subject.head, question.subject.quality) == ("Garage", "warm")
    door = Question.parse("Bitte sag mir, ob die Haustür offen ist.", GERMAN)
    assert door.subject is not None and door.subject.head == "Haustür"
    assert door.state == "offen"
    # English reads none of it the same: the words are the value's, not the code's.
    assert Question.parse("Wie warm ist die Garage?").subject != question.subject


def test_a_run_grounded_in_it_refuses_and_declines_in_it() -> None:
    replies = [
        answer("I cannot tell."),  # an English decline is no decline in German: a claim
        call("cpu"),
        answer("48.3"),
        answer("Ich weiß es nicht: keine Fähigkeit hier liest die Garage."),
    ]
    model = MockModel(replies, uses_action_schema=True)
    grounding = Grounding(language=GERMAN)
    state = Agent(model, home(), grounding=grounding).run("Wie warm ist die Garage?")
    found = refusals(state.stream)
    assert [kind for kind, _ in found] == ["no_evidence", "unknown_subject"]
    assert all("Ich weiß es nicht" in feedback for _, feedback in found)
    assert "'Garage'" in found[1][1]
    assert state.outcome == "answered"
    assert state.final_answer == "Ich weiß es nicht: keine Fähigkeit hier liest die Garage."
    # Where the decoding is ours, the only answer the schema admits then is its decline.
    schema = model.calls[-1]["action_schema"]
    patterns = json.dumps(schema, ensure_ascii=False)
    assert "^Ich weiß es nicht" in patterns and "I cannot tell" not in patterns
    assert grounding.rules == GERMAN.rules


def test_the_engine_says_its_sentences_and_its_decline_in_it() -> None:
    question = Question.parse("Wie warm ist die Garage?", GERMAN)
    assert cannot_tell_sentence(question) == (
        "Ich weiß es nicht: keine Fähigkeit hier liest Garage."
    )
    # Two sentences fit: the model chooses between them, and each is said in German.
    model = MockModel([call("cpu"), answer("CPU ist 48.3.")], uses_action_schema=True)
    agent = Agent(
        model,
        home(),
        grounding=Grounding(language=GERMAN),
        guidance=Answering(language=GERMAN),
    )
    state = agent.run("Wie warm ist die CPU?")
    [branch] = model.calls[-1]["action_schema"]["oneOf"]
    offered = branch["properties"]["final_answer"]["enum"]
    assert offered == ["CPU temperature ist 48.3.", "CPU ist 48.3."]
    [final] = [e for e in state.stream if isinstance(e, FinalAnswerAction)]
    assert final.made_by == "engine" and final.answer == "CPU ist 48.3."


# -- no English outside the value ------------------------------------------------------------

SCANNED = [
    *(DAEMON / "agent" / f"{name}.py" for name in (
        "question", "claims", "vocabulary", "evidence", "observed", "grounding", "resultlines",
    )),
    *sorted((DAEMON / "guidance").glob("*.py")),
]  # fmt: skip
"""The modules that read a question, judge an answer and say one: every word of the language
they use is the value's (agent/english.py builds English's)."""

# JSON Schema's words, the actions' keys, a reading's keys and a line's name for a bare value
# or list, a skill spec's attributes, the fields of a skill's ``says`` and who made an answer:
# names of the data, read by programs, not words said to anyone.
FORMAT_KEYS = words(
    "type object string properties required pattern enum arguments value unit items "
    "description examples const says options label engine model rules grounding"
)
"""Literals that are identifiers of a format, not words of a language."""

PYTHON_NAMES = frozenset({"Error", "Exception", "Warning"})
"""The endings of Python's exception names, as a skill's error is told with one."""

_TOKEN = re.compile(r"[^\W\d]\w*")
_ESCAPES = re.compile(r"\\[A-Za-z]|%[a-z]|A-Z|a-z")
"""What a pattern or a format writes that is no word: ``\\b``, ``%s``, a class's ``a-z``."""


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
        else:
            continue
        for statement in body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                found.add(id(statement.value))
    return found


def _not_said(tree: ast.AST) -> set[int]:
    """Literals no one reads as the language: docstrings, ``__all__``, ``__slots__``, and what
    a log line says (to a developer)."""
    skipped = _docstrings(tree)
    for node in ast.walk(tree):
        named = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in {"__all__", "__slots__"} for t in node.targets
        )
        logged = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in {"log", "logging", "logger"}
        )
        if named or logged:
            skipped |= {id(n) for n in ast.walk(node) if isinstance(n, ast.Constant)}
    return skipped


def english_words(source: str) -> list[tuple[int, str]]:
    """Each word of a string literal of ``source`` that is no identifier: not one with an
    underscore or written in camel case, not a format key, not a Python name."""
    tree = ast.parse(source)
    skipped = _not_said(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in skipped:
            continue
        for token in _TOKEN.findall(_ESCAPES.sub(" ", node.value)):
            identifier = "_" in token or re.search(r"[a-z][A-Z]", token) is not None
            if len(token) < 2 or identifier or token in FORMAT_KEYS | PYTHON_NAMES:
                continue
            found.append((node.lineno, token))
    return found


def test_no_english_word_stands_outside_the_language_value() -> None:
    found = {
        f"{path.relative_to(DAEMON)}:{line}": word
        for path in SCANNED
        for line, word in english_words(path.read_text(encoding="utf-8"))
    }
    assert found == {}


def test_the_scan_finds_a_word_written_inline() -> None:
    # Each shape a word of the language was written in before it moved into the value.
    source = '''
import logging
log = logging.getLogger(__name__)
CANNOT_TELL = "I cannot tell"
STATES = {"open", "closed"}
def said(x):
    """A docstring says what it likes."""
    log.warning("a log line says what it likes: %s", x)
    return f"The {x} is here." if x.endswith("n't") else re.compile(r"\\bbetween\\b")
'''
    assert [w for _, w in english_words(source)] == [
        "cannot", "tell", "open", "closed", "The", "is", "here", "between",
    ]  # fmt: skip
    assert english_words('KEYS = {"final_answer": 1, "oneOf": [], "type": "object"}') == []


# -- one walker of a JSON result ---------------------------------------------------------------

RECURSIVE_NOT_WALKERS = {
    ("jsonvalues.py", "to_jsonable"),  # makes any Python value JSON: it walks no result
    ("render.py", "bound_sentences"),  # calls itself on a question's two parts
    ("skillspec.py", "_type_text"),  # says an argument's JSON Schema type: no result
    ("gemmacalls.py", "_declared"),  # a skill's JSON Schema as Gemma 4 declares it: no result
    ("gemmacalls.py", "_parameters"),  # the same, as the template's recursive macro writes it
}


def test_one_walker_of_a_json_result() -> None:
    """No function of agent/ or guidance/ calls itself, as a walker of a result did (eight of
    them): each reader passes what it does at a part to ``jsonvalues.walk``."""
    recursive = set()
    for path in [*(DAEMON / "agent").glob("*.py"), *(DAEMON / "guidance").glob("*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # A method calling a function of its own name calls that function, not itself.
        methods = {
            id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef) or id(node) in methods:
                continue
            calls = {
                c.func.id
                for c in ast.walk(node)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
            }
            if node.name in calls:
                recursive.add((path.name, node.name))
    assert recursive == RECURSIVE_NOT_WALKERS
