"""A second skill for a question in two parts (docs/design.md, "Small models").

After its first result a 270M model is asked for the answer: asked to choose between answering
and calling another skill, it nearly always calls another. So whether a second skill is needed is
judged the way the first was chosen, noisy-channel, from the registry's descriptions alone: the
question is scored after the first call's description joined with each other candidate's (all
of them: ranked by their own descriptions first, the 270M put the ones explaining the part the
first already explains on top), and after the first call's description joined with a
description of no skill at all (:func:`content_free`).
"Which is warmer, the CPU or the BME280 sensor?" is much likelier once the CPU's skill is in view
beside the BME280's; "What is the CPU temperature?" is not, since the first description explains
all of it. The second call is made only when the best join beats the content-free join by a
margin in nats; it is never a call already made, and there is at most one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from edge_agent.agent.events import AgentState, CallSkillAction, SkillResultObservation
from edge_agent.agent.prompt import ChatFormat
from edge_agent.agent.protocol import ModelHandle

if TYPE_CHECKING:
    from edge_agent.agent.guidance import Candidate

log = logging.getLogger(__name__)


def content_free(fmt: ChatFormat) -> str:
    """A skill description with no content, in the candidates' form: how likely a question is
    after it is the baseline a fitting skill must beat."""
    return f"{fmt.user_prefix}The skill : \nQuestions it answers:\n-"


def joined(first: str, second: str, fmt: ChatFormat) -> str:
    """Two candidates' descriptions as one text the question is scored after: the first's, its
    open list of questions closed, then the second's in the same turn."""
    return f"{first.removesuffix(chr(10) + '-')}\n{second.removeprefix(fmt.user_prefix)}"


def first_candidate(call: CallSkillAction, candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate ``call`` was: the one with its arguments, else its skill's open one."""
    key = (call.skill_name, json.dumps(call.arguments))
    same = [c for c in candidates if c.skill_name == call.skill_name]
    return next((c for c in same if c.key == key), None) or next(
        (c for c in same if c.arguments is None), None
    )


def second_call(
    model: ModelHandle, query: str, first: Candidate, left: Sequence[Candidate], margin: float
) -> tuple[Candidate | None, float]:
    """The candidate of ``left`` to call after ``first`` for ``query`` (defused), and by how many
    nats its join beat the content-free join; None when none beats it by ``margin``."""
    others = [c for c in left if c.key != first.key]
    if not others:
        return None, 0.0
    fmt = model.chat_format
    prompts = [joined(first.description, c.description, fmt) for c in others]
    prompts.append(joined(first.description, content_free(fmt), fmt))
    scores = model.likelihood(prompts, f" {query}")
    best = max(range(len(others)), key=scores.__getitem__)
    gain = scores[best] - scores[-1]
    return (others[best] if gain >= margin else None), gain


def follow_up(
    model: ModelHandle,
    state: AgentState,
    candidates: Sequence[Candidate],
    left: Sequence[Candidate],
    margin: float | None,
) -> Candidate | None:
    """Right after the run's first call returned: the second skill its question needs, else None
    (and None at any other point, or without a ``margin``). ``left``: the candidates not yet
    called. Raises what ``model.likelihood`` raises."""
    events = state.stream.root
    made = [e for e in events if isinstance(e, CallSkillAction)]
    if margin is None or len(made) != 1 or not isinstance(events[-1], SkillResultObservation):
        return None
    first = first_candidate(made[0], candidates)
    if first is None:
        return None
    second, gain = second_call(model, model.chat_format.defuse(state.query), first, left, margin)
    log.debug("a second call after %s gains %.2f nats: %s", first.skill_name, gain, second)
    return second


__all__ = ["content_free", "first_candidate", "follow_up", "joined", "second_call"]
