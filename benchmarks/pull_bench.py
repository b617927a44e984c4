"""``python -m benchmarks.pull_bench --scale 1.0``: ``reconciler pull`` against ``plan`` on the bench account.

The account of ``benchmarks.run`` (``benchmarks.account``) is applied from empty to a fresh emulator
served over a real socket; then, each in a child process of its own (its CPU time its own), on a copy
of the same SQLite file: ``plan`` in sync, ``pull`` in sync, and ``pull`` after the account's 5% change
was made live (the tree unchanged: every changed field is an edit to compute, route and splice; diff
only, nothing written). Both run the same live read; pull then computes the live view of every
declared field, routes each edit and renders the diff. Target: pull's CPU and wall within 1.5x plan's.
Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.account import SECRET_ENV
from benchmarks.run import Bench
from benchmarks.server import copy_db, emulator

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.5


def child(job: dict[str, Any]) -> dict[str, Any]:
    """One measured run (in this process): load, read live (GET only), then plan or pull."""
    from reconciler.client.http import ApiClient, build_http_client
    from reconciler.client.live import read_live
    from reconciler.client.settings import DEFAULT_PARALLELISM
    from reconciler.manifests.loader import manifest_files
    from reconciler.plan.planner import make_plan
    from reconciler.pull.engine import Puller
    from reconciler.workflow import load

    wall0, cpu0 = time.perf_counter(), time.process_time()
    manifests = load([job["manifests"]])
    http = build_http_client(job["url"], "admin-key", parallelism=DEFAULT_PARALLELISM)
    with ApiClient(http, parallelism=DEFAULT_PARALLELISM, read_only=True) as client:
        live = client.run(read_live(client, manifests.read_scope(), manifests))
    read_cpu = time.process_time() - cpu0
    out: dict[str, Any] = {"action": job["action"]}
    if job["action"] == "plan":
        plan = make_plan(manifests, live)
        out["operations"] = len(plan.operations)
    else:
        result = Puller(manifests, live, manifest_files([job["manifests"]], [])).run()
        out["edits"] = len(result.edits)
        out["diff_lines"] = result.diff().count("\n")
    out.update(cpu_s=round(time.process_time() - cpu0, 3), wall_s=round(time.perf_counter() - wall0, 3),
               read_cpu_s=round(read_cpu, 3))
    return out


def measure(action: str, manifests: Path, db: Path, work: Path) -> dict[str, Any]:
    run_db = work / f"measure-{action}-{len(list(work.glob('measure-*.db')))}.db"
    copy_db(db, run_db)
    with emulator(run_db) as served:
        env = {**os.environ, **SECRET_ENV, "RECONCILER_API_KEY": "admin-key"}
        job = json.dumps({"action": action, "manifests": str(manifests), "url": served.url})
        done = subprocess.run([sys.executable, "-m", "benchmarks.pull_bench", "--child", job], env=env, cwd=ROOT,
                              capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pull bench child failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="reconciler-pull-bench-") as tmp:
        work = Path(tmp)
        bench = Bench(args.scale, work, log=lambda line: print(f"[pull bench] {line}", file=sys.stderr))
        bench.setup()
        print("[pull bench] apply from an empty account", file=sys.stderr)
        bench.measure("ours", "apply", bench.base, start=bench.empty_db)
        copy_db(bench.db, bench.synced_db)
        print("[pull bench] the 5% change made live", file=sys.stderr)
        bench.measure("ours", "apply", bench.changed, start=bench.synced_db)
        changed_db = work / "changed-live.db"
        copy_db(bench.db, changed_db)
        rows = {
            "plan_in_sync": measure("plan", bench.base, bench.synced_db, work),
            "pull_in_sync": measure("pull", bench.base, bench.synced_db, work),
            "plan_5pct_live": measure("plan", bench.base, changed_db, work),
            "pull_5pct_live": measure("pull", bench.base, changed_db, work),
        }
    print(f"pull vs plan at scale {args.scale:g} (each a child process; target: pull within {TARGET}x plan)")
    print(f"{'scenario':<16} {'CPU s':>7} {'wall s':>7} {'read CPU s':>10}  result")
    for name, row in rows.items():
        what = f"{row['operations']} operations" if "operations" in row else \
            f"{row['edits']} edits, {row['diff_lines']} diff lines"
        print(f"{name:<16} {row['cpu_s']:>7.2f} {row['wall_s']:>7.2f} {row['read_cpu_s']:>10.2f}  {what}")
    ratios = {case: {"cpu": round(rows[f"pull_{case}"]["cpu_s"] / rows[f"plan_{case}"]["cpu_s"], 2),
                     "wall": round(rows[f"pull_{case}"]["wall_s"] / rows[f"plan_{case}"]["wall_s"], 2)}
              for case in ("in_sync", "5pct_live")}
    for case, r in ratios.items():
        print(f"pull/plan {case}: CPU {r['cpu']}x, wall {r['wall']}x"
              + ("" if max(r.values()) <= TARGET else f"  (over the {TARGET}x target)"))
    print(json.dumps({"scale": args.scale, "rows": rows, "ratios": ratios}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
