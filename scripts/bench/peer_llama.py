"""llama-cpp-python's own ``Llama`` class made safe to load the embedded model, for the peers.

The benchmarks' peer (bench_competence.py) and the systemd sandbox test's workload load a model
through llama-cpp-python's high-level ``Llama``, not the daemon's runtime. On a CPU with Intel
AMX a native build routes its matrix products through kernels that crash on the embedded Gemma
(see ``edge_agentd.model.runtime.extra_buffers_safe``); the daemon's runtime turns them off there,
and :func:`guard_high_level_llama` makes ``Llama`` do the same. It patches llama_cpp's defaults,
which is why it lives here, with the scripts and tests that need it, not in the package.
"""

from __future__ import annotations

from typing import Any


def guard_high_level_llama() -> None:
    """Make ``llama_cpp.Llama`` load models with :func:`extra_buffers_safe`'s choice too: it reads
    its defaults from ``llama_model_default_params``."""
    from edge_agentd.model.bindings import llama_cpp
    from edge_agentd.model.runtime import extra_buffers_safe

    defaults = llama_cpp.llama_model_default_params
    if getattr(defaults, "guarded", False):
        return

    def guarded() -> Any:
        params = defaults()
        params.use_extra_bufts = extra_buffers_safe()
        return params

    guarded.guarded = True  # type: ignore[attr-defined]
    llama_cpp.llama_model_default_params = guarded  # type: ignore[attr-defined]
