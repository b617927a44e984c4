"""``python -m benchmarks.big``: the ``big_dataset`` scenario, one dataset of a million examples.

A JSONL file of ``--examples`` (1,000,000) lines of about 200 bytes, keyed by ``key``, in one
space of a fresh emulator (its own process, a SQLite file, a real socket). Three measured runs,
each a worker process of its own (``benchmarks.worker``: wall, CPU, peak RSS):

1. ``create``: apply to an account with only the space (then the convergence check re-reads it).
2. ``plan_in_sync``: plan against what step 1 made.
3. ``change_1pct``: apply after 1% of the examples changed, 1% were deleted and 1% appended (then
   the convergence check).

The lower bound (``bound``) counts list pages at the API's largest page (100; examples 500), one
write per call the API forces (a dataset is created with its examples in one POST; an update and
an append take any number of examples; a delete at most 1,000 ids) and the re-read of the
examples after a write; any change of examples makes one new version.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.bounds import EXAMPLES_PAGE
from benchmarks.census import take
from benchmarks.run import run_worker
from benchmarks.server import admin_client, by_method, copy_db, emulator, json_of, read_stats, reset_stats

SPACE = "big-00"
NAME = "big-dataset"
EVERY = 100  # 1%: examples i % 100 == 1 change, i % 100 == 2 are deleted; N / 100 are appended
DELETE_LIMIT = 1000


def example(i: int, edited: bool = False) -> dict[str, Any]:
    """About 200 bytes of JSON."""
    return {"key": f"ex-{i:07d}", "input": f"customer {i % 9973} asks about order {i * 7919 % 1000003:07d}: "
            "where is my parcel and when will it arrive?", "expected": "route_to_shipping",
            "score": (i * 31) % 100 if not edited else 100 + (i * 31) % 100, "lang": "en"}


def write_manifests(root: Path, n: int, changed: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    doc = {"kind": "Dataset", "space": SPACE, "name": NAME, "key": "key", "examples_file": "big.jsonl"}
    (root / "big.yaml").write_text("---\n" + json.dumps(doc) + "\n", encoding="utf-8")
    with (root / "big.jsonl").open("w", encoding="utf-8") as out:
        for i in range(n):
            if changed and i % EVERY == 2:
                continue
            out.write(json.dumps(example(i, changed and i % EVERY == 1)) + "\n")
        if changed:
            for i in range(n, n + n // EVERY):
                out.write(json.dumps(example(i)) + "\n")
    return root


def pages(n: int, limit: int = 100) -> int:
    return max(1, math.ceil(n / limit))


def bounds(n: int) -> dict[str, dict[str, int]]:
    lists = 6  # LLM, AGENT, spaces, organizations, restrictions, the space's datasets: one page each
    deleted = len(range(2, n, EVERY))
    after_change = n - deleted + n // EVERY
    return {
        "create": {"reads": lists, "writes": 1, "reread": pages(n, EXAMPLES_PAGE)},
        "plan_in_sync": {"reads": lists + pages(n, EXAMPLES_PAGE), "writes": 0, "reread": 0},
        "change_1pct": {"reads": lists + pages(n, EXAMPLES_PAGE),
                        "writes": 1 + 1 + math.ceil(deleted / DELETE_LIMIT), "reread": pages(after_change, EXAMPLES_PAGE)},
    }


def measure(db: Path, start: Path, action: str, manifests: Path) -> dict[str, Any]:
    copy_db(start, db)
    with emulator(db) as served:
        reset_stats(served.url)
        cpu0 = served.cpu_s()
        result = run_worker({"mode": "ours", "action": action, "manifests": str(manifests), "url": served.url})
        result["emulator_cpu_s"] = round(served.cpu_s() - cpu0, 2)
        result["server_requests"] = by_method(read_stats(served.url))
    return result


def run(n: int, work: Path, log: Any = print) -> dict[str, Any]:
    log(f"writing {n:,} examples")
    base = write_manifests(work / "base", n, changed=False)
    changed = write_manifests(work / "changed", n, changed=True)
    empty, synced, db = work / "empty.db", work / "synced.db", work / "run.db"
    for stale in work.glob("*.db*"):  # a kept --workdir starts from nothing again
        stale.unlink()
    with emulator(empty) as served, admin_client(served.url) as api:
        json_of(api.post("/v2/spaces", json={"name": SPACE}))
    bound = bounds(n)
    steps: list[dict[str, Any]] = []
    for name, action, manifests, start in (("create", "apply", base, empty), ("plan_in_sync", "plan", base, synced),
                                           ("change_1pct", "apply", changed, synced)):
        log(f"big_dataset: {name}")
        result = measure(db, start, action, manifests)
        if name == "create":
            copy_db(db, synced)
        total_requests = report.total(result["server_requests"])
        b = bound[name]
        lower = sum(b.values())
        steps.append({"step": name, "wall_s": result["wall_s"], "cpu_s": result["cpu_s"],
                      "peak_rss_mb": result["peak_rss_mb"], "requests": result["server_requests"],
                      "lower_bound": lower, "bound": b, "ratio": round(total_requests / lower, 4),
                      "phases": result.get("phases", {}), "emulator_cpu_s": result.get("emulator_cpu_s"),
                      "failed": result.get("failed", 0), "converged": result.get("converged"),
                      "plan_summary": result.get("plan_summary")})
    census = take(synced)
    return {"kind": "big_dataset", "examples": n, "stored_examples": sum(census.examples.values()),
            "jsonl_mb": round((base / "big.jsonl").stat().st_size / 1e6, 1), "cpus": os.cpu_count(),
            "load": os.getloadavg()[0], "date": datetime.now(UTC).strftime("%Y-%m-%d"), "steps": steps,
            "targets": targets(steps)}


def targets(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    peak = max(s["peak_rss_mb"] for s in steps)
    out.append({"target": f"big_dataset: peak RSS <= {report.BIG_RSS_TARGET_MB:g} MB", "figure": peak,
                "met": peak <= report.BIG_RSS_TARGET_MB})
    sync = next(s for s in steps if s["step"] == "plan_in_sync")
    out.append({"target": f"big_dataset: plan in sync <= {report.BIG_PLAN_TARGET_S:g} s", "figure": sync["wall_s"],
                "met": sync["wall_s"] <= report.BIG_PLAN_TARGET_S})
    for s in steps:
        out.append({"target": f"big_dataset {s['step']}: requests / lower bound <= {report.RATIO_TARGET}",
                    "figure": s["ratio"], "met": s["ratio"] <= report.RATIO_TARGET})
    out.append({"target": "big_dataset plan_in_sync: zero writes", "figure": report.writes(sync["requests"]),
                "met": report.writes(sync["requests"]) == 0})
    change = next(s for s in steps if s["step"] == "change_1pct")
    out.append({"target": "big_dataset change_1pct: no failed call, converged",
                "figure": f"{change['failed']} failed, converged {change['converged']}",
                "met": change["failed"] == 0 and bool(change["converged"])})
    return out


def table(result: dict[str, Any]) -> str:
    lines = [f"One dataset of {result['examples']:,} examples ({result['jsonl_mb']} MB of JSONL, keyed); "
             f"{result['cpus']} CPUs; load average {result.get('load', 0):.1f} at the end.", "",
             "| step | wall s | CPU s | peak RSS MB | requests | by method | lower bound | ratio |",
             "|---|---:|---:|---:|---:|---|---:|---:|"]
    for s in result["steps"]:
        lines.append(f"| {s['step']} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | {s['peak_rss_mb']:.0f} | "
                     f"{report.total(s['requests'])} | {' '.join(f'{m}:{n}' for m, n in sorted(s['requests'].items()))}"
                     f" | {s['lower_bound']} | {s['ratio']:.3f} |")
    lines += ["", "| target | figure | met |", "|---|---|---|"]
    lines += [f"| {t['target']} | {t['figure']} | {'yes' if t['met'] else 'NO'} |" for t in result["targets"]]
    lines += [""]
    for s in result["steps"]:
        b = s["bound"]
        lines.append(f"- {s['step']}: bound {b['reads']} reads + {b['writes']} writes + {b['reread']} re-read; wall "
                     f"by phase {', '.join(f'{k[:-2]} {v:g}' for k, v in s['phases'].items())}; emulator CPU "
                     f"{s['emulator_cpu_s']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.big", description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/performance.md")
    parser.add_argument("--workdir", help="keep the files here (default: a temp dir)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reconciler-big-") as tmp:
        work = Path(args.workdir) if args.workdir else Path(tmp)
        result = run(args.examples, work,
                     log=lambda line: print(f"[{time.monotonic() - started:7.1f}s] {line}", file=sys.stderr))
    print(table(result))
    print(json.dumps({k: result[k] for k in ("examples", "steps", "targets")}))
    if not args.no_doc:
        from benchmarks.run import DOC

        report.write_doc(DOC, "big_dataset", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
