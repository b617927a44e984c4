"""The long reliability soak (``make soak``, or ``python -m tests.soak``): the scenarios of
``tests/reliability`` over many seeds and larger desired states, then ``docs/reliability.md``
rewritten with the figures.

- **Faults**: for each seed, an empty emulator with ``seed=S,error_rate=0.1,reset_rate=0.02,
  commit_then_fail_rate=0.05`` and a rate limit; ``apply`` of N resources of every kind until it
  exits 0 (at most 3 runs); every resource listed through the API afterwards (no duplicate, counts
  equal the manifests), DELETEs counted against planned deletes, every failure named in the
  report, no secret in any output, request or answer where it should not be, and a clean plan.
- **Concurrency**: two ``apply`` processes of the same manifests at once, per seed.
- **Convergence**: random desired states of every kind, each applied over the previous one
  in-process; after each apply a full plan is empty.

Exit status 0 when every promise held, 1 otherwise (the document is written either way).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tests.reliability.generators import desired_state
from tests.reliability.harness import FAULTS, ROOT
from tests.reliability.scenarios import ConcurrentRun, FaultRun, apply_under_faults, concurrent_applies

DOC = ROOT / "docs" / "reliability.md"


@dataclass
class Soak:
    fault_runs: list[FaultRun] = field(default_factory=list)
    concurrent_runs: list[ConcurrentRun] = field(default_factory=list)
    convergence_states: int = 0
    convergence_resources: int = 0
    convergence_failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def problems(self) -> list[str]:
        out = [f"faults seed {r.seed} ({r.resources} resources): {p}" for r in self.fault_runs for p in r.problems()]
        out += [f"concurrency seed {r.seed}: {p}" for r in self.concurrent_runs for p in r.problems()]
        return out + self.convergence_failures


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def soak_faults(seeds: list[int], sizes: list[int], rate_limit: float, workdir: Path, soak: Soak) -> None:
    for n, seed in enumerate(seeds):
        size = sizes[n % len(sizes)]
        start = time.monotonic()
        run = apply_under_faults(seed, size, workdir, rate_limit=rate_limit)
        soak.fault_runs.append(run)
        _log(f"faults  seed {seed:>6} {size:>5} resources: runs {run.exit_codes}, {run.figures['faults']} faults, "
             f"{run.figures['requests']} requests, {time.monotonic() - start:.0f} s"
             + ("" if not run.problems() else f"  PROBLEMS: {run.problems()}"))


def soak_concurrency(seeds: list[int], size: int, workdir: Path, soak: Soak) -> None:
    for seed in seeds:
        run = concurrent_applies(seed, size, workdir)
        soak.concurrent_runs.append(run)
        _log(f"concurrent seed {seed:>6} {size:>5} resources: exits {run.exit_codes}, {run.conflicts} conflicts"
             + ("" if not run.problems() else f"  PROBLEMS: {run.problems()}"))


def soak_convergence(states: int, workdir: Path, soak: Soak) -> None:
    from tests.reliability.test_convergence_property import apply_and_check, in_process_service

    rng = random.Random(9)
    with in_process_service() as client:
        for n in range(states):
            state = desired_state(rng.randint(10, 120), random.Random(rng.random()))
            try:
                apply_and_check(state, workdir / f"convergence-{n}", client, f"v{n}")
            except AssertionError as exc:
                soak.convergence_failures.append(f"convergence state {n}: {str(exc)[:500]}")
            soak.convergence_states += 1
            soak.convergence_resources += len(state.documents)
    _log(f"convergence: {states} states, {len(soak.convergence_failures)} failures")


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=False, timeout=10)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def render(soak: Soak, args: argparse.Namespace) -> str:
    faults = soak.fault_runs
    total: Counter[str] = Counter()
    for r in faults:
        total.update(r.figures)
    conc = soak.concurrent_runs
    runs = sum(len(r.exit_codes) for r in faults)
    dup_f = sum(len(v) for r in faults for v in r.duplicates.values())
    dup_c = sum(len(v) for r in conc for v in r.duplicates.values())
    leaks_f = sum(len(r.leaks) for r in faults)
    leaks_c = sum(len(r.leaks) for r in conc)
    verdict = "every promise held" if not soak.problems() else f"{len(soak.problems())} PROBLEMS (listed below)"
    lines = [
        "# Reliability",
        "",
        "What users trust a reconciler for: it never duplicates, never deletes what it should not, never",
        "leaks a key, and always converges. `make test` proves it on bounded sets (`tests/reliability/`);",
        "`make soak` (`python -m tests.soak`) repeats it over many seeds and larger sets and rewrites this page.",
        "",
        "<!-- generated by `python -m tests.soak`; edit tests/soak.py, not this file -->",
        "",
        f"Last soak: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}, commit `{_commit()}`, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {soak.seconds / 60:.1f} minutes: "
        f"**{verdict}**.",
        "",
        "## Figures",
        "",
        "| scenario | seeds | runs of `apply` | resources | faults injected | 429s | requests sent "
        "| duplicates | unplanned deletes | unreported failures | leaks | converged |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| faults (`{FAULTS}`, rate limit {args.rate_limit:g}/s) | {len(faults)} | {runs} "
        f"| {sum(r.resources for r in faults):,} | {total['faults']:,} | {total['throttled']:,} "
        f"| {total['requests']:,} | {dup_f} | {sum(r.deletes_sent - r.planned_deletes for r in faults)} "
        f"| {sum(len(r.unreported) for r in faults)} | {leaks_f} "
        f"| {sum(r.converged for r in faults)} of {len(faults)} within 3 runs |",
        f"| two concurrent applies | {len(conc)} | {2 * len(conc)} | {sum(r.resources for r in conc):,} "
        f"| 0 ({sum(r.conflicts for r in conc):,} create races met 409) | 0 | {sum(r.requests for r in conc):,} "
        f"| {dup_c} | 0 | 0 | {leaks_c} | {sum(not r.problems() for r in conc)} of {len(conc)} |",
        f"| convergence (random states, in-process) | {soak.convergence_states} | {soak.convergence_states} "
        f"| {soak.convergence_resources:,} | 0 | 0 | | | | | "
        f"| {soak.convergence_states - len(soak.convergence_failures)} of {soak.convergence_states} |",
        "",
        "Faults injected, in detail: "
        f"{total['errors']:,} 5xx answers without processing, {total['resets']:,} connection resets, "
        f"{total['commit_then_fail']:,} writes committed and then answered 5xx; "
        f"{total['real_5xx']} 5xx answers that were not injected. "
        f"Failed `apply` runs (exit 1, every failed call listed): {sum(r.failed_runs for r in faults)}.",
        "",
        "How each figure is measured:",
        "",
        "- *requests sent*, *faults injected*, *429s*: every exchange recorded at the emulator's socket",
        "  (a reset is an exchange with no answer; an injected 5xx says so in its problem body).",
        "- *duplicates*: every kind listed through the API after the runs; a name (or a restricted",
        "  resource id) held twice. The live count of each kind must also equal the manifests'.",
        "- *unplanned deletes*: DELETE requests in `GET /_emulator/stats` minus the deletes the plans",
        "  announced (zero from empty).",
        "- *unreported failures*: a resource missing after a run that exited 1 but is named in neither",
        "  the `Failed` nor the `Skipped` list of its report (or a run that exited 0 with one missing).",
        "- *leaks*: a canary secret (every API key, api_key and header value is a random canary) in any",
        "  command output, or on the wire anywhere but the `Authorization` header (the API key) or the",
        "  body of a create or update of an integration (manifest secrets), or in any answer.",
        "",
        "## Faults, seed by seed",
        "",
        "| seed | resources | exit codes | requests | faults | 429s | duplicates | leaks | problems |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in faults:
        lines.append(f"| {r.seed} | {r.resources} | {' '.join(map(str, r.exit_codes))} | {r.figures['requests']:,} "
                     f"| {r.figures['faults']} | {r.figures['throttled']} "
                     f"| {sum(len(v) for v in r.duplicates.values())} | {len(r.leaks)} "
                     f"| {'; '.join(r.problems()) or 'none'} |")
    lines += [
        "",
        "## What `make test` covers (`tests/reliability/`, bounded)",
        "",
        "| promise | test |",
        "|---|---|",
        "| faults: 300 resources of every kind converge within 3 runs, no duplicate, no unplanned delete, "
        "every failure reported | `test_faults.py` |",
        "| concurrency: two applies at once, one of each resource, a clean plan | `test_concurrency.py` |",
        "| convergence property (hypothesis): apply then plan is empty | `test_convergence_property.py` |",
        "| `drift` sends nothing but GET (emulator stats) | `test_drift_readonly.py` |",
        "| secrets: no canary in output, logs, errors, plan files, exports, tracebacks, or the wrong request "
        "| `test_secrets.py` |",
        "| bad input: bombs, huge files, deep nesting, non-UTF-8, duplicate keys, wrong types, unknown fields: "
        "exit 1, no request | `test_bad_input.py` |",
        "| the emulator never answers 5xx to malformed bodies, over-long values, odd encodings "
        "(fuzz corpus in `tests/reliability/fuzz/`, mutations, schemathesis negative mode) "
        "| `test_emulator_fuzz.py` |",
        "",
        "A defect the suite finds is kept as a test marked `xfail(strict=True)` naming the defect, so it",
        "fails loudly the day the defect is fixed and the mark must go.",
    ]
    problems = soak.problems()
    if problems:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=16, help="fault seeds (default 16)")
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--sizes", default="400,800,1200", help="resources per seed, cycled (default 400,800,1200)")
    parser.add_argument("--rate-limit", type=float, default=150.0, help="requests per second (default 150)")
    parser.add_argument("--concurrent", type=int, default=4, help="concurrent-apply seeds (default 4)")
    parser.add_argument("--concurrent-size", type=int, default=400)
    parser.add_argument("--states", type=int, default=60, help="random states for the convergence soak")
    parser.add_argument("--out", type=Path, default=DOC, help=f"where to write the report (default {DOC})")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    soak = Soak()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        work = Path(tmp)
        soak_faults(seeds, sizes, args.rate_limit, work, soak)
        soak_concurrency(seeds[:args.concurrent], args.concurrent_size, work, soak)
        soak_convergence(args.states, work, soak)
    soak.seconds = time.monotonic() - start
    args.out.write_text(render(soak, args), encoding="utf-8")
    _log(f"wrote {args.out} ({soak.seconds / 60:.1f} minutes); "
         + ("every promise held" if not soak.problems() else f"{len(soak.problems())} problems"))
    return 0 if not soak.problems() else 1


if __name__ == "__main__":
    sys.exit(main())
