"""A call's free text is held to the question's own words: a few of them, a mark or a few
between two, and no control character in any JSON string the grammar lets a model write."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.agent.english import ENGLISH
from edge_agentd.agent.evidence import MARKS_IN_A_ROW, WORDS_AT_MOST, asked_text_pattern
from edge_agentd.agent.grounding import _asking
from edge_agentd.model.constrained import schema_to_gbnf

QUESTION = "What is the date of next Wednesday?"


def test_words_glued_or_without_end_are_no_text_of_the_question() -> None:
    asked = re.compile(asked_text_pattern(QUESTION))
    assert asked.fullmatch("next Wednesday")
    assert not asked.fullmatch("nextWednesday")  # glued: a name the question never wrote
    assert not asked.fullmatch("next ???? Wednesday")
    assert not asked.fullmatch(" ".join(["next"] * (WORDS_AT_MOST + 1)))
    assert asked.fullmatch(" ".join(["next"] * WORDS_AT_MOST))


@settings(max_examples=200)
@given(st.text(max_size=120), st.text(max_size=60))
def test_what_the_pattern_admits_is_a_few_of_the_question_s_words(question: str, text: str) -> None:
    if not re.fullmatch(asked_text_pattern(question), text):
        return
    words = ENGLISH.token.findall(text)
    assert len(words) <= WORDS_AT_MOST * 3  # a token may split into words and digits
    marks = re.findall(r"[^\w]+", text)
    assert all(len(run) <= MARKS_IN_A_ROW for run in marks), text


def test_an_optional_free_text_argument_is_held_too() -> None:
    branch = {
        "type": "object",
        "properties": {
            "skill_name": {"const": "read_gauge"},
            "arguments": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "which": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                    "tank": {"enum": ["reef", "pond"]},
                },
            },
        },
    }
    held = _asking(branch, "^x$")["properties"]["arguments"]["properties"]
    assert held["name"] == {"type": "string", "pattern": "^x$"}
    assert held["which"]["anyOf"] == [{"type": "string", "pattern": "^x$"}, {"type": "null"}]
    assert held["tank"] == {"enum": ["reef", "pond"]}  # its values hold it already


def test_a_json_string_in_the_grammar_takes_no_control_character() -> None:
    gbnf = schema_to_gbnf({"type": "object", "properties": {"a": {"type": "string"}}})
    [char] = [line for line in gbnf.splitlines() if line.startswith("char ::=")]
    assert char.startswith('char ::= [^"\\\\\\x7F\\x00-\\x1F]'), char
