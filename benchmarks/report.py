"""The benchmark's output: the table printed after a run, the targets checked against the
figures, and ``docs/performance.md`` (both scales; each run replaces its own scale's section and
keeps the other's, whose figures live in the document as a JSON comment, and every section written
by hand)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from reconciler.client.settings import DEFAULT_PARALLELISM

RATIO_TARGET = 1.05
LATENCY_SPEEDUP_TARGET = 6.0
RSS_TARGET_MB = 400.0
BIG_RSS_TARGET_MB = 1024.0
BIG_PLAN_TARGET_S = 60.0
RATE_TARGET = 0.95
THROTTLED_TARGET = 0.02
CPU_FLOOR_TARGET = 1.25  # plan_in_sync CPU / (bare loop + parse floor)
LOAD_FLOOR_TARGET = 1.5  # load phase CPU / parse floor
WRITE_FLOOR_TARGET = 1.5  # apply_from_empty CPU per write / bare loop CPU per request
LATENCY_FLOOR_TARGET = 1.3  # wall / latency floor at 20 ms
GROWTH_TARGET = 12.0  # wall(1.0) / wall(0.1)

_DATA = re.compile(r"<!-- bench-data ([\w.]+): (.*?) -->")


def total(requests: dict[str, int]) -> int:
    return sum(requests.values())


def writes(requests: dict[str, int]) -> int:
    return sum(n for method, n in requests.items() if method != "GET")


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target with the figure measured and whether it is met."""
    by = {r["scenario"]: r for r in rows}
    out: list[dict[str, Any]] = []

    def add(name: str, figure: Any, met: bool) -> None:
        out.append({"target": name, "figure": figure, "met": bool(met)})

    for r in rows:
        if r["ratio"] is not None and "rate_fraction" not in r:
            add(f"{r['scenario']}: requests / lower_bound <= {RATIO_TARGET}", r["ratio"], r["ratio"] <= RATIO_TARGET)
    if "plan_in_sync" in by:
        one = by["plan_in_sync"]
        add("plan_in_sync: zero writes", writes(one["requests"]), writes(one["requests"]) == 0)
        floor = one.get("floor")
        if floor:
            ratio = one["cpu_s"] / floor["cpu_floor_s"] if floor["cpu_floor_s"] else 0.0
            add(f"plan_in_sync: reconciler CPU <= {CPU_FLOOR_TARGET}x (bare loop + parse floor)",
                f"{one['cpu_s']:.2f} s / {floor['cpu_floor_s']:.2f} s = {ratio:.2f}x", ratio <= CPU_FLOOR_TARGET)
            load = one.get("phase_cpu", {}).get("load_cpu_s", 0.0)
            ratio = load / floor["parse_s"] if floor["parse_s"] else 0.0
            add(f"plan_in_sync: load phase CPU <= {LOAD_FLOOR_TARGET}x its parse floor",
                f"{load:.2f} s / {floor['parse_s']:.2f} s = {ratio:.2f}x", ratio <= LOAD_FLOOR_TARGET)
    three = by.get("apply_from_empty")
    if three is not None and three.get("cpu_per_write_ms") is not None:
        ratio = three["cpu_per_write_ms"] / three["bare_cpu_per_request_ms"] if three["bare_cpu_per_request_ms"] else 0
        add(f"apply_from_empty: CPU per write <= {WRITE_FLOOR_TARGET}x the bare loop's CPU per request",
            f"{three['cpu_per_write_ms']:.3f} ms / {three['bare_cpu_per_request_ms']:.3f} ms = {ratio:.2f}x",
            ratio <= WRITE_FLOOR_TARGET)
    for r in rows:
        lf = r.get("latency_floor")
        if lf:
            add(f"{r['scenario']}: wall / latency floor <= {LATENCY_FLOOR_TARGET}",
                f"{r['wall_s']:.2f} s / {lf['floor_s']:.2f} s = {lf['wall_over_floor']:.2f}",
                lf["wall_over_floor"] <= LATENCY_FLOOR_TARGET)
    if "plan_latency_20ms" in by and by["plan_latency_20ms"].get("naive_wall_over_ours") is not None:
        speedup = by["plan_latency_20ms"]["naive_wall_over_ours"]
        add(f"plan_latency_20ms: wall <= 1/{LATENCY_SPEEDUP_TARGET:g} of naive", f"naive/ours = {speedup}",
            speedup >= LATENCY_SPEEDUP_TARGET)
    peak = max(r["peak_rss_mb"] for r in rows)
    add(f"peak RSS <= {RSS_TARGET_MB:g} MB", peak, peak <= RSS_TARGET_MB)
    if "apply_5pct_rate_limit_50" in by:
        rated = by["apply_5pct_rate_limit_50"]
        add(f"apply under --rate-limit {rated['rate_limit']:g}: >= {RATE_TARGET:.0%} of the rate, 429s <= "
            f"{THROTTLED_TARGET:.0%} of requests, no failed call",
            f"{rated['rate_fraction']:.1%}, 429s {rated['throttled']} = {rated.get('throttled_share', 0):.1%}, "
            f"{rated['failed']} failed",
            rated["rate_fraction"] >= RATE_TARGET and rated.get("throttled_share", 1) <= THROTTLED_TARGET
            and rated["failed"] == 0)
    return out


