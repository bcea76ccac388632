"""What a client asks of a run beside its question: the one list both clients' ``run`` send.

The daemon's side of these is :class:`~edge_agentd.protocol.wire.RunRequest`; the agent's, once
the daemon has applied its policy, :class:`~edge_agentd.agent.run.RunOptions`.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class AskOptions:
    """A run's options as a client asks them; None leaves each to the daemon (or the client)."""

    workflow: str | None = None
    """The name of a workflow the daemon's config defines."""
    max_iterations: int | None = None
    timeout: float | None = None
    """Seconds the run may take, given to the daemon as its deadline so that it interrupts the
    run and still answers; None: the client's own timeout."""

    def seconds(self, default_timeout: float) -> float:
        """How long the run may take: ``timeout``, else the client's ``default_timeout``."""
        return default_timeout if self.timeout is None else self.timeout

    def fields(self, query: str, default_timeout: float) -> dict[str, Any]:
        """The ``run`` request's fields for ``query``, in the wire's order; a None is not sent."""
        fields = {
            "query": query,
            "workflow": self.workflow,
            "max_iterations": self.max_iterations,
            "deadline_ms": self.seconds(default_timeout) * 1000,
        }
        return {name: value for name, value in fields.items() if value is not None}


AS_THE_DAEMON_SAYS = AskOptions()
"""No options: the daemon's workflow-less run, its iterations, and the client's timeout."""

__all__ = ["AS_THE_DAEMON_SAYS", "AskOptions"]
