# `make run` and `make test` do all setup on a fresh Debian machine.
VENV   ?= .venv
PYTHON ?= python3
STAMP  := $(VENV)/.installed

.PHONY: setup deps kube-binaries run test test-fast outage nightly down heal clean

setup: deps $(STAMP)

deps:
	@scripts/install-deps.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	@touch $@

# kube-apiserver, controller manager, scheduler, kwok and etcd at pinned versions: found
# (KUBEBUILDER_ASSETS, cache) or built once from pinned Go modules into ~/.cache/ha-harness/kube;
# and the Porcupine linearizability checker, built once from its pinned module.
kube-binaries: setup
	$(VENV)/bin/python -m harness.kube
	$(VENV)/bin/python -m harness.validate.linearizability

# The main job: GEP-20's zone outage on the reference control plane running for real on the
# local seed, each zone in turn, under probes.
run: setup kube-binaries
	$(VENV)/bin/harness run

# The harness's own tests and every Gherkin feature; JUnit for CI pipelines.
test: setup kube-binaries
	$(VENV)/bin/python -m pytest --junitxml=reports/junit.xml --harness-report $(PYTEST_ARGS)

# Everything but the Kubernetes control plane tests (no Go build needed).
test-fast: setup
	$(VENV)/bin/python -m pytest -m "not kube" $(PYTEST_ARGS)

# The whole suite on the configured provider with the report on (reports/<run-id>/, reports/latest,
# reports/trends.html); non-zero when any scenario fails.
nightly: setup kube-binaries
	$(VENV)/bin/harness nightly -- $(PYTEST_ARGS)

outage: setup
	$(VENV)/bin/python -m pytest -k outage $(PYTEST_ARGS)

down:
	$(VENV)/bin/harness down

heal:
	$(VENV)/bin/harness heal

clean: down
	rm -rf $(VENV) reports/runs reports/*.json reports/*.xml
