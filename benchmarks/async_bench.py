"""``python -m benchmarks.async_bench --scale 0.1|0.3|1.0``: the event loop's figures,
beside main's before the loop landed (``--before REF``), measured in the same run.

The account, the emulator (its own process, over a real socket) and the worker are
``benchmarks.run``'s. The figures before come from ``REF``'s own ``reconciler`` and ``benchmarks``
packages (``git archive``), run by the same emulator on the same snapshots; the two sides alternate
scenario by scenario, and every CPU figure is the best of ``--runs`` runs (a shared machine's noise
only ever adds CPU). What is printed, per side:

- **read CPU** of a plan in sync (its ``read`` phase) against the *bare loop* (the same GETs, one
  after another on a synchronous ``httpx.Client``, each body parsed) and against the *bare async
  loop* (the same GETs ten at a time on the event loop, nothing else);
- **whole-plan CPU** against its floor: the bare loop plus the parse floor of the inputs;
- **CPU per write** of an apply from an empty account against the bare loop's CPU per request;
- at ``--faults latency_ms=20``, each scenario's wall (the load phase excluded) against the
  *latency floor*: the bare async loop's own wall for as many requests at the same latency (or the
  longest chain of calls that must follow each other, times the latency, when that is longer), and
  the plan against the naive baseline's wall;
- **pacing** under ``--rate-limit 50``: the share of the rate used, the share of 429s and failed
  calls, with the service's bucket holding a second (50) and a tenth of a second (5) of requests.

It prints a table (target, now, before, met) and, with ``--write-doc``, puts it in
``docs/performance.md`` (its own section per scale).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import bounds
from benchmarks.account import SCALES
from benchmarks.census import take
from benchmarks.run import (
    LATENCY_FAULTS,
    LATENCY_S,
    RATE_LIMIT,
    ROOT,
    Bench,
    floor_figures,
    rate_figures,
    run_worker,
)
from benchmarks.seed import seed_experiments
from benchmarks.server import copy_db, emulator

#: main before the event loop landed (the thread pools of the read and the executor).
BEFORE = "c5c7f74"
DOC = ROOT / "docs" / "performance.md"

READ_TARGET = 1.25  # read CPU / bare loop CPU
PLAN_TARGET = 1.6  # whole-plan CPU / (bare loop + parse floor)
WRITE_TARGET = 1.2  # CPU per write / bare loop CPU per request
LATENCY_TARGET = 1.15  # wall (load excluded) / the bare async loop's wall at 20 ms
NAIVE_TARGET = 6.0  # naive wall / ours at 20 ms
RATE_TARGET, THROTTLED_TARGET, SMALL_BUCKET_TARGET = 0.95, 0.02, 0.90
SMALL_BUCKET = 5.0  # a tenth of a second of the rate


def archive(ref: str, into: Path) -> Path | None:
    """``ref``'s ``reconciler`` and ``benchmarks`` packages in ``into``; None without git or the commit."""
    made = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "reconciler", "benchmarks"], capture_output=True)
    if made.returncode != 0:
        print(f"before {ref}: not measured ({made.stderr.decode().strip() or 'git archive failed'})", file=sys.stderr)
        return None
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=made.stdout, check=True)
    return into


def best(runs: int, measure: Callable[[], dict[str, Any]], key: Callable[[dict[str, Any]], float]) -> dict[str, Any]:
    """The run with the least ``key`` (CPU) of ``runs``."""
    return min((measure() for _ in range(runs)), key=key)


def wall_without_load(result: dict[str, Any]) -> float:
    return round(sum(v for k, v in result.get("phases", {}).items() if k != "load_s"), 3)


