"""``python -m benchmarks.policy_bench``: what policy evaluation adds to a plan.

The large benchmark account (``benchmarks.account`` at scale 1.0) is applied once to an in-process
emulator, which is then served by an emulator process (``benchmarks.server``); the 5% change
(``change_of``) is planned against it over HTTP: ``plan_cpu_s`` is this process's CPU time for that
plan (the live read and ``make_plan``, what ``reconciler plan`` spends past loading; the emulator's
CPU is its own process's), and
``policy_cpu_s`` the CPU time of evaluating ``RULES`` (ten rules: matches, CEL conditions over
``op``, ``before``/``after`` and ``plan``) on it. Each figure is the best of ``--runs``. The target is
``policy_cpu_s`` at most 10% of ``plan_cpu_s``. Prints one line a figure and a JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

RULES = """\
kind: Policy
name: bench
rules:
  - name: no-integration-deletes
    match: {actions: [delete, replace], kinds: [Integration]}
    effect: deny
  - name: production-label
    match: {kinds: [Prompt], fields: [version.labels]}
    effect: require_approval
  - name: retention-never-shrinks
    match: {kinds: [Dataset]}
    condition: after.experiment_retention.keep_last < before.experiment_retention.keep_last
    effect: warn
  - name: few-deletes
    condition: plan.summary.delete > 500
    effect: deny
  - name: model-moves
    match: {kinds: [Prompt]}
    condition: after.version.model != before.version.model
    effect: warn
  - name: descriptions
    condition: op.changes.exists(c, c.path == 'description')
    effect: warn
  - name: agent-endpoints
    match: {kinds: [Integration], actions: [update]}
    condition: has(after.config.endpoint) && after.config.endpoint != before.config.endpoint
    effect: warn
  - name: evaluator-templates
    match: {kinds: [Evaluator], fields: ["template_config.*"]}
    effect: warn
  - name: unrestricting
    match: {kinds: [Prompt]}
    condition: has(before.restricted) && before.restricted && !after.restricted
    effect: deny
  - name: wide-updates
    match: {addresses: ["Integration/bench-*"], actions: [update]}
    condition: size(op.changes) > 3 && op.kind == 'Integration'
    effect: warn
"""


def measure(scale: str, runs: int) -> dict[str, Any]:
    from benchmarks.account import SCALES, SECRET_ENV, AccountSpec, change_of, write_manifests
    from benchmarks.server import emulator
    from reconciler.client.http import ApiClient, build_http_client
    from reconciler.client.inprocess import emulator_transport
    from reconciler.client.live import read_live
    from reconciler.manifests import load_manifests
    from reconciler.plan.model import PlanOptions
    from reconciler.plan.planner import make_plan
    from reconciler.policy import evaluate as policy_evaluate
    from reconciler.workflow import run_apply

    for key, value in SECRET_ENV.items():
        os.environ.setdefault(key, value)
    spec = AccountSpec.at(SCALES[scale])
    out: dict[str, Any] = {"scale": scale}
    with tempfile.TemporaryDirectory() as work:
        base = load_manifests([str(write_manifests(spec, Path(work) / "base"))])
        policy = Path(work) / "policy.yaml"
        policy.write_text(RULES)
        changed = load_manifests([str(write_manifests(spec, Path(work) / "changed", change_of(spec)))],
                                 policy_paths=[str(policy)])
        rules = changed.policies
        out["rules"] = len(rules)
        http = build_http_client("http://emulator", "admin-key", transport=emulator_transport(str(Path(work) / "e.db")))
        with ApiClient(http) as client:
            for name in spec.space_names:
                client.run(client.post("/v2/spaces", {"name": name}))
            options = PlanOptions(version_name="bench")
            report = run_apply(make_plan(base, client.run(read_live(client, base.read_scope())), options), client,
                               parallelism=8, fail_fast=True)
            assert not report.of("failed"), report.of("failed")[:3]
        with emulator(Path(work) / "e.db") as served, \
                ApiClient(build_http_client(served.url, "admin-key", parallelism=10), parallelism=10) as client:
            plans, evaluations = [], []
            for _ in range(runs):
                cpu = time.process_time()
                plan = make_plan(changed, client.run(read_live(client, changed.read_scope(), changed)), options)
                plans.append(time.process_time() - cpu)
                cpu = time.process_time()
                verdicts = policy_evaluate.evaluate(plan, rules, changed)
                evaluations.append(time.process_time() - cpu)
    out.update(resources=len(changed.resources), operations=len(plan.operations), verdicts=len(verdicts),
               plan_cpu_s=round(min(plans), 3), policy_cpu_s=round(min(evaluations), 4))
    out["policy_share"] = round(out["policy_cpu_s"] / out["plan_cpu_s"], 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", default="large")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    f = measure(args.scale, args.runs)
    print(f"policy ({f['rules']} rules) on the {f['scale']} plan ({f['resources']:,} resources, "
          f"{f['operations']:,} operations, {f['verdicts']} verdicts): {f['policy_cpu_s']:.4f} s CPU against "
          f"{f['plan_cpu_s']:.3f} s for the plan = {100 * f['policy_share']:.1f}% (target: at most 10%)")
    print(json.dumps({"kind": "policy", "date": date.today().isoformat(), "runs": args.runs, **f}))


if __name__ == "__main__":
    main()
