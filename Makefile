VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime

.PHONY: install install-runtime test lint demo bench soak mutation audit clean lock

# `install`: the package with its dev tools (make test, make bench); `install-runtime`: the package and the
# emulator only (make demo). Both install pip and setuptools from requirements-pip.lock first, then every
# dependency from a lock file (`make lock`) with `--require-hashes`: exact versions, each file checked against
# its sha256. The package itself has no hash: it is installed last, with `--no-deps` (nothing unpinned comes
# in) and `--no-build-isolation` (built by the setuptools just verified, not one fetched for the build).
PIP_INSTALL := $(PY) -m pip install -q --require-hashes
install: $(STAMP)

$(STAMP): pyproject.toml requirements-pip.lock requirements-dev.lock
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP_INSTALL) -r requirements-pip.lock
	$(PIP_INSTALL) -r requirements-dev.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP) $(RUNTIME_STAMP)

install-runtime: $(RUNTIME_STAMP)

$(RUNTIME_STAMP): pyproject.toml requirements-pip.lock requirements.lock
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP_INSTALL) -r requirements-pip.lock
	$(PIP_INSTALL) -r requirements.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(RUNTIME_STAMP)

# lint-imports: the layers' contracts in pyproject.toml ([tool.importlinter]); the graph is built afresh each time.
lint: install
	$(VENV)/bin/ruff check reconciler tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

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
	$(PY) -m benchmarks.environments_bench --scale 0.3 --write-doc
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

# Long (hours on a shared 2-core machine), not part of `make test`: mutmut over what is left to check
# in the core, then docs/testing.md from its results (tests/mutation_report.py; mutants/ is a scratch
# copy, the results are kept in tests/mutation_results.json: a run interrupted goes on from there).
mutation: install
	nice -n 10 $(PY) -m tests.mutation_report --run --write docs/testing.md

# Known vulnerabilities in the installed dependencies (pip-audit; needs PyPI, skips plainly without it).
audit: install
	$(PY) -m tests.audit

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache mutants

# The lock files (`make lock`), each resolved by uv for every platform and Python the package supports
# (`--universal`: Linux, macOS, Windows; markers such as uvloop's kept) with the sha256 of every file the
# index lists for each pinned version (wheels of all platforms and the sdist):
#   requirements-pip.lock  pip and setuptools, installed first into every environment
#   requirements-dev.lock  runtime + the dev extra (make install, make test, make bench)
#   requirements.lock      runtime + the emulator extra (make demo, the Dockerfile), at the dev lock's versions
#   requirements-uv.lock   uv itself, the resolver used here
# A version already in a lock file is kept if it still fits pyproject.toml: `make lock` adds and removes
# what changed there and upgrades nothing. `make lock LOCK_FLAGS=--upgrade` takes the newest versions the
# ranges allow; `LOCK_FLAGS='--upgrade-package NAME'` one package. See README, "Dependencies".
LOCK_VENV := .lock-venv
LOCK_FLAGS ?=
UV_COMPILE = $(LOCK_VENV)/bin/uv pip compile --quiet --universal --generate-hashes \
	--custom-compile-command 'make lock' $(LOCK_FLAGS)
lock:
	rm -rf $(LOCK_VENV) && python3 -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q --require-hashes -r requirements-pip.lock
	$(LOCK_VENV)/bin/python -m pip install -q --require-hashes -r requirements-uv.lock
	printf 'uv\n' | $(UV_COMPILE) - -o requirements-uv.lock
	printf 'pip\nsetuptools\n' | $(UV_COMPILE) - -o requirements-pip.lock
	$(UV_COMPILE) pyproject.toml --extra dev -c requirements-pip.lock -o requirements-dev.lock
	$(UV_COMPILE) pyproject.toml --extra emulator -c requirements-dev.lock -o requirements.lock
	rm -rf $(LOCK_VENV)