class Loop:
    """One scale's measurements (module docstring)."""

    def __init__(self, scale: float, work: Path, runs: int, before: Path | None, log: Callable[[str], None]) -> None:
        self.bench = Bench(scale, work, log=log)
        self.runs = runs
        self.sides: dict[str, Path] = {"now": ROOT, **({"before": before} if before is not None else {})}
        self.log = log

    def measure(self, side: str, action: str, manifests: Path, start: Path, **kw: Any) -> dict[str, Any]:
        result, _ = self.bench.measure("ours", action, manifests, start=start, root=self.sides[side], **kw)
        return result

    def bare(self, urls: Path, db: Path, *, bare_async: bool, requests: int = 0,
             faults: str | None = None) -> dict[str, Any]:
        copy_db(db, self.bench.db)
        with emulator(self.bench.db, faults=faults) as served:
            return run_worker({"mode": "ours", "action": "plan", "manifests": str(self.bench.base), "url": served.url,
                               "bare": str(urls), "bare_async": bare_async, "requests": requests})

    def run(self) -> dict[str, Any]:
        b = self.bench
        b.setup()
        empty = take(b.empty_db)
        self.log("the account, applied from empty (now)")
        _, after = b.measure("ours", "apply", b.base, start=b.empty_db)
        copy_db(b.db, b.synced_db)
        with emulator(b.synced_db) as served:
            seed_experiments(served.url, b.spec)
        synced = take(b.synced_db)
        sides: dict[str, dict[str, Any]] = {side: {} for side in self.sides}

        self.log("plan in sync, and its floors")
        urls = b.work / "plan.urls"
        floored = self.measure("now", "plan", b.base, b.synced_db, floor=True, urls_out=urls)
        sync_bare = best(self.runs, lambda: self.bare(urls, b.synced_db, bare_async=False), lambda r: r["cpu_s"])
        async_bare = best(self.runs, lambda: self.bare(urls, b.synced_db, bare_async=True), lambda r: r["cpu_s"])
        floor = floor_figures(floored["floor"], sync_bare)
        for side in self.sides:
            plan = best(self.runs, lambda s=side: self.measure(s, "plan", b.base, b.synced_db),  # type: ignore[misc]
                        lambda r: r["cpu_s"])
            sides[side]["plan"] = plan
        pieces = {pool: best(self.runs, lambda p=pool: self.measure(  # type: ignore[misc]
            "now", "plan", b.base, b.synced_db, extra={"pool": p}), lambda r: r["cpu_s"])
            for pool in ("httpx", "httpx-over-lean")}

        self.log("apply from empty")
        for side in self.sides:
            sides[side]["apply"] = best(self.runs, lambda s=side: self.measure(s, "apply", b.base, b.empty_db),  # type: ignore[misc]
                                        lambda r: r["phase_cpu"].get("apply_cpu_s", 0.0))

        self.log(f"--faults {LATENCY_FAULTS}")
        chains = {"plan_latency_20ms": bounds.read_chain(synced, b.base_set),
                  "plan_apply_5pct_latency_20ms": bounds.read_chain(synced, b.changed_set),
                  "apply_from_empty_latency_20ms": bounds.read_chain(empty, b.base_set)}
        scenarios = {"plan_latency_20ms": ("plan", b.base, b.synced_db),
                     "plan_apply_5pct_latency_20ms": ("apply", b.changed, b.synced_db),
                     "apply_from_empty_latency_20ms": ("apply", b.base, b.empty_db)}
        floors: dict[str, dict[str, Any]] = {}
        for name, (action, manifests, start) in scenarios.items():
            for side in self.sides:
                sides[side][name] = self.measure(side, action, manifests, start, faults=LATENCY_FAULTS)
            now = sides["now"][name]
            requests = sum(now["server_requests"].values())
            bare = self.bare(urls, b.synced_db, bare_async=True, requests=requests, faults=LATENCY_FAULTS)
            chain = chains[name] + now.get("apply_chain", 0) + (bounds.reread_chain(after) if action == "apply" else 0)
            floors[name] = {"requests": requests, "bare_async_wall_s": bare["wall_s"], "chain": chain,
                            "chain_s": round(chain * LATENCY_S, 3), "floor_s": max(bare["wall_s"], chain * LATENCY_S)}
        naive, _ = b.measure("naive", "plan", b.base, start=b.synced_db, faults=LATENCY_FAULTS)

        self.log(f"--rate-limit {RATE_LIMIT:g}, buckets of {RATE_LIMIT:g} and {SMALL_BUCKET:g}")
        for side in self.sides:
            for name, burst in (("rate_50", None), ("rate_50_bucket_5", SMALL_BUCKET)):
                rated = self.measure(side, "apply", b.changed, b.synced_db, rate_limit=RATE_LIMIT, rate_burst=burst)
                figures = rate_figures(rated, RATE_LIMIT)
                if burst is not None:  # the bucket starts with its own size, not a second's worth
                    seconds = figures["rate_s"]
                    figures["rate_fraction"] = round(figures["rate_calls"] / (burst + RATE_LIMIT * seconds), 3)
                sides[side][name] = {**figures, "failed": rated.get("failed", 0)}
        return {"floor": floor, "sync_bare": sync_bare, "async_bare": async_bare, "latency_floors": floors,
                "pieces": pieces,
                "naive_plan_latency_wall_s": naive["wall_s"], "sides": sides}


