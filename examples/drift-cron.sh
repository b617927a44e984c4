#!/usr/bin/env bash
# Nightly drift check. Exit 0: in sync; 2: drift (the Markdown report is kept); 1: error.
# crontab:  17 3 * * *  cd /srv/platform-config && ./examples/drift-cron.sh >> /var/log/reconciler-drift.log 2>&1
#
# Needs RECONCILER_API_KEY and an endpoint (RECONCILER_BASE_URL), or pass extra flags, e.g.
# (not the manifests' secrets: drift compares secrets by presence and never reads them)
#   ./examples/drift-cron.sh --emulator .demo/state.db
set -uo pipefail
cd "$(dirname "$0")/.."
RECONCILER=${RECONCILER:-reconciler}
[ -x .venv/bin/reconciler ] && RECONCILER=.venv/bin/reconciler
report="drift-$(date -u +%Y%m%dT%H%M%SZ).md"
"$RECONCILER" drift manifests --format markdown "$@" > "$report"
code=$?
case $code in
  0) echo "in sync"; rm -f "$report" ;;
  2) echo "DRIFT: see $report" ;;
  *) echo "drift check failed (exit $code)"; rm -f "$report" ;;
esac
exit $code
