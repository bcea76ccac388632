"""The repository's own scripts: the benchmarks (``scripts.bench``), what the tests and the
benchmarks both stand on (``scripts.testbed``), the installer and the examples. Not shipped: run
from the checkout's root, ``python -m scripts.bench.NAME``."""
