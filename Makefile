# `make run` and `make test` do all setup on a fresh Debian machine.
VENV   ?= .venv
PYTHON ?= python3
STAMP  := $(VENV)/.installed

.PHONY: setup deps kube-binaries etcd-builds prefetch run test test-fast docs outage nightly must-fail bugs down heal clean

setup: deps $(STAMP)

deps:
	@scripts/install-deps.sh

# pip's scratch inside the venv, removed after: pip leaves a directory per wheel it unpacked in
# the system's temporary directory.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	mkdir -p $(VENV)/pip-tmp
	TMPDIR=$(abspath $(VENV))/pip-tmp $(VENV)/bin/pip install -q --upgrade pip
	TMPDIR=$(abspath $(VENV))/pip-tmp $(VENV)/bin/pip install -q -e '.[dev]'
	rm -rf $(VENV)/pip-tmp
	@touch $@

# Every Go program a run uses (harness/builds.py): etcd, kube-apiserver, controller manager,
# scheduler and kwok at pinned versions (KUBEBUILDER_ASSETS, or built once from pinned Go modules
# into ~/.cache/ha-harness), the Porcupine linearizability checker, kube-proxy, the AWS cloud
# controller manager, gardener's machine-controller-manager and gardener-resource-manager, and the
# power-loss filesystem, each built once from its pinned module; each one's time printed.
kube-binaries: setup
	$(VENV)/bin/python -m harness.builds

# etcd at every release harness.bugs needs (the buggy ones, some with gofail failpoints), built
# once from pinned Go modules into ~/.cache/ha-harness/etcd; `make bugs` builds them on demand too.
etcd-builds: setup
	$(VENV)/bin/python -m harness.etcd_builds

# Everything the suite, `make nightly` and `make bugs` build or download, into ~/.cache (the
# harness's builds under ha-harness/, Go's build cache, pip's) and ~/go/pkg/mod: for CI runners that
# keep those between jobs (docs/ci/). A warm cache makes each of these a lookup.
prefetch: setup
	$(VENV)/bin/python -m harness.builds --all

# The main job: GEP-20's zone outage on the reference control plane running for real on the
# local seed, each zone in turn, under probes.
run: setup kube-binaries
	$(VENV)/bin/harness run

# The harness's own tests and every Gherkin feature but the @long ones (make nightly, make bugs), and
# the @short must-fail scenarios (make must-fail runs them all); JUnit for CI pipelines. The Go
# programs build in the background meanwhile (reports/builds.log): the tests that need none run
# first (pyproject.toml's testpaths), a test that needs one waits for its build. The run must leave
# nothing on the machine outside the repository and ~/.cache (scripts/leaves_nothing.py). The tests
# run in pytest-xdist workers, each with a region of its own: as many as the machine takes
# (harness/workers.py; WORKERS=1 for one, WORKERS=0 for none), in collection order, the tests that
# share names in one group (conftest.py).
WORKERS ?= auto
test: setup
	$(VENV)/bin/python scripts/leaves_nothing.py -- $(VENV)/bin/python -m harness.builds --all --beside -- \
		$(VENV)/bin/python -m pytest -n $(WORKERS) --dist loadgroup --no-loadscope-reorder \
		--junitxml=reports/junit.xml --harness-report -m "not long" $(PYTEST_ARGS)

# The documentation site at http://127.0.0.1:8000, its reference pages written from the code
# (make test builds it in strict mode: tests/unit/test_docs.py).
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

# Everything but the Kubernetes control plane tests (no Go build needed).
test-fast: setup
	$(VENV)/bin/python -m pytest -m "not kube" $(PYTEST_ARGS)

# The whole suite on the configured provider with the report on (reports/<run-id>/, reports/latest,
# reports/trends.html); non-zero when any scenario fails.
nightly: setup kube-binaries
	HARNESS_MUST_FAIL=all $(VENV)/bin/harness nightly -- $(PYTEST_ARGS)
	$(VENV)/bin/harness explore --minutes 10

# Every must-fail scenario (make test runs one per feature file): each Then-step failing on a
# real run where what it names did not hold. About 20 minutes.
must-fail: setup kube-binaries
	HARNESS_MUST_FAIL=all $(VENV)/bin/python -m pytest tests/must_fail $(PYTEST_ARGS)

# Historical etcd bugs (features/bugs.feature): each scenario on the release that had the bug must
# fail in the check named after it, in at least 9 of 10 tries; on a fixed release it must pass.
# Long: several minutes per bug. BUGS_ARGS="--tries 3 --issue 14370" narrows it.
bugs: setup kube-binaries
	$(VENV)/bin/python -m harness.bugs $(BUGS_ARGS)

outage: setup
	$(VENV)/bin/python -m pytest -k outage $(PYTEST_ARGS)

down:
	$(VENV)/bin/harness down

heal:
	$(VENV)/bin/harness heal

clean: down
	rm -rf $(VENV) reports/runs reports/*.json reports/*.xml
