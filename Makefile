# `make run` and `make test` do all setup on a fresh Debian machine.
VENV   ?= .venv
PYTHON ?= python3
STAMP  := $(VENV)/.installed

.PHONY: setup deps run test outage down heal clean

setup: deps $(STAMP)

deps:
	@scripts/install-deps.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	@touch $@

# The main job: every zone of the embedded local region goes down in turn under probes.
run: setup
	$(VENV)/bin/harness run

# The harness's own tests and every Gherkin feature; JUnit for CI pipelines.
test: setup
	$(VENV)/bin/python -m pytest --junitxml=reports/junit.xml $(PYTEST_ARGS)

outage: setup
	$(VENV)/bin/python -m pytest -k outage $(PYTEST_ARGS)

down:
	$(VENV)/bin/harness down

heal:
	$(VENV)/bin/harness heal

clean: down
	rm -rf $(VENV) reports/runs reports/*.json reports/*.xml
