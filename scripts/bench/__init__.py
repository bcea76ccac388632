"""The benchmarks, each run from the checkout's root as ``python -m scripts.bench.NAME`` (``make
bench`` runs every ``bench_*``). What several share is a module here; what the tests share with
them is in ``scripts.testbed``; the fake Raspberry Pi is the demo device's
(``edge_agentd.skills.demo``), with a /proc of the benchmarks' own (``scripts.bench.device``)."""

from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
"""The checkout's root: the directory a benchmark's own helper process is started in, so that
``python -m scripts.bench.NAME`` finds the package."""
