"""The answer a guided small model gives: the sentences it may be, and the one it chooses.

The engine renders every sentence an answer may be from the run's results, bound to what the
question asks (:mod:`~edge_agentd.guidance.render`); the model only chooses among them, by its
likelihood of each, whole, as its reply, and the engine writes every word
(``made_by="engine"``). "I cannot tell" is among them where the subject was not judged, and
alone where it was judged unknown to the evidence or no sentence is about it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from edge_agentd.agent.events import AgentState, SkillResultObservation
from edge_agentd.agent.language import Language
from edge_agentd.agent.protocol import Completion, ModelHandle
from edge_agentd.agent.question import Question, in_language
from edge_agentd.agent.resultlines import Line
from edge_agentd.guidance.asked import asked_lines, candidate_lines
from edge_agentd.guidance.candidates import Candidate
from edge_agentd.guidance.choicewords import choice_words
from edge_agentd.guidance.compared import asked_about
from edge_agentd.guidance.declines import cannot_tell_sentence, failure_reason
from edge_agentd.guidance.followup import call_words, two_parts_answered
from edge_agentd.guidance.render import Skills, both_parts, bound_sentences
from edge_agentd.guidance.subject import asks_unknown

ANSWER_HEAD = '{"final_answer": "'


def answer_sentences(
    state: AgentState,
    language: Language,
    *,
    model: ModelHandle | None = None,
    candidates: Sequence[Candidate] = (),
    skills: Skills | None = None,
    know_subject: bool = True,
    state_asked: bool = True,
    part_margin: float | None = None,
) -> tuple[list[str], list[str]]:
    """The sentences the answer to ``state``'s question may be, rendered from its results
    (:mod:`~edge_agentd.guidance.render`) and bound to what it asks
    (:func:`~edge_agentd.guidance.render.bound_sentences`; ``skills`` gives each skill's
    words): those of its first part, and those of its second (empty unless the question is
    in two parts with a result for each and ``part_margin`` splits it). "I cannot tell" alone
    where the subject is unknown to the evidence (judged with ``know_subject``) or no sentence
    is about it; beside the others where the subject was not judged. With ``model`` and
    ``state_asked``, the lines stated are those the question asks about
    (:func:`~edge_agentd.guidance.asked.asked_lines`) where any of them is bound, else every
    bound line: "Humidity?" is not answered with the pressure the model scored first."""
    events = state.stream.root
    observed = [e for e in events if isinstance(e, SkillResultObservation)]
    question = in_language(state.question, language)
    about = asked_about(question)
    reason = failure_reason(about, events)
    cannot = cannot_tell_sentence(about, reason, results=bool(observed))
    judged = None
    if model is not None and know_subject:
        judged = asks_unknown(model, about, events, candidates)
    if judged:
        return [cannot], []
    narrowed, whole = [], []
    called = call_words(events, candidates)
    listed = [(c.arguments, c.gets) for c in candidates if c.arguments and c.gets]
    named = choice_words(listed, language)
    for event in observed:
        every = candidate_lines(event.result, state.query, language)
        asked = None
        if model is not None and state_asked:
            results = [(event.skill_name, event.result)]
            asked = asked_lines(model, state.query, results, language)
        lines: list[Line] = asked or every
        narrowed.append((event.skill_name, event.result, lines))
        whole.append((event.skill_name, event.result, every))

    def bound(asked: Question, pick: slice) -> list[str]:
        words = called[pick]
        every = bound_sentences(whole[pick], asked, skills, words, named)
        # Of those bound among every line, the ones the model's lines say: a line it scored
        # that a line closer to the question outranks ("timezone" of "Current time?", beside
        # ``time``) is not offered.
        chosen = bound_sentences(narrowed[pick], asked, skills, words, named)
        return [s for s in chosen if s in every] or every

    if part_margin is not None and two_parts_answered(state, question):
        # Each part's sentences, its own subject naming what its result says.
        parts = question.parts
        first, second = (bound(q, slice(i, i + 1)) for i, q in enumerate(parts))
        if first and second:
            return [*first, *([cannot] if judged is None else [])], second
    stated = bound(question, slice(None))
    if not stated:
        return [cannot], []
    # Where the subject was judged known, the answer states a value: "I cannot tell" was
    # judged too. Not judged (no subject, no scores), the model may still choose it.
    return [*stated, *([cannot] if judged is None else [])], []


def chosen_answer(
    model: ModelHandle,
    prompt: str,
    state: AgentState,
    sentences: tuple[list[str], list[str]],
    *,
    grounded: Callable[[str], bool] | None,
    language: Language,
) -> str:
    """Of ``sentences`` (:func:`answer_sentences`' two parts), the one the model finds likeliest
    as its reply, and for a question in two parts, the likeliest of the second part's after it;
    only those ``grounded`` takes (the loop's grounding rules) are offered."""
    options, second = sentences
    if grounded is None:
        grounded = _anything
    # Only what the loop takes is offered; with nothing left, "I cannot tell".
    question = in_language(state.question, language)
    results = any(isinstance(e, SkillResultObservation) for e in state.stream.root)
    cannot = cannot_tell_sentence(asked_about(question), results=results)
    options = [o for o in options if grounded(o)] or [cannot]
    chosen = _likeliest(model, prompt, ANSWER_HEAD, options)
    second = [s for s in second if grounded(both_parts(chosen, s, language))]
    if second and not language.declines(chosen):
        stem = chosen.removesuffix(".")
        both = {s: both_parts(chosen, s, language) for s in second}
        joined = {both[s][len(stem) :]: both[s] for s in second}
        # Scored after the first part as the model's own start: one branch per second part.
        head = f"{ANSWER_HEAD}{_json_text(stem)}"
        chosen = joined[_likeliest(model, prompt + head, "", list(joined))]
    return Completion(f'{ANSWER_HEAD}{_json_text(chosen)}"}}', made_by="engine")


def _anything(answer: str) -> bool:
    """Takes every answer: no grounding rules were given."""
    return True


def _json_text(text: str) -> str:
    """``text`` as it stands inside a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _likeliest(model: ModelHandle, prompt: str, head: str, options: Sequence[str]) -> str:
    """Of ``options``, the one the model is likeliest to write after ``prompt`` and ``head``,
    each closed as a JSON string and object; the only one without asking. Each is scored
    whole: by its first token that differs alone, a small model takes a sentence whose opening
    is likely and whose rest says nothing of the question."""
    if len(options) == 1:
        return options[0]
    branches = [f'{head}{_json_text(text)}"}}' for text in options]
    scores = [sum(s) for s in model.score(prompt, branches, whole=True)]
    return options[max(range(len(options)), key=scores.__getitem__)]


__all__ = ["ANSWER_HEAD", "answer_sentences", "chosen_answer"]
