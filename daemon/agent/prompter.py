"""What the model reads, for one agent: the system text, rendered once per registry version,
workflow and choices, and each run's prompt, rendered on from the events added since its last
step (the run keeps what was rendered, :class:`~edge_agentd.agent.run.RunCache`).

A model that drives the loop is told the grounding rules; a guided one's calls are the engine's,
and its prompt closes with the guide's worked answers instead (docs/design.md, "Grounding").
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

from edge_agentd.agent.actions import ToolFormat
from edge_agentd.agent.events import AgentState
from edge_agentd.agent.guide import Guide
from edge_agentd.agent.prompt import render_event, render_system
from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.agent.registry import Registry, RunChoices, SkillSpec
from edge_agentd.agent.run import RunCache
from edge_agentd.agent.workflow import Soul, Workflow

_MAX_SYSTEMS = 64

SystemKey = tuple[int, Workflow | None, RunChoices]
PromptKey = tuple[Soul, str | None, str | None, ToolFormat | None]


class System(NamedTuple):
    """The system part of a prompt, and the skills it offers."""

    text: str
    names: dict[str, None]
    """The skills the model may call, in the prompt's order (a dict: a set that keeps it)."""
    skills: tuple[SkillSpec, ...]
    """The same skills' specs."""


_SYSTEMS: weakref.WeakKeyDictionary[Registry, dict[PromptKey, dict[SystemKey, System]]] = (
    weakref.WeakKeyDictionary()
)
"""Each registry's system parts as rendered, for each soul, closing part and rules, shared by
every agent of it: an agent made for each question (a trigger's, a script's) renders none anew.
A system part is never changed once made."""


class Prompter:
    """The prompts of one agent: its registry, soul, guide and grounding rules, for its model."""

    def __init__(
        self,
        handle: ModelHandle,
        registry: Registry,
        soul: Soul,
        guide: Guide,
        rules: str | None,
    ) -> None:
        self.handle = handle
        self.registry = registry
        self.soul = soul
        self.guide = guide
        examples = guide.answer_examples
        self.examples = examples
        self.rules = rules if examples is None else None
        shared = _SYSTEMS.setdefault(registry, {})
        if len(shared) > _MAX_SYSTEMS:
            shared.clear()
        # The model's own tool format, where it speaks one, writes the catalogue its way.
        self.calls = handle.chat_format.calls
        self._systems = shared.setdefault((soul, self.examples, self.rules, self.calls), {})

    def system(self, workflow: Workflow | None, choices: RunChoices = ()) -> System:
        """The system part for ``workflow``, rendered once per registry version and choices:
        while the device has the same sensors, the preamble stays byte-identical."""
        key = (self.registry.version, workflow, choices)
        system = self._systems.get(key)
        if system is None:
            if len(self._systems) > _MAX_SYSTEMS:
                self._systems.clear()
            skills = self.registry.select(None if workflow is None else workflow.allowed_skills)
            text = render_system(
                self.soul,
                workflow,
                skills,
                self.examples,
                self.rules,
                choices=dict(choices),
                calls=self.calls,
            )
            names = dict.fromkeys(s.name for s in skills)
            system = self._systems[key] = System(text, names, tuple(skills))
        return system

    def run_system(self, cache: RunCache) -> System:
        """:meth:`system` for the run that keeps ``cache``, with the skills' choices read at its
        first step and kept there, so the run's prompt, grammar and checks agree."""
        workflow = cache.workflow
        if cache.choices is None:
            allowed = None if workflow is None else workflow.allowed_skills
            cache.choices = self.registry.choices(allowed)
        return self.system(workflow, cache.choices)

    def render(self, state: AgentState, system: str, cache: RunCache) -> str:
        """The prompt for ``state``'s next step, rendering only the events added since
        ``cache`` last saw it."""
        fmt = self.handle.chat_format
        key = (fmt, system)
        if cache.prompt_key != key:
            cache.prompt_key, cache.rendered = key, 0
            cache.prompt = fmt.opening(system, state.query)
        events = state.stream.root
        if cache.rendered < len(events):
            guide, handle, query = self.guide, self.handle, state.query
            question = query if guide.restate_question else None
            lines = guide.result_lines
            cache.prompt += "".join(
                [
                    render_event(e, fmt, question, guide.focus(handle, query, e), lines=lines)
                    for e in events[cache.rendered :]
                ]
            )
            cache.rendered = len(events)
        return cache.prompt


__all__ = ["Prompter", "System"]
