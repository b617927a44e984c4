"""Benchmark: how long the command takes to start.

Run as ``python -m benchmarks.startup [--runs N] [--write-doc]``. In one run it times, as child
processes of this Python and interleaved round by round (so a busy machine weighs on every figure
alike), ``python -c "import click"`` (the floor: a click program cannot start faster), then
``reconciler --version``, ``reconciler --help`` and ``reconciler validate manifests`` (the quickstart
tree), and prints each median wall time and median CPU time (user + system of the child, from
``os.wait4``) as ratios of the floor's, beside its target. The machine may be shared: CPU time
counts only the child's own work, wall time also the waiting for a core; both are printed, with the
load average before and after. Then it runs
``python -X importtime`` on ``--version`` and on ``validate manifests`` and prints the ten modules that
cost the most (their own time). ``--write-doc`` records the figures in ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: (name, argv after the interpreter, the largest ratio to the floor the issue allows)
COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("import click", ["-c", "import click"], None),
    ("reconciler --version", ["-m", "reconciler", "--version"], 1.5),
    ("reconciler --help", ["-m", "reconciler", "--help"], 1.5),
    ("reconciler validate manifests", ["-m", "reconciler", "validate", "manifests"], 7.0),
]
NOTES = ("What the commands skip (docs/ARCHITECTURE.md, Start-up): `--version` and `--help` import click and light "
         "modules only; `validate` imports pydantic, PyYAML and the manifest models, but not the HTTP stack, the "
         "planner, rich or python-jsonschema (an AGENT input schema is checked by jsonschema-rs, 70 ms of imports "
         "less; python-jsonschema only words a problem). Nothing else is skipped: pydantic looks for its plugins "
         "(`importlib.metadata`) and every command ends with the interpreter's normal exit, as the floor does. "
         "That costs about 0.15x of the floor on `--version` and `--help` and 1.3x on `validate`: until c4d4f58 a "
         "stand-in for pydantic's private plugin loader and an `os._exit` after the exit handlers skipped both "
         "(CPU ratios then, on this machine on 2026-11-28: 1.05-1.13x, 1.15-1.23x and 3.88-4.12x).")
IMPORTTIME = [("reconciler --version", ["--version"]), ("reconciler validate manifests", ["validate", "manifests"])]


def _run(argv: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one child ``python ARGV``; CPU = its user + system time."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=_env())
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, [sys.executable, *argv])
    return wall, usage.ru_utime + usage.ru_stime


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECONCILER_", "PYTHONPROFILE"))}
    return {**env, "PYTHONDONTWRITEBYTECODE": "", "NO_COLOR": "1"}


def measure(runs: int) -> dict[str, Any]:
    for _, argv, _ in COMMANDS:  # warm the page cache and the bytecode caches
        _run(argv)
    load_before = os.getloadavg()[0]
    times: dict[str, list[float]] = {name: [] for name, _, _ in COMMANDS}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in COMMANDS}
    for _ in range(runs):
        for name, argv, _ in COMMANDS:
            wall, used = _run(argv)
            times[name].append(wall)
            cpu[name].append(used)
    load_after = os.getloadavg()[0]
    floor, cpu_floor = statistics.median(times["import click"]), statistics.median(cpu["import click"])
    rows = []
    for name, _, target in COMMANDS:
        median, cpu_median = statistics.median(times[name]), statistics.median(cpu[name])
        rows.append({"command": name, "median_s": round(median, 4), "best_s": round(min(times[name]), 4),
                     "ratio": round(median / floor, 2), "cpu_s": round(cpu_median, 4),
                     "cpu_ratio": round(cpu_median / cpu_floor, 2), "target": target})
    return {"kind": "startup", "date": date.today().isoformat(), "runs": runs, "cpus": os.cpu_count(),
            "load": [round(load_before, 2), round(load_after, 2)], "rows": rows,
            "importtime": {name: importtime(args) for name, args in IMPORTTIME}}


def importtime(args: list[str], top: int = 10, runs: int = 7) -> list[dict[str, Any]]:
    """The ``top`` modules by their own import time (µs) for ``python -X importtime -m reconciler ARGS``,
    each figure the median of ``runs`` runs (one run on a shared machine is mostly noise)."""
    seen: dict[str, list[tuple[int, int]]] = {}
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "reconciler", *args], cwd=ROOT,
                              capture_output=True, text=True, env=_env(), check=True)
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
                continue
            own, cumulative, name = line.removeprefix("import time:").split("|")
            seen.setdefault(name.strip(), []).append((int(own), int(cumulative)))
    modules: list[dict[str, Any]] = [{"module": name, "self_us": int(statistics.median(o for o, _ in times)),
                "cumulative_us": int(statistics.median(c for _, c in times))} for name, times in seen.items()]
    return sorted(modules, key=lambda m: -m["self_us"])[:top]


def table(result: dict[str, Any]) -> str:
    """The start-up section of docs/performance.md (readable on a terminal too)."""
    load = result.get("load")
    lines = [f"`python -m benchmarks.startup`: each command run {result['runs']} times, interleaved with the floor "
             "`python -c \"import click\"` (no click program starts faster); median wall time and median CPU time "
             "(user + system of the child process); ratio = median / the floor's median, measured in the same run"
             + (f", on {result.get('cpus')} CPUs with a load average of {load[0]} before and {load[1]} after "
                "(wall time includes waiting for a core; CPU time does not)" if load else "") + ".", "",
             "| command | median wall s | best wall s | wall ratio | median CPU s | CPU ratio | target | met |",
             "|---|---:|---:|---:|---:|---:|---|---|"]
    for r in result["rows"]:
        target = f"<= {r['target']}x" if r["target"] else "-"
        worst = max(r["ratio"], r.get("cpu_ratio", r["ratio"]))
        met = "-" if not r["target"] else "yes" if worst <= r["target"] else "NO"
        cpu_s = f"{r['cpu_s']:.3f}" if "cpu_s" in r else "-"
        cpu_ratio = f"{r['cpu_ratio']:.2f}x" if "cpu_ratio" in r else "-"
        lines.append(f"| {r['command']} | {r['median_s']:.3f} | {r['best_s']:.3f} | {r['ratio']:.2f}x | {cpu_s} | "
                     f"{cpu_ratio} | {target} | {met} |")
    lines += ["", NOTES]
    for name, modules in result["importtime"].items():
        lines += ["", f"`python -X importtime -m {name}`: the ten modules that cost the most (their own time, "
                      "median of 7 runs; cumulative includes what they import):", "",
                  "| module | self ms | cumulative ms |", "|---|---:|---:|"]
        lines += [f"| {m['module']} | {m['self_us'] / 1000:.1f} | {m['cumulative_us'] / 1000:.1f} |" for m in modules]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--write-doc", action="store_true", help="record the figures in docs/performance.md")
    args = parser.parse_args()
    result = measure(args.runs)
    print(table(result))
    print(json.dumps(result))
    if args.write_doc:
        from benchmarks import report

        report.write_doc(ROOT / "docs/performance.md", "startup", result)


if __name__ == "__main__":
    main()
