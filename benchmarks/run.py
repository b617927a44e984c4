"""``python -m benchmarks.run --scale 0.1|0.3|1.0``: the cost of plan and apply on a large account.

It builds an account (``benchmarks.account``) in a fresh emulator served by its own process over a
real socket (``benchmarks.server``), then measures the scenarios of ``docs/performance.md``, each
for the reconciler (and the naive baseline, ``benchmarks.naive``, where it is compared) on the same
account (the emulator's SQLite file is restored from a snapshot before every run): plan in sync,
plan and apply after a 5% change, apply from empty; the three again at ``--faults latency_ms=20``;
the 5% change under ``--rate-limit 50`` (unless ``--no-rate-limit``); with ``--profile``,
pyinstrument profiles of plan in sync and apply from empty. Beside them, measured in the same run:
the bare loop and the parse floor (``floor_figures``) and each latency run's floor (``latency``).

Each measured run is a child process (``benchmarks.worker``) so its CPU time and peak RSS are its
own. Requests are counted by the emulator (``GET /_emulator/stats``, reset before each run); the
lower bound comes from the account's shape (``benchmarks.bounds``, counted from the SQLite file by
``benchmarks.census``). It prints a table, then one JSON line per scenario, and rewrites
``docs/performance.md`` with this scale's figures (the other scales' are kept) and the plot.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import bounds, report
from benchmarks.account import RETENTION, SCALES, SECRET_ENV, AccountSpec, change_of, write_manifests
from benchmarks.census import Census, take
from benchmarks.seed import seed_experiments, seed_spaces
from benchmarks.server import by_method, copy_db, emulator, read_stats, reset_stats
from reconciler.client.settings import DEFAULT_PARALLELISM
from reconciler.manifests import load_manifests

RATE_LIMIT = 50.0
LATENCY_FAULTS = "latency_ms=20"
LATENCY_S = 0.020
ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"


def run_worker(job: dict[str, Any], root: Path = ROOT) -> dict[str, Any]:
    """A worker run; ``root`` holds the ``reconciler`` and ``benchmarks`` packages it runs (another
    commit's, for the figures before a change)."""
    env = {**os.environ, **SECRET_ENV, "RECONCILER_API_KEY": "admin-key", "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "benchmarks.worker", json.dumps(job)], env=env, cwd=root,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark worker failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class Bench:
    """One benchmark run at one scale, in a temporary directory."""

    def __init__(self, scale: float, work: Path, examples: int = 500, log: Any = print) -> None:
        self.spec = AccountSpec.at(scale, examples=examples)
        self.change = change_of(self.spec)
        self.work = work
        self.log = log
        self.base = write_manifests(self.spec, work / "base")
        self.changed = write_manifests(self.spec, work / "changed", self.change)
        for key, value in SECRET_ENV.items():
            os.environ.setdefault(key, value)
        self.base_set = load_manifests([str(self.base)])
        self.changed_set = load_manifests([str(self.changed)])
        self.empty_db = work / "empty.db"
        self.synced_db = work / "synced.db"
        self.db = work / "run.db"

    # ------------------------------------------------------------------ measuring

    def measure(self, mode: str, action: str, manifests: Path, *, rate_limit: float | None = None,
                faults: str | None = None, start: Path, floor: bool = False, urls_out: Path | None = None,
                profile: bool = False, parallelism: int | None = None, rate_burst: float | None = None,
                root: Path = ROOT, extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], Census]:
        """One worker run on a copy of ``start``; returns its result (with the emulator's counts)
        and the census of the account afterwards."""
        copy_db(start, self.db)
        with emulator(self.db, rate_limit=rate_limit, faults=faults, rate_burst=rate_burst) as served:
            reset_stats(served.url)
            cpu0 = served.cpu_s()
            job = {"mode": mode, "action": action, "manifests": str(manifests), "url": served.url,
                   "floor": floor, "urls_out": str(urls_out) if urls_out else None, "profile": profile,
                   **(extra or {})}
            result = run_worker(job if parallelism is None else {**job, "parallelism": parallelism}, root)
            result["emulator_cpu_s"] = round(served.cpu_s() - cpu0, 2)
            result["server_requests"] = by_method(read_stats(served.url))
        return result, take(self.db)

    def setup(self) -> None:
        self.log("setting up: spaces")
        with emulator(self.empty_db) as served:
            seed_spaces(served.url, self.spec)

    # ------------------------------------------------------------------ scenarios

    def scenarios(self, *, rate_run: bool = True, profile: bool = False) -> list[dict[str, Any]]:
        self.setup()
        empty = take(self.empty_db)
        out: list[dict[str, Any]] = []

        self.log("apply from an empty account")
        ours, after = self.measure("ours", "apply", self.base, start=self.empty_db)
        copy_db(self.db, self.synced_db)
        naive, _ = self.measure("naive", "apply", self.base, start=self.empty_db)
        lists, per = bounds.read_bound(empty, self.base_set)
        bound3 = bounds.Bound(lists, per, bounds.create_writes(self.base_set),
                              bounds.create_reread(after, self.base_set))
        three = self.row("apply_from_empty", ours, naive, bound3)
        chain3 = bounds.read_chain(empty, self.base_set) + ours.get("apply_chain", 0) + bounds.reread_chain(after)

        self.log("seeding experiments")
        with emulator(self.synced_db) as served:
            seed_experiments(served.url, self.spec)
        synced = take(self.synced_db)

        self.log("plan in sync, and its floor (the bare loop and the parse floor)")
        ours, _ = self.measure("ours", "plan", self.base, start=self.synced_db)
        naive, _ = self.measure("naive", "plan", self.base, start=self.synced_db)
        bound1 = bounds.Bound(*bounds.read_bound(synced, self.base_set), 0, 0)
        one = self.row("plan_in_sync", ours, naive, bound1)
        urls = self.work / "plan_in_sync.urls"
        floored, _ = self.measure("ours", "plan", self.base, start=self.synced_db, floor=True, urls_out=urls)
        copy_db(self.synced_db, self.db)
        with emulator(self.db) as served:
            bare = run_worker({"mode": "ours", "action": "plan", "manifests": str(self.base), "url": served.url,
                               "bare": str(urls)})
        floor = floor_figures(floored["floor"], bare)
        one["floor"] = floor
        # the same plan with one thread: what ten threads cost in CPU (their contention for the GIL)
        single, _ = self.measure("ours", "plan", self.base, start=self.synced_db, parallelism=1)
        one["parallelism_1"] = {"cpu_s": single["cpu_s"], "wall_s": single["wall_s"],
                                "read_cpu_s": single["phase_cpu"].get("read_cpu_s")}
        out.append(one)
        chain1 = bounds.read_chain(synced, self.base_set)

        self.log("plan and apply after a 5% change")
        now_iso = datetime.now(UTC).isoformat()
        ours, after2 = self.measure("ours", "apply", self.changed, start=self.synced_db)
        naive, _ = self.measure("naive", "apply", self.changed, start=self.synced_db)
        writes = self._change_writes(synced, now_iso)
        bound2 = bounds.Bound(*bounds.read_bound(synced, self.changed_set), writes,
                              bounds.change_reread(after2, self.change, after2.integrations["LLM"],
                                                   after2.integrations["AGENT"]))
        out.append(self.row("plan_apply_5pct", ours, naive, bound2))
        chain2 = chain1 + ours.get("apply_chain", 0) + bounds.reread_chain(after2)
        out.append(three)
        self.per_write(three, floor)

        self.log(f"every scenario again with --faults {LATENCY_FAULTS}")
        ours, _ = self.measure("ours", "plan", self.base, faults=LATENCY_FAULTS, start=self.synced_db)
        naive, _ = self.measure("naive", "plan", self.base, faults=LATENCY_FAULTS, start=self.synced_db)
        out.append(self.latency(self.row("plan_latency_20ms", ours, naive, bound1), floor, chain1))
        ours, _ = self.measure("ours", "apply", self.changed, faults=LATENCY_FAULTS, start=self.synced_db)
        out.append(self.latency(self.row("plan_apply_5pct_latency_20ms", ours, None, bound2), floor, chain2))
        ours, _ = self.measure("ours", "apply", self.base, faults=LATENCY_FAULTS, start=self.empty_db)
        out.append(self.latency(self.row("apply_from_empty_latency_20ms", ours, None, bound3), floor, chain3))

        if rate_run:
            self.log(f"plan and apply after a 5% change under --rate-limit {RATE_LIMIT:g}")
            ours, _ = self.measure("ours", "apply", self.changed, rate_limit=RATE_LIMIT, start=self.synced_db)
            rated = self.row("apply_5pct_rate_limit_50", ours, None, bound2)
            rated.update(rate_figures(ours, RATE_LIMIT))
            out.append(rated)
        if profile:
            self.log("profiles (pyinstrument, parallelism 1)")
            for name, action, start in (("plan_in_sync", "plan", self.synced_db),
                                        ("apply_from_empty", "apply", self.empty_db)):
                profiled, _ = self.measure("ours", action, self.base, start=start, profile=True)
                next(r for r in out if r["scenario"] == name)["profile"] = profiled["profile"]
        return out

    @staticmethod
    def per_write(row: dict[str, Any], floor: dict[str, Any]) -> None:
        """apply_from_empty's CPU per write (its apply phase's CPU over the writes it sent) beside
        the bare loop's CPU per request."""
        writes = report.writes(row["requests"])
        apply_cpu = row.get("phase_cpu", {}).get("apply_cpu_s", 0.0)
        row["cpu_per_write_ms"] = round(1000 * apply_cpu / writes, 4) if writes else None
        row["bare_cpu_per_request_ms"] = floor["bare_cpu_per_request_ms"]

    @staticmethod
    def latency(row: dict[str, Any], floor: dict[str, Any], chain: int) -> dict[str, Any]:
        """The latency floor: max(CPU floor, longest chain x latency, requests x latency / parallelism);
        the CPU floor is the bare loop's CPU per request for each request, plus the parse floor."""
        requests = report.total(row["requests"])
        cpu_floor = floor["bare_cpu_per_request_ms"] / 1000 * requests + floor["parse_s"]
        parts = {"cpu_floor_s": round(cpu_floor, 3), "chain": chain, "chain_s": round(chain * LATENCY_S, 3),
                 "spread_s": round(requests * LATENCY_S / DEFAULT_PARALLELISM, 3)}
        latency_floor = max(parts["cpu_floor_s"], parts["chain_s"], parts["spread_s"])
        row["latency_floor"] = {**parts, "floor_s": round(latency_floor, 3),
                                "wall_over_floor": round(row["wall_s"] / latency_floor, 3) if latency_floor else None}
        return row

    def _change_writes(self, synced: Census, now_iso: str) -> int:
        from benchmarks.account import CHANGED_KEEP_LAST

        writes, _ = bounds.change_writes(synced, self.spec, self.change, CHANGED_KEEP_LAST,
                                         RETENTION["older_than_days"], now_iso)
        return writes

    def row(self, scenario: str, ours: dict[str, Any], naive: dict[str, Any] | None,
            bound: bounds.Bound) -> dict[str, Any]:
        requests = ours["server_requests"]
        total = sum(requests.values())
        row: dict[str, Any] = {
            "scenario": scenario,
            "wall_s": ours["wall_s"],
            "requests": requests,
            "lower_bound": bound.total,
            "ratio": round(total / bound.total, 4) if bound.total else None,
            "planner_cpu_s": ours["planner_cpu_s"],
            "cpu_s": ours["cpu_s"],
            "peak_rss_mb": ours["peak_rss_mb"],
            "bound": bound.as_json(),
            "phases": ours.get("phases", {}),
            "phase_cpu": ours.get("phase_cpu", {}),
            "http_cpu_s": ours.get("http_cpu_s"),
            "emulator_cpu_s": ours.get("emulator_cpu_s"),
            "client": ours.get("client", {}),
            "failed": ours.get("failed", 0),
            "converged": ours.get("converged"),
        }
        if naive is not None:
            naive_total = sum(naive["server_requests"].values())
            row["naive"] = {"wall_s": naive["wall_s"], "requests": naive["server_requests"],
                            "ratio": round(naive_total / bound.total, 4) if bound.total else None,
                            "planner_cpu_s": naive["planner_cpu_s"], "peak_rss_mb": naive["peak_rss_mb"],
                            "emulator_cpu_s": naive.get("emulator_cpu_s"),
                            "failed": naive.get("failed", 0)}
            row["naive_wall_over_ours"] = round(naive["wall_s"] / ours["wall_s"], 2) if ours["wall_s"] else None
        return row


def floor_figures(floor: dict[str, Any], bare: dict[str, Any]) -> dict[str, Any]:
    """The CPU floor of a plan in sync, measured in the same run: the bare loop over the same GETs
    (``worker.bare_loop``: send, parse the JSON) plus the parse floor of the manifests and examples
    files (``worker.parse_floor``, whose ``responses_json_s`` the bare loop already includes)."""
    parse = floor["yaml_events_s"] + floor["examples_json_s"]
    return {**floor, "parse_s": round(parse, 3), "bare_cpu_s": bare["cpu_s"], "bare_requests": bare["requests"],
            "bare_wall_s": bare["wall_s"], "bare_cpu_per_request_ms": bare["cpu_per_request_ms"],
            "cpu_floor_s": round(bare["cpu_s"] + parse, 3)}


def rate_figures(result: dict[str, Any], rate: float) -> dict[str, Any]:
    """The rate the whole ``apply`` (read, plan, writes, re-read) reached under the limit: calls that
    succeeded (429s are waits, not calls) over what the token bucket could let through in that
    time, ``capacity + rate * seconds`` (it starts full, capacity = rate)."""
    calls = sum(result.get("client", {}).get("requests", {}).values())
    attempts = result.get("client", {}).get("attempts", 0)
    phases = result.get("phases", {})
    seconds = sum(v for k, v in phases.items() if k != "load_s")
    allowed = max(1.0, rate) + rate * seconds
    return {"rate_limit": rate, "rate_calls": calls, "rate_s": round(seconds, 3),
            "rate_achieved": round(calls / seconds, 2) if seconds else 0.0,
            "rate_fraction": round(calls / allowed, 3),
            "throttled": result.get("client", {}).get("throttled", 0),
            "throttled_share": round(result.get("client", {}).get("throttled", 0) / attempts, 4) if attempts else 0.0,
            "learnt_rate": result.get("pacing", {}).get("rate")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="0.1", help="a factor (1.0 = large), or small (0.1) or large (1.0)")
    parser.add_argument("--examples", type=int, default=500, help="examples per dataset")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/performance.md")
    parser.add_argument("--no-rate-limit", action="store_true", help="skip the --rate-limit 50 run")
    parser.add_argument("--profile", action="store_true", help="also profile plan_in_sync and apply_from_empty")
    parser.add_argument("--workdir", help="keep the manifests and SQLite snapshots here (default: a temp dir)")
    args = parser.parse_args(argv)
    scale = SCALES.get(args.scale) or float(args.scale)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reconciler-bench-") as tmp:
        work = Path(args.workdir) if args.workdir else Path(tmp)
        bench = Bench(scale, work, examples=args.examples,
                      log=lambda line: print(f"[{time.monotonic() - started:7.1f}s] {line}", file=sys.stderr))
        rows = bench.scenarios(rate_run=not args.no_rate_limit, profile=args.profile)
    result = {"scale": args.scale, "factor": scale, "account": bench.spec.as_json(),
              "resources": bench.spec.resources, "load": os.getloadavg()[0],
              "change": bench.change.resources, "cpus": os.cpu_count(),
              "date": datetime.now(UTC).strftime("%Y-%m-%d"), "rows": rows,
              "targets": report.targets(rows)}
    print(report.table(result))
    for row in rows:
        print(json.dumps({k: row[k] for k in ("scenario", "wall_s", "requests", "lower_bound", "ratio",
                                              "planner_cpu_s", "peak_rss_mb")}
                         | {k: row[k] for k in ("naive", "rate_fraction", "floor", "latency_floor") if k in row}))
    if not args.no_doc:
        report.write_doc(DOC, args.scale, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
