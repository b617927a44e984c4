VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test lint demo bench soak clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip >/dev/null
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

lint: install
	$(VENV)/bin/ruff check reconciler tests benchmarks
	$(VENV)/bin/mypy

test: install lint
	$(VENV)/bin/pytest -n 2 tests

# The demo's secrets: the manifests reference them by name; the emulator accepts any value.
DEMO_ENV := VENDOR_A_KEY=demo-vendor-a-key AGENT_TOKEN=demo-agent-token

demo: install
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
	$(PY) -m benchmarks.big
	$(PY) -m benchmarks.model_bench --write-doc
	$(PY) -m benchmarks.policy_bench

soak: install
	$(PY) -m tests.soak
	RECONCILER_STATEFUL_EXAMPLES=300 RECONCILER_STATEFUL_STEPS=25 $(VENV)/bin/pytest -q -p no:randomly \
		tests/reliability/test_two_trees_stateful.py

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache
