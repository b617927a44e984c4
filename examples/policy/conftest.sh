#!/usr/bin/env bash
# Policies in Rego for teams who already use OPA: run conftest on the JSON plan.
#   ./examples/policy/conftest.sh [plan flags...]      e.g. --emulator .demo/state.db --prune
# Exit 0: the plan passes; 1: a deny rule failed (conftest prints which), or the plan failed.
# The JSON plan's shape is `reconciler schema --plan` (format_version is semver: rules written for 1.x keep
# working on every 1.x plan). Needs conftest on PATH (https://www.conftest.dev); nothing is downloaded here.
set -euo pipefail
cd "$(dirname "$0")/../.."
RECONCILER=${RECONCILER:-reconciler}
[ -x .venv/bin/reconciler ] && RECONCILER=.venv/bin/reconciler
plan=$(mktemp --suffix=.json)
trap 'rm -f "$plan"' EXIT
"$RECONCILER" plan manifests --format json "$@" > "$plan"
conftest test --policy examples/policy/policy "$plan"
