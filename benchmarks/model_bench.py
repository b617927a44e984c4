"""``python -m benchmarks.model_bench``: the cost of the manifest models at scale large (issue 15).

Two figures, each the best of ``--runs`` runs in this process:

- ``validate_s``: ``load_manifests`` (what ``reconciler validate`` does) on the manifests of the
  large benchmark account (``benchmarks.account`` at scale 1.0: 2,000 LLM and 500 AGENT
  integrations, 1,000 prompts, 200 datasets of 500 examples, 200 evaluators);
- ``validate_cpu_s``: the same run's CPU time (steadier than wall on a shared machine);
- ``plan_cpu_s``: the CPU time of ``make_plan`` on those manifests against an in-sync account
  (applied once to an in-process emulator, then read back with ``read_live``).

It prints one line per figure and a JSON line with both.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.account import SCALES, SECRET_ENV, AccountSpec, write_manifests
from reconciler.client.http import ApiClient, build_http_client
from reconciler.client.inprocess import emulator_transport
from reconciler.client.live import read_live
from reconciler.manifests import load_manifests
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.workflow import run_apply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=sorted(SCALES), default="large")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--validate-only", action="store_true", help="skip the plan measurement")
    args = parser.parse_args()
    for key, value in SECRET_ENV.items():
        os.environ.setdefault(key, value)
    spec = AccountSpec.at(SCALES[args.scale])
    with tempfile.TemporaryDirectory() as work:
        root = write_manifests(spec, Path(work) / "manifests")
        loads, load_cpu = [], []
        for _ in range(args.runs):
            start, cpu = time.perf_counter(), time.process_time()
            ms = load_manifests([str(root)])
            loads.append(time.perf_counter() - start)
            load_cpu.append(time.process_time() - cpu)
        print(f"validate: {len(ms.resources):,} resources, best {min(loads):.3f} s wall, {min(load_cpu):.3f} s CPU "
              f"(runs: {', '.join(f'{t:.3f}' for t in loads)})")
        if args.validate_only:
            print(json.dumps({"scale": args.scale, "validate_s": round(min(loads), 3),
                              "validate_cpu_s": round(min(load_cpu), 3)}))
            return
        transport = emulator_transport(str(Path(work) / "emulator.db"))
        http = build_http_client("http://emulator", "admin-key", transport=transport)
        with ApiClient(http) as client:
            for name in spec.space_names:
                client.post("/v2/spaces", {"name": name})
            options = PlanOptions(version_name="bench")
            plan = make_plan(ms, read_live(client, ms.read_scope()), options)
            report = run_apply(plan, client, parallelism=8, fail_fast=True)
            assert not report.of("failed"), report.of("failed")[:3]
            live = read_live(client, ms.read_scope())
            plans = []
            for _ in range(args.runs):
                cpu = time.process_time()
                again = make_plan(ms, live, options)
                plans.append(time.process_time() - cpu)
            assert again.empty, [op.address for op in again.operations][:5]
        print(f"plan CPU (in sync, {len(ms.resources):,} resources): best {min(plans):.3f} s "
              f"(runs: {', '.join(f'{t:.3f}' for t in plans)})")
        print(json.dumps({"scale": args.scale, "validate_s": round(min(loads), 3),
                          "validate_cpu_s": round(min(load_cpu), 3), "plan_cpu_s": round(min(plans), 3)}))


if __name__ == "__main__":
    main()
