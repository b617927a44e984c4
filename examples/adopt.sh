#!/usr/bin/env bash
# Adopt existing resources: export live state to manifests, then check that planning them is empty.
# Usage: ./examples/adopt.sh OUT_DIR [connection flags, e.g. --emulator .demo/state.db]
set -euo pipefail
cd "$(dirname "$0")/.."
RECONCILER=${RECONCILER:-reconciler}
[ -x .venv/bin/reconciler ] && RECONCILER=.venv/bin/reconciler
out=${1:?usage: adopt.sh OUT_DIR [flags]}
shift
"$RECONCILER" export --out "$out" "$@"
# Secrets cannot be read back: export names them in secrets.env.example. Set the real values before
# applying; for this check any value will do, since secrets that exist live are not re-sent.
if [ -f "$out/secrets.env.example" ]; then
  while IFS= read -r line; do
    case $line in ''|'#'*) continue ;; esac
    name=${line%%=*}
    [ -n "${!name:-}" ] || export "$name=adopted-placeholder"
  done < "$out/secrets.env.example"
fi
"$RECONCILER" plan "$out" --detailed-exitcode "$@" && echo "Adopted: the plan of the exported manifests is empty."
