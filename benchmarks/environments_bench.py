"""``python -m benchmarks.environments_bench --scale 0.3``: ``plan --all`` over three environments,
each its own account (its own emulator process, over a loopback socket, holding the same synced
account), against the slowest of the three planned alone (``plan --env NAME``).

The accounts are read at once, so ``plan --all`` should cost about the slowest alone, not the sum
(target: <= 1.2x). Each figure is the command's wall as a user runs it (``python -m reconciler``,
start-up included), the best of ``--runs``; once as the emulator answers, once at ``--faults
latency_ms=20`` (a service across a network). Beside each, the command's own CPU (user and system;
the emulators are processes of their own): ``plan --all`` reads the three accounts on one event
loop, in one interpreter, so its wall cannot be under its CPU, about the three alone's together
less two start-ups. With ``--write-doc`` the table goes to
``docs/performance.md`` (its own section)."""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.account import SCALES
from benchmarks.run import LATENCY_FAULTS, ROOT, Bench
from benchmarks.seed import seed_experiments
from benchmarks.server import copy_db, emulator

DOC = ROOT / "docs" / "performance.md"
TARGET = 1.2
NAMES = ("staging", "production", "eu")


def project(root: Path, base: Path, urls: list[str]) -> Path:
    lines = ["environments:"]
    for name, url in zip(NAMES, urls, strict=True):
        lines += [f"  {name}:", f"    base_url: {url}", "    api_key: {env: BENCH_API_KEY}", f"    paths: [{base}]"]
    path = root / "reconciler.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(args: list[str], cwd: Path) -> tuple[float, float]:
    """The command's wall and its CPU (user + system: the emulators are other processes)."""
    env = {**os.environ, "BENCH_API_KEY": "admin-key", "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "reconciler", *args], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 2):
        raise RuntimeError(f"reconciler {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(bench: Bench, work: Path, runs: int, faults: str | None) -> dict[str, float]:
    with ExitStack() as stack:
        urls = []
        for name in NAMES:
            db = work / f"{name}.db"
            copy_db(bench.synced_db, db)
            urls.append(stack.enter_context(emulator(db, faults=faults)).url)
        tree = work / "project"
        tree.mkdir(exist_ok=True)
        project(tree, bench.base, urls)
        alone = {name: min(run(["plan", "--env", name], tree) for _ in range(runs)) for name in NAMES}
        together = min(run(["plan", "--all"], tree) for _ in range(runs))
    slowest = max(wall for wall, _ in alone.values())
    return {**{f"alone_{n}_s": round(wall, 3) for n, (wall, _) in alone.items()}, "slowest_alone_s": round(slowest, 3),
            "all_s": round(together[0], 3), "ratio": round(together[0] / slowest, 3),
            "alone_cpu_sum_s": round(sum(cpu for _, cpu in alone.values()), 3), "all_cpu_s": round(together[1], 3)}


def table(scale: str, plain: dict[str, float], latency: dict[str, float], runs: int) -> str:
    def row(label: str, f: dict[str, float], target: bool) -> str:
        met = ("yes" if f["ratio"] <= TARGET else "NO") if target else "-"
        return (f"| {label} | {f['slowest_alone_s']:.2f} s | {f['all_s']:.2f} s | {f['ratio']:.2f}x | "
                f"{'<= ' + str(TARGET) + 'x' if target else '-'} | {met} | {f['all_cpu_s']:.2f} s | "
                f"{f['alone_cpu_sum_s']:.2f} s |")
    load = os.getloadavg()[0]
    return "\n".join([
        f"`plan --all` over three environments (three accounts, each its own emulator over a loopback "
        f"socket), scale {scale}, best of {runs}; load average {load:.1f} at the end; "
        f"{datetime.now(UTC).strftime('%Y-%m-%d')}", "",
        "| run | slowest environment alone | plan --all | ratio | target | met | plan --all CPU | "
        "the three alone, CPU |", "|---|---|---|---|---|---|---|---|",
        row("as the emulator answers", plain, True), row(f"--faults {LATENCY_FAULTS}", latency, False)])


def write_doc(scale: str, text: str) -> None:
    start, end = f"<!-- environments-bench {scale} start -->", f"<!-- environments-bench {scale} end -->"
    body = DOC.read_text(encoding="utf-8")
    section = f"{start}\n{text}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    body = pattern.sub(lambda m: section, body) if pattern.search(body) else (
        body.rstrip("\n") + f"\n\n## Environments planned together\n\n{section}\n")
    DOC.write_text(body, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.environments_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="0.3")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args(argv)
    scale = SCALES.get(args.scale) or float(args.scale)
    with tempfile.TemporaryDirectory(prefix="reconciler-env-bench-") as tmp:
        work = Path(tmp)
        bench = Bench(scale, work / "account", log=lambda line: print(line, file=sys.stderr))
        bench.setup()
        bench.measure("ours", "apply", bench.base, start=bench.empty_db)
        copy_db(bench.db, bench.synced_db)
        with emulator(bench.synced_db) as served:
            seed_experiments(served.url, bench.spec)
        plain = measure(bench, work, args.runs, None)
        latency = measure(bench, work, args.runs, LATENCY_FAULTS)
    text = table(args.scale, plain, latency, args.runs)
    print(text)
    print({"plain": plain, "latency": latency})
    if args.write_doc:
        write_doc(args.scale, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