def figures(result: dict[str, Any], side: str) -> dict[str, Any]:
    """The targets' figures of one side (None where it was not measured)."""
    s = result["sides"].get(side)
    if s is None:
        return {}
    floor, sync_bare, async_bare = result["floor"], result["sync_bare"], result["async_bare"]
    plan, apply = s["plan"], s["apply"]
    read_cpu = plan["phase_cpu"].get("read_cpu_s", 0.0)
    writes = sum(n for m, n in apply["server_requests"].items() if m != "GET")
    per_write_ms = 1000 * apply["phase_cpu"].get("apply_cpu_s", 0.0) / writes if writes else 0.0
    out: dict[str, Any] = {
        "read_cpu_s": read_cpu,
        "read_over_bare": read_cpu / sync_bare["cpu_s"] if sync_bare["cpu_s"] else None,
        "read_over_bare_async": read_cpu / async_bare["cpu_s"] if async_bare["cpu_s"] else None,
        "plan_cpu_s": plan["cpu_s"],
        "plan_over_floor": plan["cpu_s"] / floor["cpu_floor_s"] if floor["cpu_floor_s"] else None,
        "cpu_per_write_ms": per_write_ms,
        "write_over_bare": per_write_ms / sync_bare["cpu_per_request_ms"] if sync_bare["cpu_per_request_ms"] else None,
    }
    for name, lf in result["latency_floors"].items():
        wall = wall_without_load(s[name])
        out[name] = {"wall_s": wall, "over_floor": wall / lf["floor_s"] if lf["floor_s"] else None,
                     "failed": s[name].get("failed", 0)}
    plan_wall = s["plan_latency_20ms"]["wall_s"]
    out["naive_over_plan"] = result["naive_plan_latency_wall_s"] / plan_wall if plan_wall else None
    for name in ("rate_50", "rate_50_bucket_5"):
        out[name] = s[name]
    return out


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of the event loop with the figure now and before, and whether now meets it."""
    now, before = figures(result, "now"), figures(result, "before")
    rows: list[dict[str, Any]] = []

    def add(target: str, key: Callable[[dict[str, Any]], Any], show: Callable[[Any], str],
            met: Callable[[Any], bool]) -> None:
        value = key(now)
        rows.append({"target": target, "now": show(value), "before": show(key(before)) if before else "-",
                     "met": bool(met(value))})

    ratio = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
    add(f"read CPU / bare loop <= {READ_TARGET}x", lambda f: f["read_over_bare"], ratio, lambda v: v <= READ_TARGET)
    add("read CPU / bare async loop", lambda f: f["read_over_bare_async"], ratio, lambda v: True)
    add(f"whole-plan CPU / floor <= {PLAN_TARGET}x", lambda f: f["plan_over_floor"], ratio, lambda v: v <= PLAN_TARGET)
    add(f"CPU per write / bare loop per request <= {WRITE_TARGET}x", lambda f: f["write_over_bare"], ratio,
        lambda v: v <= WRITE_TARGET)
    for name in result["latency_floors"]:
        add(f"{name}: wall (load excluded) / latency floor <= {LATENCY_TARGET}x",
            lambda f, n=name: f[n]["over_floor"], ratio, lambda v: v <= LATENCY_TARGET)  # type: ignore[misc]
    add(f"plan_latency_20ms: naive wall / ours >= {NAIVE_TARGET:g}x", lambda f: f["naive_over_plan"], ratio,
        lambda v: v >= NAIVE_TARGET)

    def rate(f: dict[str, Any]) -> str:
        return f"{f['rate_fraction']:.1%}, 429s {f['throttled_share']:.1%}, {f['failed']} failed"

    add(f"rate 50, bucket 50: >= {RATE_TARGET:.0%} of the rate, <= {THROTTLED_TARGET:.0%} 429s, no failed call",
        lambda f: f["rate_50"], rate, lambda v: v["rate_fraction"] >= RATE_TARGET
        and v["throttled_share"] <= THROTTLED_TARGET and v["failed"] == 0)
    add(f"rate 50, bucket {SMALL_BUCKET:g}: >= {SMALL_BUCKET_TARGET:.0%} of the rate, no failed call",
        lambda f: f["rate_50_bucket_5"], rate, lambda v: v["rate_fraction"] >= SMALL_BUCKET_TARGET and v["failed"] == 0)
    return rows


def table(scale: str, result: dict[str, Any], before: str) -> str:
    lines = [f"Scale {scale}: the event loop (now) against {before} (before), same run; CPU best of "
             f"{result['runs']}; load average {result['load']:.1f} at the end; {result['date']}",
             "", "| target | now | before | met |", "|---|---|---|---|"]
    lines += [f"| {t['target']} | {t['now']} | {t['before']} | {'yes' if t['met'] else 'NO'} |"
              for t in result["targets"]]
    f = result["floor"]
    read = {name: r["phase_cpu"]["read_cpu_s"] for name, r in
            (("lean", result["sides"]["now"]["plan"]), *result["pieces"].items())}
    lines += ["", f"What bypasses httpx (``client.lean``), read CPU of a plan in sync: {read['httpx']:.2f} s on an "
                  f"``httpx.AsyncClient`` with httpx's pool; {read['httpx-over-lean']:.2f} s on an ``httpx.AsyncClient`` "
                  f"over the lean connections (the pool saves {1 - read['httpx-over-lean'] / read['httpx']:.0%}); "
                  f"{read['lean']:.2f} s on ``LeanClient`` (the direct call saves "
                  f"{1 - read['lean'] / read['httpx-over-lean']:.0%} more)."]
    lines += ["", f"Floors: bare loop {result['sync_bare']['cpu_s']:.2f} s CPU for {result['sync_bare']['requests']} "
                  f"GETs ({result['sync_bare']['cpu_per_request_ms']:.3f} ms each); bare async loop "
                  f"{result['async_bare']['cpu_s']:.2f} s; parse floor {f['parse_s']:.2f} s. Latency floors: " +
              "; ".join(f"{n} {lf['floor_s']:.2f} s ({lf['requests']} requests: bare async loop "
                        f"{lf['bare_async_wall_s']:.2f} s, chain {lf['chain_s']:.2f} s)"
                        for n, lf in result["latency_floors"].items())]
    return "\n".join(lines)


def write_doc(doc: Path, scale: str, text: str) -> None:
    """This scale's section of ``docs/performance.md`` (between its markers), replaced or appended."""
    start, end = f"<!-- async-bench {scale} start -->", f"<!-- async-bench {scale} end -->"
    body = doc.read_text(encoding="utf-8")
    section = f"{start}\n{text}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(body):
        body = pattern.sub(lambda m: section, body)
    else:
        body = body.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(body, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.async_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="0.1", help="a factor (1.0 = large), or small (0.1) or large (1.0)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each CPU figure (the best is kept)")
    parser.add_argument("--before", default=BEFORE, help="the commit to measure beside ('' for none)")
    parser.add_argument("--write-doc", action="store_true", help="record the table in docs/performance.md")
    args = parser.parse_args(argv)
    scale = SCALES.get(args.scale) or float(args.scale)
    started = time.monotonic()

    def log(line: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {line}", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="reconciler-async-bench-") as tmp:
        before = archive(args.before, Path(tmp) / "before") if args.before else None
        result = Loop(scale, Path(tmp) / "work", args.runs, before, log).run()
    import os

    result.update(scale=args.scale, runs=args.runs, load=os.getloadavg()[0],
                  date=datetime.now(UTC).strftime("%Y-%m-%d"))
    result["targets"] = targets(result)
    text = table(args.scale, result, args.before or "-")
    print(text)
    print(json.dumps({"scale": args.scale, "targets": result["targets"],
                      "now": figures(result, "now"), "before": figures(result, "before")}))
    if args.write_doc:
        write_doc(DOC, args.scale, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
