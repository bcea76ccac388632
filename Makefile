# The two commands the README promises: `make test` and `make run`. Both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python compiles llama.cpp on first install; both cores make that about twice as fast.
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: test lint typecheck pytest run bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24" "setuptools>=77"
	$(BIN)/python -m pip install --quiet -e ".[dev,default-model]"
	touch $@

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check daemon skills tests scripts

# mypy cannot follow setuptools' editable finder, so it reads the package through a tree of
# links that mirrors the installed layout (daemon/ -> edge_agent, skills/ -> edge_agent.skills).
typecheck: $(STAMP)
	rm -rf build/mypy && mkdir -p build/mypy/edge_agent
	for entry in daemon/*; do ln -s "$$PWD/$$entry" build/mypy/edge_agent/; done
	ln -s "$$PWD/skills" build/mypy/edge_agent/skills
	MYPYPATH=build/mypy $(BIN)/mypy -p edge_agent

pytest: $(STAMP)
	$(BIN)/pytest

run: $(STAMP)
	$(BIN)/edge-agent serve --model default

# Each benchmark exits non-zero when a budget is missed; run them all and report every verdict.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,default-model,bench]"
	-$(BIN)/python scripts/bench_overhead.py
	-$(BIN)/python scripts/bench_model.py
	-$(BIN)/python scripts/bench_ipc.py

clean:
	rm -rf $(VENV) build .mypy_cache .pytest_cache .ruff_cache