def growth(results: dict[str, Any]) -> list[dict[str, Any]]:
    """wall(1.0) / wall(0.1) for every scenario measured at both scales."""
    small, large = _at(results, 0.1), _at(results, 1.0)
    if small is None or large is None:
        return []
    before = {r["scenario"]: r for r in small["rows"]}
    out = []
    for r in large["rows"]:
        b = before.get(r["scenario"])
        if b is None or not b["wall_s"]:
            continue
        ratio = r["wall_s"] / b["wall_s"]
        out.append({"target": f"{r['scenario']}: wall(1.0) / wall(0.1) <= {GROWTH_TARGET:g}",
                    "figure": f"{r['wall_s']:.2f} s / {b['wall_s']:.2f} s = {ratio:.1f}", "met": ratio <= GROWTH_TARGET})
    return out


def _at(results: dict[str, Any], factor: float) -> dict[str, Any] | None:
    return next((r for r in results.values() if r.get("factor") == factor and "rows" in r), None)


def _methods(requests: dict[str, int]) -> str:
    return " ".join(f"{m}:{n}" for m, n in sorted(requests.items()))


def table(result: dict[str, Any]) -> str:
    """A Markdown table (readable on a terminal too)."""
    if result.get("kind") == "big_dataset":
        from benchmarks.big import table as big_table

        return big_table(result)
    if result.get("kind") == "models":
        return models_table(result)
    if result.get("kind") == "startup":
        from benchmarks.startup import table as startup_table

        return startup_table(result)
    lines = [
        f"Scale {result['scale']} ({_account(result['account'])}; {result['change']} resources changed in the 5% "
        f"change; {result['cpus']} CPUs; load average {result.get('load', 0):.1f} at the end)",
        "",
        "| scenario | wall s | requests | by method | lower bound | ratio | CPU s | peak RSS MB |"
        " naive wall s | naive requests | naive wall / ours |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        naive = r.get("naive")
        lines.append(
            f"| {r['scenario']} | {r['wall_s']:.2f} | {total(r['requests'])} | {_methods(r['requests'])} | "
            f"{r['lower_bound']} | {r['ratio']:.3f} | {r.get('cpu_s', r['planner_cpu_s']):.2f} | "
            f"{r['peak_rss_mb']:.0f} | "
            + (f"{naive['wall_s']:.2f} | {total(naive['requests'])} | {r['naive_wall_over_ours']:.1f}x |" if naive
               else "- | - | - |"))
    lines += ["", "| target | figure | met |", "|---|---|---|"]
    lines += [f"| {t['target']} | {t['figure']} | {'yes' if t['met'] else 'NO'} |" for t in result["targets"]]
    lines += ["", "Lower bound by part (list pages + per-resource reads + writes + re-read):", ""]
    for r in result["rows"]:
        b = r["bound"]
        lines.append(f"- {r['scenario']}: {b['list_pages']} + {b['per_resource_reads']} + {b['writes']} + "
                     f"{b['reread']} = {b['total']}; wall by phase {_compact(r.get('phases', {}))}; "
                     f"reconciler CPU by phase {_compact(r.get('phase_cpu', {}))}, of which in HTTP "
                     f"{r.get('http_cpu_s')}; emulator CPU {r.get('emulator_cpu_s')}")
    floored = next((r for r in result["rows"] if "floor" in r), None)
    if floored is not None:
        f = floored["floor"]
        lines.append(
            f"- CPU floor of {floored['scenario']}, measured in the same run: the bare loop (the same "
            f"{f['bare_requests']} GETs, same httpx settings, JSON parsed, one after another) {f['bare_cpu_s']:g} s of "
            f"CPU ({f['bare_cpu_per_request_ms']:g} ms a request, {f['bare_wall_s']:g} s wall) + the parse floor "
            f"(libyaml events of {f['manifest_files']} manifest files {f['yaml_events_s']:g} s + json of "
            f"{f['examples_files']} examples files {f['examples_json_s']:g} s) = {f['cpu_floor_s']:g} s; ours "
            f"{floored.get('cpu_s')} s")
    single = floored.get("parallelism_1") if floored is not None else None
    if single is not None and floored is not None:
        lines.append(
            f"- {floored['scenario']} with one thread instead of {DEFAULT_PARALLELISM} (same run, same account): CPU "
            f"{single['cpu_s']:g} s (read {single['read_cpu_s']:g} s, wall {single['wall_s']:g} s) against "
            f"{floored.get('cpu_s')} s (read {floored.get('phase_cpu', {}).get('read_cpu_s')} s): the threads' "
            f"contention for the interpreter lock costs {floored.get('cpu_s', 0) - single['cpu_s']:.2f} s of CPU "
            "here, where the emulator answers in well under a millisecond (pyinstrument, sampling one thread, "
            "cannot show it)")
    for r in result["rows"]:
        lf = r.get("latency_floor")
        if lf:
            lines.append(f"- latency floor of {r['scenario']}: max(CPU floor {lf['cpu_floor_s']:g} s, chain "
                         f"{lf['chain']} x 20 ms = {lf['chain_s']:g} s, requests x 20 ms / 10 = {lf['spread_s']:g} s) "
                         f"= {lf['floor_s']:g} s; wall {r['wall_s']:g} s = {lf['wall_over_floor']:.2f}x"
                         + _after_load(r, lf))
    rated = next((r for r in result["rows"] if "rate_fraction" in r), None)
    if rated is not None:
        lines.append(f"- rate limit: {rated['rate_calls']} calls in {rated['rate_s']} s (read, apply, re-read) = "
                     f"{rated['rate_achieved']} calls/s under a limit of {rated['rate_limit']:g}/s: "
                     f"{rated['rate_fraction']:.1%} of what the bucket allowed (capacity + rate x time); "
                     f"{rated['throttled']} answers were 429 ({rated.get('throttled_share', 0):.1%} of the requests "
                     f"sent); the pace the client learnt: {rated.get('learnt_rate')}/s")
    before = _profiles_before().get("scales", {}).get(result["scale"], {})
    for r in result["rows"]:
        prof = r.get("profile")
        if prof:
            lines += ["", f"Profile of {r['scenario']} (pyinstrument, parallelism 1, own time by function; "
                          f"{prof['sampled_s']} s sampled, {prof.get('waiting_s', 0)} s waiting on sockets "
                          f"and locks left out; CPU {r.get('cpu_s')} s):", ""]
            lines += [f"{i}. {t['where']}: {t['s']} s ({t['share']:.0%})" for i, t in enumerate(prof["top"], 1)]
            old = before.get(r["scenario"])
            if old:
                lines += ["", f"Before, at commit {_profiles_before()['commit']} (the run before the CPU work of issue "
                              f"18; {old['profile']['sampled_s']} s sampled, CPU {old.get('cpu_s')} s):", ""]
                lines += [f"{i}. {t['where']}: {t['s']} s ({t['share']:.0%})"
                          for i, t in enumerate(old["profile"]["top"], 1)]
    return "\n".join(lines)


def _profiles_before() -> dict[str, Any]:
    """The profiles and CPU figures of the last ``make bench`` before the CPU work on the planner
    (``benchmarks/profile_before.json``), shown beside today's."""
    path = Path(__file__).with_name("profile_before.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def models_table(result: dict[str, Any]) -> str:
    """``benchmarks.model_bench``: validate and plan CPU now, and with the code before the typed core."""
    now, before = result["now"], result.get("before")
    lines = [f"`python -m benchmarks.model_bench` at scale {now['scale']} ({now['resources']:,} resources), best of "
             f"{result['runs']} runs: `load_manifests` (what `reconciler validate` does) and `make_plan` against an "
             "in-sync account (read without the manifests, so the plan compares every example), now and with the "
             f"`reconciler` package of commit {before['commit'] if before else '-'} (before the pydantic models: the "
             "hand-written `fieldtypes.py`, untyped live state), measured in the same run on the same account.", "",
             "| figure | before | now | target | met |", "|---|---:|---:|---|---|"]
    for key, label in (("validate_cpu_s", "validate CPU s"), ("validate_s", "validate wall s"),
                       ("plan_cpu_s", "make_plan CPU s (in sync)")):
        old = before.get(key) if before else None
        new = now.get(key)
        met = "-" if old is None or new is None else ("yes" if new <= old else "NO")
        lines.append(f"| {label} | {old if old is not None else '-'} | {new if new is not None else '-'} | "
                     f"now <= before | {met} |")
    house, counted = result.get("house"), result.get("product_lines")
    if house:  # the kind registry's redesign, measured against the commit before it
        new = now.get("plan_cpu_s")
        lines.append(f"| make_plan CPU s (in sync), before = {house['commit']} (the kind registry) | {house['plan_cpu_s']} | {new} "
                     f"| now <= before | {'yes' if new <= house['plan_cpu_s'] else 'NO'} |")
    if counted and len(counted) == 2:
        (_, ours), (ref, theirs) = counted.items()
        lines.append(f"| product lines outside the emulator (non-blank, non-comment), before = {ref} (the kind registry) | "
                     f"{theirs['code']:,} | {ours['code']:,} | now <= before | "
                     f"{'yes' if ours['code'] <= theirs['code'] else 'NO'} |")
    return "\n".join(lines)


def _after_load(row: dict[str, Any], lf: dict[str, Any]) -> str:
    """The same ratio without the load phase, which no request may overlap: a manifest that does
    not validate is refused before the first request."""
    load = (row.get("phases") or {}).get("load_s")
    if not load or not lf.get("floor_s"):
        return ""
    return (f"; without the load phase ({load:g} s, before any request by contract) "
            f"{row['wall_s'] - load:.3g} s = {(row['wall_s'] - load) / lf['floor_s']:.2f}x")


def _compact(values: dict[str, float]) -> str:
    return ", ".join(f"{k.replace('_cpu_s', '').replace('_s', '')} {v:g}" for k, v in values.items()) or "-"


def _account(account: dict[str, int]) -> str:
    return (f"{account['llm_integrations']} LLM and {account['agent_integrations']} AGENT integrations, "
            f"{account['prompts']} prompts, {account['datasets']} datasets of {account['examples_per_dataset']} "
            f"examples, {account['evaluators']} evaluators, {account['experiments']} experiments, "
            f"{account['spaces']} spaces")


#: The headings of the sections ``render_doc`` writes from bench-data; any other ``## `` section of
#: the page was written by hand (the policy bench, pull at scale 1.0...) and is kept as it is.
_RENDERED = re.compile(r"## (Growth$|Scale [0-9.]+ \(measured|big_dataset \(measured|The typed core "
                       r"\(measured|Start-up \(measured|How the lower bound is computed$|"
                       r"Reading the figures$)")


def hand_written(text: str) -> list[str]:
    """The sections of a page that no bench-data renders, each from its ``## `` heading to the
    next one, in the page's order (bench-data comments are not part of them)."""
    sections = re.split(r"(?m)^(?=## )", text)[1:]
    kept = []
    for section in sections:
        heading = section.split("\n", 1)[0]
        if not _RENDERED.match(heading):
            body = "\n".join(line for line in section.splitlines() if not _DATA.match(line))
            kept.append(body.rstrip("\n"))
    return kept


def write_doc(path: Path, scale: str, result: dict[str, Any]) -> None:
    """Rewrite ``path`` with this scale's result, the figures of the other scales it held, and the
    sections written by hand (``hand_written``)."""
    results: dict[str, Any] = {}
    kept: list[str] = []
    if path.exists():
        text = path.read_text(encoding="utf-8")
        kept = hand_written(text)
        for name, data in _DATA.findall(text):
            if name not in ("big_dataset", "models", "startup") and not re.fullmatch(r"[0-9.]+", name):
                continue  # sections of an earlier layout (small, large)
            try:
                results[name] = json.loads(data)
            except ValueError:
                continue
    results[scale] = result
    path.write_text(render_doc(results, kept), encoding="utf-8")
    plot(results, path.with_suffix(".png"))


def _order(name: str, result: dict[str, Any]) -> tuple[int, float]:
    kind = result.get("kind")
    ranks = {"big_dataset": 1, "models": 2, "startup": 3}
    return (ranks[kind], 0.0) if kind in ranks else (0, float(result.get("factor", 0)))


def render_doc(results: dict[str, Any], hand_written_sections: list[str] | None = None) -> str:
    """The page: the sections of the results, then the hand-written ones, then how the bound is
    computed and how to read the figures, then the results as bench-data comments."""
    from benchmarks import bounds

    order = sorted(results, key=lambda name: _order(name, results[name]))
    parts = [DOC_HEAD]
    grown = growth(results)
    if grown:
        parts += ["## Growth", "", "Every scenario at scale 0.1, 0.3 and 1.0; `docs/performance.png` plots wall "
                  "time and requests against the resources declared, ours and the naive baseline.", "",
                  "![wall and requests against resources](performance.png)", "",
                  "| target | figure | met |", "|---|---|---|"]
        parts += [f"| {t['target']} | {t['figure']} | {'yes' if t['met'] else 'NO'} |" for t in grown]
        parts += [""]
    for name in order:
        result = results[name]
        title = {"big_dataset": "big_dataset", "models": "The typed core",
                 "startup": "Start-up"}.get(result.get("kind", ""),
                                                                                        f"Scale {name}")
        parts += [f"## {title} (measured {result['date']})", "", table(result), ""]
    for section in hand_written_sections or []:
        parts += [section, ""]
    parts += ["## How the lower bound is computed", "", (bounds.__doc__ or "").strip(), "", DOC_TAIL]
    parts += [f"<!-- bench-data {name}: {json.dumps(results[name], separators=(',', ':'))} -->" for name in order]
    return "\n".join(parts) + "\n"


def plot(results: dict[str, Any], path: Path) -> bool:
    """``docs/performance.png``: wall time and requests against declared resources, per scenario,
    ours (solid) and the naive baseline (dashed). False when fewer than two scales are known."""
    scales = sorted((r for r in results.values() if "rows" in r and r.get("kind") not in ("big_dataset", "startup")),
                    key=lambda r: r["factor"])
    if len(scales) < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (walls, reqs) = plt.subplots(1, 2, figsize=(12, 5))
    names = [r["scenario"] for r in scales[-1]["rows"]]
    for i, name in enumerate(names):
        color = f"C{i % 10}"
        xs, wall, req, naive_x, naive_wall, naive_req = [], [], [], [], [], []
        for result in scales:
            row = next((r for r in result["rows"] if r["scenario"] == name), None)
            if row is None:
                continue
            resources = result.get("resources") or sum(v for k, v in result["account"].items()
                                                       if k not in ("examples_per_dataset", "experiments", "spaces"))
            xs.append(resources)
            wall.append(row["wall_s"])
            req.append(total(row["requests"]))
            if row.get("naive"):
                naive_x.append(resources)
                naive_wall.append(row["naive"]["wall_s"])
                naive_req.append(total(row["naive"]["requests"]))
        walls.plot(xs, wall, "o-", color=color, label=name)
        reqs.plot(xs, req, "o-", color=color, label=name)
        if naive_x:
            walls.plot(naive_x, naive_wall, "x--", color=color, label=f"{name} (naive)")
            reqs.plot(naive_x, naive_req, "x--", color=color, label=f"{name} (naive)")
    for ax, label in ((walls, "wall time (s)"), (reqs, "requests")):
        ax.set_xlabel("resources declared")
        ax.set_ylabel(label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    walls.legend(fontsize=7)
    fig.suptitle("reconciler against the local emulator: ours (solid) and the naive baseline (dashed)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


DOC_HEAD = """# Performance

Regenerated by `make bench` (`python -m benchmarks.run --scale 0.1`, `0.3`, `1.0`, then
`python -m benchmarks.big` and `python -m benchmarks.model_bench --write-doc`); do not edit the figures by hand. Each run rewrites its own section
and keeps the others (their figures live in this page as JSON comments); the plot
(`docs/performance.png`) is drawn from them. Every target is printed beside its figure, met or not.

A plan's cost is its HTTP calls and the CPU it spends on each: users run it on every pull request
against large accounts behind a rate limit. The benchmark builds an account in a fresh emulator
(its own process, a SQLite file, a real socket), then measures, for the reconciler and for a naive
baseline on the same account:

1. `plan_in_sync`: plan when everything is in sync.
2. `plan_apply_5pct`: plan and apply after 5% of every kind changed, then the convergence check.
3. `apply_from_empty`: apply to an account that has only its spaces, then the convergence check.
4. The three again with the emulator's `--faults latency_ms=20` (every request 20 ms slower):
   `plan_latency_20ms` (with the naive baseline), `plan_apply_5pct_latency_20ms`,
   `apply_from_empty_latency_20ms`.
5. `apply_5pct_rate_limit_50`: scenario 2 under `--rate-limit 50` (requests per second per key;
   scale 1.0 only).
6. `big_dataset` (`benchmarks/big.py`): one dataset of 1,000,000 examples (a 178 MB JSONL file,
   keyed) created, planned in sync, then changed by 1% (changed, deleted and appended).

**Naive baseline** (`benchmarks/naive.py`): the same live read with `parallelism=1` (sequential), the
same planner, and on apply one write per declared resource whether or not it changed, sequentially,
with no re-read.

**How it is measured.** Every run is a child process (`benchmarks/worker.py`) calling the library
(`workflow.load`, `read_live`, `make_plan`, `run_apply`, `confirm_converged`) at the default
`--parallelism` (10). `requests` are counted by the emulator (`GET /_emulator/stats`, reset before
each run; a 429 counts as a request). `wall_s` covers the whole job, manifest loading included.
`CPU s` is the worker's CPU time (all threads, `time.process_time`), loading included; the phase
lines split it by step. `peak_rss_mb` is the worker's `ru_maxrss`. The emulator's CPU is its own.

**The floors, measured in the same run.** The *bare loop* (`worker.bare_loop`) sends the very GETs
`plan_in_sync` sent (recorded by its own run) with the same httpx client settings
(`build_http_client`: headers, timeouts, a pool sized to the parallelism), one after another, and
parses each body as JSON: the least CPU a request can cost here. The *parse floor*
(`worker.parse_floor`) parses the manifests (libyaml events, no values built) and the examples files
(one `json.loads` each). The CPU floor of `plan_in_sync` is the two added; the load phase's floor is
the parse floor; a write's floor is the bare loop's CPU per request. The *latency floor* of a run
at 20 ms is max(CPU floor, longest chain of dependent requests x 20 ms, requests x 20 ms / 10):
the CPU floor there is the bare loop's CPU per request for each request sent plus the parse floor;
the chain is counted from the account (a list's pages follow one another; a space's lists follow
the spaces list; a resource's own reads follow its space's list; apply adds its plan's dependency
depth and the re-read its longest list, `benchmarks/bounds.py: read_chain, reread_chain`).

**Profiles.** Where the CPU targets are missed the page shows the top five costs by own time
(pyinstrument, `make bench` at scales 0.1 and 1.0): the profiled run uses parallelism 1 with its thread
pools run inline (pyinstrument samples one thread), and leaves out time spent waiting on sockets,
locks and queues (pyinstrument samples wall time).

**The account.** LLM integrations cycle over every provider of `reconciler/providers.py`; AGENT
integrations have 3 request presets and a secret header; every prompt has the label `production`
and every tenth is restricted; datasets have a `key` and a JSONL `examples_file`, and all declare
retention `{keep_last: 10, older_than_days: 30}`; evaluators name an LLM integration. At scale 1.0:
2,000 LLM and 500 AGENT integrations, 1,000 prompts, 200 datasets of 500 examples, 200 evaluators,
2,000 experiments, 10 spaces; every count is multiplied by the scale. **The 5% change** edits one
resource in 20 of each kind.
"""

DOC_TAIL = """The bound counts each list at its own page count, so the lists the reconciler reads in parallel
add up as they would sequentially; the ratio measures extra requests, not latency. `big_dataset`'s
bound (`benchmarks/big.py`): list pages, pages of 500 examples, one POST for the create (the API
takes a dataset's examples in its create), one update and one append call and one delete call per
1,000 ids for the change (one new version), and the re-read of the examples after each apply.

## Reading the figures

- **Pacing, not 429s** (`reconciler/client/pacing.py`). The API publishes no rate and its
  `Retry-After` is whole seconds ("1" when the next token comes in 20 ms), so the client measures the
  rate: when the service answers 429 its bucket is empty; when it does so again it is empty again,
  so the requests it answered in between were paid by the tokens it refilled in between:
  `rate = answered / seconds`. The first 429 has no earlier one: its window runs from the first
  request to the end of its `Retry-After`. Every worker then takes a slot from one GCRA budget at
  98.5% of that rate, which probes upwards while no 429 comes (faster the longer it has been), and a
  429 of a request already in flight when the last one was seen counts once. The 429 itself is
  still obeyed (every worker waits its `Retry-After`); the budget banks at most one second of
  requests during the wait, which is what the service's bucket refilled meanwhile.
- **A million examples.** The examples file is read a block at a time and decoded in chunks of
  5,000 lines (it is never one string); the live read compares each page of a keyed dataset's
  examples with the declared ones as it arrives and keeps only the keys of those that are equal
  (the plan's pin digest of ids and `updated_at` is computed on the way), so the examples are not
  held twice; a create body with a very long list is encoded and sent a chunk at a time, and a
  body is copied only where a reference is substituted. The emulator stores examples in SQLite,
  indexed by (kind, parent, seq), and pages them by keyset (`seq > cursor`), never by OFFSET.
- **CPU per request.** What stays above the floors is the reconciler's own work: building every
  manifest value with its line marks and checking every field (the load phase, several times its
  parse floor: the floor builds no value), the client's retry, pacing and redaction bookkeeping
  around each request, and `make_plan`. The profiles show where.
- **Before and after** (pyinstrument, scale 0.1, own time; before = commit 61db855, after = this
  page's runs). `apply_from_empty` before: `copy.deepcopy` 0.103 s (5%), httpcore's response
  iterator 0.096 s (4%), the YAML value builder `yamlload._build` 0.092 s (4%), the benchmark's own
  `time.thread_time` around each exchange 0.065 s (3%), `copy._deepcopy_dict` 0.062 s (3%). Every
  planned body was deep-copied before its references were substituted; substitution now copies
  on write, so the two deepcopy entries are gone. `plan_in_sync` before: `yamlload._build` 0.156 s
  (10%), `time.thread_time` 0.124 s (8%), `SSLContext.load_verify_locations` 0.105 s (7%, loading
  the CA bundle when the client is built: the bare loop pays it too), `compile` 0.074 s (5%,
  imports on first use), `json.raw_decode` 0.055 s (4%).
"""
