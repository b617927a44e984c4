"""``python -m benchmarks.model_bench``: the cost of the typed core at scale large,
beside the same figures of the code before it, measured in the same run.

Figures, each the best of ``--runs`` runs in one process:

- ``validate_s`` / ``validate_cpu_s``: wall and CPU of ``load_manifests`` (what ``reconciler
  validate`` does) on the manifests of the large benchmark account (``benchmarks.account`` at scale
  1.0: 2,000 LLM and 500 AGENT integrations, 1,000 prompts, 200 datasets of 500 examples, 200
  evaluators);
- ``plan_cpu_s``: the CPU time of ``make_plan`` on those manifests against an in-sync account
  (applied once to an in-process emulator, then read back with ``read_live``).

``--baseline REF`` (default ``61db855``, the last commit before the pydantic models, with the
hand-written type system ``fieldtypes.py`` and untyped live state) measures the same figures with
that commit's ``reconciler`` package (``git archive`` into a temporary directory, run in a child
process with the same account writer), so both sides meet the same machine at the same time.
``--house REF`` (default ``4f0eca7``, before the kind registry, planners without a shared
mutable context) measures ``make_plan`` the same way, and the product's lines outside the emulator
(``reconciler/`` minus ``reconciler/emulator/``: non-blank non-comment lines, and ``wc -l``) are
counted at that commit and in the working tree. ``--write-doc`` records the figures in
``docs/performance.md``. It prints one line per figure and a JSON
line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "61db855"
HOUSE = "4f0eca7"


def product_lines(ref: str | None = None) -> dict[str, int]:
    """Lines of ``reconciler/`` outside ``reconciler/emulator/``, in the working tree or at ``ref``:
    ``code`` counts non-blank lines that are not ``#`` comments, ``wc`` every line (as ``wc -l``)."""
    if ref is None:
        texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "reconciler").rglob("*.py"))
                 if "emulator" not in p.relative_to(ROOT / "reconciler").parts[:1]]
    else:
        names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", ref, "reconciler"],
                               capture_output=True, text=True, check=True).stdout.split()
        texts = [subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{n}"], capture_output=True, text=True,
                                check=True).stdout
                 for n in names if n.endswith(".py") and not n.startswith("reconciler/emulator/")]
    lines = [line for text in texts for line in text.splitlines()]
    return {"code": sum(1 for line in lines if line.strip() and not line.strip().startswith("#")),
            "wc": len(lines)}


def measure(scale: str, runs: int, validate_only: bool) -> dict[str, Any]:
    from benchmarks.account import SCALES, SECRET_ENV, AccountSpec, write_manifests
    from reconciler.client.http import ApiClient, build_http_client
    from reconciler.client.inprocess import emulator_transport
    from reconciler.client.live import read_live
    from reconciler.manifests import load_manifests
    from reconciler.plan.model import PlanOptions
    from reconciler.plan.planner import make_plan
    from reconciler.workflow import run_apply

    for key, value in SECRET_ENV.items():
        os.environ.setdefault(key, value)
    spec = AccountSpec.at(SCALES[scale])
    import reconciler

    out: dict[str, Any] = {"scale": scale, "package": os.path.realpath(os.path.dirname(reconciler.__file__))}
    with tempfile.TemporaryDirectory() as work:
        root = write_manifests(spec, Path(work) / "manifests")
        loads, load_cpu = [], []
        for _ in range(runs):
            start, cpu = time.perf_counter(), time.process_time()
            ms = load_manifests([str(root)])
            loads.append(time.perf_counter() - start)
            load_cpu.append(time.process_time() - cpu)
        out.update(resources=len(ms.resources), validate_s=round(min(loads), 3), validate_cpu_s=round(min(load_cpu), 3))
        if validate_only:
            return out
        transport = emulator_transport(str(Path(work) / "emulator.db"))
        http = build_http_client("http://emulator", "admin-key", transport=transport)
        with ApiClient(http) as client:
            for name in spec.space_names:
                client.run(client.post("/v2/spaces", {"name": name}))
            options = PlanOptions(version_name="bench")
            plan = make_plan(ms, client.run(read_live(client, ms.read_scope())), options)
            report = run_apply(plan, client, parallelism=8, fail_fast=True)
            assert not report.of("failed"), report.of("failed")[:3]
            live = client.run(read_live(client, ms.read_scope()))
            plans = []
            for _ in range(runs):
                cpu = time.process_time()
                again = make_plan(ms, live, options)
                plans.append(time.process_time() - cpu)
            assert again.empty, [op.address for op in again.operations][:5]
        out["plan_cpu_s"] = round(min(plans), 3)
    return out


def baseline(ref: str, scale: str, runs: int, validate_only: bool) -> dict[str, Any] | None:
    """The same figures with ``ref``'s ``reconciler`` package; None without git or the commit."""
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "reconciler"], capture_output=True)
        if archive.returncode != 0:
            print(f"baseline {ref}: not measured ({archive.stderr.decode().strip() or 'git archive failed'})")
            return None
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        cmd = [sys.executable, "-m", "benchmarks.model_bench", "--scale", scale, "--runs", str(runs),
               "--baseline", "", "--json-only", *(["--validate-only"] if validate_only else [])]
        # its reconciler (the working directory comes first on a -m run's path), our account writer
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tree, str(ROOT)])}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
        if done.returncode != 0:
            print(f"baseline {ref}: failed: {done.stderr.strip()[-500:]}")
            return None
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        if not str(figures.get("package", "")).startswith(os.path.realpath(tree)):
            raise RuntimeError(f"baseline {ref}: measured {figures.get('package')}, not the archive")
        figures.pop("package")
        return dict(figures, commit=ref)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", default="large")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--validate-only", action="store_true", help="skip the plan measurement")
    parser.add_argument("--baseline", default=BASELINE, help="a commit to measure beside ('' for none)")
    parser.add_argument("--house", default=HOUSE, help="a second commit to measure make_plan at ('' for none)")
    parser.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--write-doc", action="store_true", help="record the figures in docs/performance.md")
    args = parser.parse_args()
    ours = measure(args.scale, args.runs, args.validate_only)
    if args.json_only:
        print(json.dumps(ours))
        return
    ours.pop("package")
    before = baseline(args.baseline, args.scale, args.runs, args.validate_only) if args.baseline else None
    house = baseline(args.house, args.scale, args.runs, False) if args.house and not args.validate_only else None
    for name, figures in (("now", ours), (f"before ({args.baseline})", before)):
        if figures is None:
            continue
        line = (f"{name}: validate {figures['resources']:,} resources: best {figures['validate_s']:.3f} s wall, "
                f"{figures['validate_cpu_s']:.3f} s CPU")
        if "plan_cpu_s" in figures:
            line += f"; plan CPU (in sync): best {figures['plan_cpu_s']:.3f} s"
        print(line)
    if house is not None:
        print(f"make_plan CPU (in sync) now {ours['plan_cpu_s']:.3f} s, at {args.house} {house['plan_cpu_s']:.3f} s "
              f"(not slower)")
    lines = {"now": product_lines(), **({args.house: product_lines(args.house)} if args.house else {})}
    print("product lines outside the emulator: " + "; ".join(
        f"{name} {n['code']:,} non-blank non-comment ({n['wc']:,} wc -l)" for name, n in lines.items()))
    result = {"kind": "models", "date": date.today().isoformat(), "runs": args.runs, "now": ours,
              "before": before, "house": house, "product_lines": lines}
    print(json.dumps(result))
    if args.write_doc:
        from benchmarks import report

        report.write_doc(ROOT / "docs/performance.md", "models", result)


if __name__ == "__main__":
    main()
