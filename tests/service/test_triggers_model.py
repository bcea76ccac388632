"""One trigger firing answered by the embedded Gemma 3 270M: the answer names the reading.

The firing's query leads with the reading (firing_query). The 270M names it for this question;
asked "How warm is the freezer probe?" it named the probe's id instead, so the phrasing of a
trigger's query matters on a model this small.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from daemon_harness import running_server, wait_for
from triggers_harness import PROBE, Probe, builtin_registry

from edge_agentd.agent.protocol import ModelHandle
from edge_agentd.skills.demo import SysfsTree

CONFIG = f"""
[model]
n_ctx = 2048

[[triggers]]
name = "freezer"
when = {{ skill = "read_sensor", arguments = {{ name = "{PROBE}" }}, above = -10.0, check_every = "1s" }}
query = "What temperature does the freezer probe read?"
"""


def test_a_threshold_firing_is_answered_with_the_reading(sysfs: SysfsTree) -> None:
    from edge_agentd.model import load_model

    probe = Probe(sysfs, -20.0)
    results: list[dict[str, Any]] = []
    heard = threading.Event()

    def load() -> ModelHandle:
        return load_model(n_ctx=2048)

    registry = builtin_registry(sysfs.root)
    with running_server(config=CONFIG, load=load, registry=registry, wait_ready=False) as (
        server,
        _,
    ):
        wait_for(lambda: server.lifecycle.phase == "ready", 300)
        server.triggers.runner.listeners.append(lambda r: (results.append(r), heard.set()))
        probe.set(-4.5)
        assert heard.wait(300), "the firing's run never ended"
    (result,) = results
    assert result["outcome"] == "answered", result
    assert result["reading"]["value"] == -4.5
    # The reading, in either of the forms the probe's result gives it: -4.5 °C, or 23.9 °F.
    assert re.search(r"-?4\.5 °C|23\.9 °F", result["answer"]), result["answer"]
