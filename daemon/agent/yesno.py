"""What a yes-or-no question asks, for the grounding rules: whether it asks one at all (not one
that compares a value with a number), the state it asks about, and whether an answer opens
with the language's yes or no."""

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


def state_asked(question: Question) -> str | None:
    """The state ``question`` asks about; none where the grammar's state is the phrase's last
    word before a comparison with a number: "Is the soil moisture below 30 %?" compares the
    soil moisture, and asks no state "moisture" of the soil."""
    language, text, state = question.language, question.text, question.state
    if state is None:
        return None
    for pattern in (language.threshold, language.share):
        found = pattern.search(text) if pattern is not None else None
        before = language.token.findall(text[: found.start()]) if found is not None else []
        if before and before[-1].casefold() == state.casefold():
            return None
    return state


def opens_yes_or_no(answer: str, language: Language) -> bool:
    """Whether ``answer`` opens with the language's yes or no as a word of its own."""
    words = language.token.findall(answer[:40])
    return bool(words) and words[0].casefold() in {language.yes.casefold(), language.no.casefold()}


__all__ = ["asks_yes_or_no", "compares_a_value", "opens_yes_or_no", "state_asked"]
