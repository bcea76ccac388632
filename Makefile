# The two commands the README promises: `make test` and `make run`. Both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python compiles llama.cpp on first install; both cores make that about twice as fast.
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: test deps venv-deps lint typecheck pytest run demo bench clean

# What pip cannot bring comes from apt-get: the venv module (python3-venv), a C++ compiler for
# llama-cpp-python when pip has no wheel for it, and for the tests Debian's systemd (systemd-analyze,
# and a systemd the service tests boot in private namespaces, from the distribution's python3,
# and Mosquitto, the real MQTT broker the MQTT tests run). As root, also the Debian packages
# scripts/deploy/install.sh checks for (its APT_PACKAGES): tests/package/test_install_systemd.py runs it
# for real, as root only, with apt-get standing in.
# As root, as in CI, whatever is missing is installed; otherwise make names it and stops.
APT_INSTALL = \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing with apt-get:$$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends $$missing; \
	else \
		echo "make $@ needs these Debian packages:$$missing" >&2; \
		echo "install them (sudo apt-get install$$missing) or run 'sudo make deps'" >&2; \
		exit 1; \
	fi

venv-deps:
	@missing=""; \
	$(PYTHON) -c "import ensurepip" 2>/dev/null || missing="$$missing python3-venv"; \
	[ -f $(STAMP) ] || command -v c++ >/dev/null || missing="$$missing g++"; \
	$(APT_INSTALL)

deps: venv-deps
	@missing=""; \
	command -v systemd-analyze >/dev/null || missing="$$missing systemd"; \
	command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || missing="$$missing mosquitto"; \
	[ -x /usr/bin/python3 ] || missing="$$missing python3 python3-venv"; \
	if [ "$$(id -u)" = 0 ]; then \
		for package in $$(sed -n -E 's/^readonly APT_PACKAGES=\((.*)\)$$/\1/p' scripts/deploy/install.sh); do \
			dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q 'install ok installed' \
				|| missing="$$missing $$package"; \
		done; \
	fi; \
	$(APT_INSTALL)

$(STAMP): pyproject.toml | venv-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24" "setuptools>=77"
	$(BIN)/python -m pip install --quiet -e ".[dev,default-model]"
	touch $@

test: deps lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check daemon skills tests scripts

# mypy cannot follow setuptools' editable finder, so it reads the package through a tree of
# links that mirrors the installed layout (daemon/ -> edge_agentd, skills/ -> edge_agentd.skills).
typecheck: $(STAMP)
	rm -rf build/mypy && mkdir -p build/mypy/edge_agentd
	for entry in daemon/*; do ln -s "$$PWD/$$entry" build/mypy/edge_agentd/; done
	ln -s "$$PWD/skills" build/mypy/edge_agentd/skills
	MYPYPATH=build/mypy $(BIN)/mypy -p edge_agentd

pytest: $(STAMP) | deps
	$(BIN)/pytest

run: $(STAMP)
	$(BIN)/edge-agent serve --model default

# The same on a simulated Raspberry Pi's sensors, for a machine that has none (README, "Try it").
demo: $(STAMP)
	$(BIN)/edge-agent serve --model default --demo

# Each benchmark exits non-zero when a budget is missed; every one in scripts/bench/ runs (as a
# module of the scripts.bench package, from here), each verdict is printed, and make fails if any
# missed.
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,default-model,bench]"
	@status=0; for bench in scripts/bench/bench_*.py; do \
		module=scripts.bench.$$(basename "$$bench" .py); \
		echo "== $$module"; $(BIN)/python -m "$$module" || status=1; \
	done; exit $$status

clean:
	rm -rf $(VENV) build .mypy_cache .pytest_cache .ruff_cache
