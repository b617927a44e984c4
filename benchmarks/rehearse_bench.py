"""``python -m benchmarks.rehearse_bench --scale 1.0``: what ``plan --rehearse`` costs.

On the benchmark account (``benchmarks.run.Bench``: built from empty, experiments seeded), after
the 5% change of ``plan_apply_5pct``: a plain ``plan`` and a ``plan --rehearse`` (the plan executed
on an in-process replica seeded with the live state read, re-read and planned again), each a
worker process of its own (``benchmarks.worker``, action ``plan`` and ``rehearse``). Targets: the
rehearsed plan's CPU at most 2x the plain plan's, and exactly the plain plan's requests at the
emulator (the rehearsal's own calls go to the replica). Prints both runs' figures and the verdicts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.account import SCALES
from benchmarks.run import Bench
from benchmarks.seed import seed_experiments
from benchmarks.server import copy_db, emulator

CPU_TARGET = 2.0


def figures(scale: float, work: Path, log: Any) -> dict[str, Any]:
    bench = Bench(scale, work, log=log)
    bench.setup()
    log("apply from an empty account (the account the plans read)")
    bench.measure("ours", "apply", bench.base, start=bench.empty_db)
    copy_db(bench.db, bench.synced_db)
    with emulator(bench.synced_db) as served:
        seed_experiments(served.url, bench.spec)
    log("plan after the 5% change, plain then rehearsed")
    plain, _ = bench.measure("ours", "plan", bench.changed, start=bench.synced_db)
    rehearsed, _ = bench.measure("ours", "rehearse", bench.changed, start=bench.synced_db)
    ratio = rehearsed["cpu_s"] / plain["cpu_s"] if plain["cpu_s"] else 0.0
    return {
        "scale": scale, "operations": plain["plan_operations"],
        "plain": {k: plain[k] for k in ("cpu_s", "wall_s", "peak_rss_mb", "phase_cpu", "server_requests")},
        "rehearsed": {k: rehearsed[k] for k in ("cpu_s", "wall_s", "peak_rss_mb", "phase_cpu", "server_requests",
                                                "rehearsal")},
        "cpu_ratio": round(ratio, 3), "cpu_target_met": ratio <= CPU_TARGET,
        "same_requests": plain["server_requests"] == rehearsed["server_requests"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rehearse_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="1.0", help="a factor (1.0 = large), or small (0.1) or large (1.0)")
    args = parser.parse_args(argv)
    scale = SCALES.get(args.scale) or float(args.scale)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reconciler-rehearse-bench-") as tmp:
        result = figures(scale, Path(tmp),
                         lambda line: print(f"[{time.monotonic() - started:7.1f}s] {line}", file=sys.stderr))
    plain, rehearsed = result["plain"], result["rehearsed"]
    print(f"plan_apply_5pct at scale {scale}: {result['operations']} operations")
    print(f"  plain plan:      CPU {plain['cpu_s']:.2f} s, wall {plain['wall_s']:.2f} s, "
          f"requests {plain['server_requests']}")
    print(f"  plan --rehearse: CPU {rehearsed['cpu_s']:.2f} s (rehearsal "
          f"{rehearsed['phase_cpu'].get('rehearse_cpu_s')} s), wall {rehearsed['wall_s']:.2f} s, "
          f"requests {rehearsed['server_requests']}; {rehearsed['rehearsal']}")
    print(f"  CPU rehearsed / plain = {result['cpu_ratio']} (target <= {CPU_TARGET}: "
          f"{'yes' if result['cpu_target_met'] else 'NO'}); same requests: "
          f"{'yes' if result['same_requests'] else 'NO'}")
    print(json.dumps(result))
    return 0 if result["cpu_target_met"] and result["same_requests"] else 1


if __name__ == "__main__":
    sys.exit(main())
