VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime

.PHONY: install install-runtime test lint demo bench soak mutation audit clean lock

# `install`: the package with its dev tools (make test, make bench); `install-runtime`: the package and the
# emulator only (make demo). Both take the exact versions of the lock files (`make lock`).
install: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.lock
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip >/dev/null
	$(PY) -m pip install -q -c requirements-dev.lock -e '.[dev]'
	touch $(STAMP) $(RUNTIME_STAMP)

install-runtime: $(RUNTIME_STAMP)

$(RUNTIME_STAMP): pyproject.toml requirements.lock
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip >/dev/null
	$(PY) -m pip install -q -c requirements.lock -e '.[emulator]'
	touch $(RUNTIME_STAMP)

lint: install
	$(VENV)/bin/ruff check reconciler tests benchmarks
	$(VENV)/bin/mypy

test: install lint
	$(VENV)/bin/pytest -n 2 tests

# The demo's secrets: the manifests reference them by name; the emulator accepts any value.
DEMO_ENV := VENDOR_A_KEY=demo-vendor-a-key AGENT_TOKEN=demo-agent-token

demo: install-runtime
	rm -rf .demo && mkdir -p .demo
	@echo "== 1. plan against an empty emulator (.demo/state.db)"
	$(DEMO_ENV) $(VENV)/bin/reconciler plan manifests --emulator .demo/state.db
	@echo "== 2. apply"
	$(DEMO_ENV) $(VENV)/bin/reconciler apply manifests --emulator .demo/state.db --auto-approve
	@echo "== 3. plan again: it must be empty"
	$(DEMO_ENV) $(VENV)/bin/reconciler plan manifests --emulator .demo/state.db --detailed-exitcode
	@echo "Converged: the second plan is empty."

# Long (about half an hour on a shared 2-core machine): three scales, then a million examples.
bench: install
	$(PY) -m benchmarks.run --scale 0.1 --no-rate-limit --profile
	$(PY) -m benchmarks.run --scale 0.3 --no-rate-limit
	$(PY) -m benchmarks.run --scale 1.0 --profile
	$(PY) -m benchmarks.async_bench --scale 0.1 --write-doc
	$(PY) -m benchmarks.async_bench --scale 0.3 --write-doc
	$(PY) -m benchmarks.async_bench --scale 1.0 --write-doc
	$(PY) -m benchmarks.rehearse_bench --scale 1.0
	$(PY) -m benchmarks.big
	$(PY) -m benchmarks.model_bench --write-doc
	$(PY) -m benchmarks.startup --write-doc
	$(PY) -m benchmarks.policy_bench
	$(PY) -m benchmarks.pull_bench --scale 1.0

soak: install
	$(PY) -m tests.soak
	RECONCILER_STATEFUL_EXAMPLES=300 RECONCILER_STATEFUL_STEPS=25 $(VENV)/bin/pytest -q -p no:randomly \
		tests/reliability/test_two_trees_stateful.py
	RECONCILER_PULL_ENV_EXAMPLES=300 $(VENV)/bin/pytest -q -p no:randomly tests/pull/test_two_environments_property.py

# Long (an hour or more on a shared 2-core machine), not part of `make test`: mutmut over the core,
# then docs/testing.md from its results (tests/mutation_report.py; mutants/ is a scratch copy).
mutation: install
	nice -n 10 $(PY) -m tests.mutation_report --run --write docs/testing.md

# Known vulnerabilities in the installed dependencies (pip-audit; needs PyPI, skips plainly without it).
audit: install
	$(PY) -m tests.audit

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache mutants

# The lock files: exact versions of every dependency, resolved in a clean virtual environment from the
# ranges in pyproject.toml. `make install`, `make demo`, the Dockerfile and CI install with them as
# constraints. Run after changing a dependency (see README, "Dependencies").
LOCK_VENV := .lock-venv
lock:
	rm -rf $(LOCK_VENV) && python3 -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q --upgrade pip >/dev/null
	$(LOCK_VENV)/bin/python -m pip install -q '.[emulator]'
	{ echo "# make lock: the runtime's exact versions (pyproject.toml dependencies + the emulator extra)"; \
	  $(LOCK_VENV)/bin/python -m pip freeze --exclude reconciler; } > requirements.lock
	$(LOCK_VENV)/bin/python -m pip install -q '.[dev]'
	{ echo "# make lock: the exact versions of make test and make bench (runtime + dev extra)"; \
	  $(LOCK_VENV)/bin/python -m pip freeze --exclude reconciler; } > requirements-dev.lock
	rm -rf $(LOCK_VENV)
