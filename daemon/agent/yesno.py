"""What a yes-or-no question asks, for the grounding rules: whether it asks one at all (not one
that compares a value with a number), and whether an answer opens with the language's yes or
no. The state it asks about is the grammar's (``Question.state``): none where it compares."""

from __future__ import annotations

from edge_agentd.agent.language import Language
from edge_agentd.agent.question import Question


def compares_a_value(question: Question) -> bool:
    """Whether ``question`` compares a value with a number or a share ("Is the disk more than
    half full?", "Is the CPU warmer than 40 °C?")."""
    language, text = question.language, question.text
    return any(
        pattern is not None and pattern.search(text) is not None
        for pattern in (language.threshold, language.share)
    )


def asks_yes_or_no(question: Question) -> bool:
    """Whether ``question`` asks whether its thing is in a state or is there, where the rules
    hold the yes or no an answer opens with to the results. Not one that compares a value with
    a number or a share ("Is the load below 1?"): no rule here reads which way that goes, and
    a model made to say yes or no said the wrong one."""
    compares = compares_a_value(question)
    return (question.state is not None or question.exists) and not compares


def opens_yes_or_no(answer: str, language: Language) -> bool:
    """Whether ``answer`` opens with the language's yes or no as a word of its own."""
    words = language.token.findall(answer[:40])
    return bool(words) and words[0].casefold() in {language.yes.casefold(), language.no.casefold()}


__all__ = ["asks_yes_or_no", "compares_a_value", "opens_yes_or_no"]
