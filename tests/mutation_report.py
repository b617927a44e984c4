"""``make mutation``: run mutmut over the core and write ``docs/testing.md`` from its results.

    python -m tests.mutation_report --run --write docs/testing.md   # what is left to check (long)
    python -m tests.mutation_report --run --module reconciler/plan/lifecycle.py   # of one module
    python -m tests.mutation_report --run --again --module ...      # every mutant of it again
    python -m tests.mutation_report --run --module M --tests tests/pull   # with only these tests (quick)
    python -m tests.mutation_report --write docs/testing.md         # the doc from the last results
    python -m tests.mutation_report --merge OTHER.json --write docs/testing.md   # with another run's

Results are kept between runs and machines in ``tests/mutation_results.json`` (see ``restore``):
a run checks the mutants not killed yet (never run, or surviving: a test added since may kill
them) and the mutants of every function whose text changed since.

The configuration (what mutmut copies, the test selection) is ``[tool.mutmut]`` in pyproject.toml;
what counts as the core is ``SCOPE`` below: a module, or only the functions of it that are the
part named (the retry logic of the HTTP client, the ownership checks of the validator). A mutant
that survives is either killed by a new test or listed in ``tests/mutation_equivalents.toml`` with
the reason it cannot be (behaviour no user can tell apart).

An equivalent is recorded by what it is, not by mutmut's number for it: the function it mutates and
the text of the lines it changes, before and after (``MutantKey``; each line stripped of its
indentation). mutmut numbers the mutants of a function in order, so an edit above the mutated spot
renumbers them; the function and the text stay until the line itself is edited.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.toml"
RESULTS = ROOT / "tests" / "mutation_results.json"
MUTMUT = Path(sys.executable).parent / "mutmut"

#: module -> the functions mutated (None: every function of it). Methods are ``Class.method``.
SCOPE: dict[str, tuple[str, ...] | None] = {
    "reconciler/fieldkinds.py": None,
    "reconciler/plan/changes.py": None,
    "reconciler/plan/context.py": None,
    "reconciler/plan/datasets.py": None,
    "reconciler/plan/evaluators.py": None,
    "reconciler/plan/ignore.py": None,
    "reconciler/plan/integrations.py": None,
    "reconciler/plan/lifecycle.py": None,
    "reconciler/plan/liveview.py": None,
    "reconciler/plan/model.py": None,
    "reconciler/plan/pins.py": None,
    "reconciler/plan/planfile.py": None,
    "reconciler/plan/planner.py": None,
    "reconciler/plan/prompts.py": None,
    "reconciler/plan/prune.py": None,
    "reconciler/plan/registry.py": None,
    "reconciler/plan/render.py": None,
    "reconciler/plan/restrictions.py": None,
    "reconciler/plan/review.py": None,
    "reconciler/plan/schema.py": None,
    "reconciler/plan/select.py": None,
    "reconciler/manifests/overlay.py": None,
    "reconciler/manifests/validate.py": None,
    "reconciler/client/pacing.py": None,
    "reconciler/client/limit.py": None,
    "reconciler/client/lean.py": None,
    "reconciler/client/http.py": (
        "ApiClient._call", "ApiClient._recover", "ApiClient._connect_budget", "ApiClient._exhausted",
        "ApiClient._paced", "ApiClient._wait_for_gate", "ApiClient._throttle", "ApiClient._backoff",
        "ApiClient._jittered", "_retry_after",
    ),
    "reconciler/apply/executor.py": None,
    "reconciler/telemetry.py": None,
    # what decides a write, a refusal or a decision shown: not all run yet, see docs/testing.md
    "reconciler/policy/evaluate.py": None,
    "reconciler/manifests/policy_fields.py": None,
    "reconciler/manifests/policies.py": None,
    "reconciler/pull/engine.py": None,
    "reconciler/pull/since.py": None,
    "reconciler/pull/yamledit.py": None,
    "reconciler/rehearse.py": None,
    "reconciler/export.py": None,
    "reconciler/workflow.py": None,
    "reconciler/watch.py": (  # its decisions, not the socket plumbing (HealthServer._run, start, close)
        "parse_duration", "check_notify_url", "parse_address", "Watcher.cycle", "Watcher._ended",
        "Watcher._reported", "Watcher._allowed", "Watcher.delay", "Watcher._desired", "Watcher._report_plan",
        "Watcher._notify", "Watcher._post", "Watcher.healthy", "HealthServer.answer", "tree_stamp", "_short",
    ),
    "reconciler/apply/confirm.py": None,
    "reconciler/apply/recover.py": None,
    "reconciler/apply/resolve.py": None,
    "reconciler/client/live.py": None,
    "reconciler/essence.py": None,
    "reconciler/manifests/confine.py": None,
    "reconciler/manifests/yamlload.py": None,
    "reconciler/files.py": None,
    "reconciler/manifests/ignores.py": None,
    "reconciler/saved.py": None,
    "reconciler/client/redaction.py": None,
}

KILLED = {1, 3, 36, 37, -24, 24, 152, 255}  # a failing test, a timeout, or refused by the type checker
NOT_CHECKED = {None, 2}


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def function_glob(path: str, function: str) -> str:
    """mutmut 3's name for the mutants of one function: ``module.x_f__mutmut_N`` for a function,
    ``module.xǁClassǁmethod__mutmut_N`` for a method."""
    cls, _, name = function.rpartition(".")
    mangled = f"xǁ{cls}ǁ{name}" if cls else f"x_{name}"
    return f"{module_name(path)}.{mangled}__mutmut_*"


def function_of(mutant: str) -> str:
    """The dotted name of the function a mutant mutates: ``reconciler.telemetry.x__labels__mutmut_2``
    -> ``reconciler.telemetry._labels``; ``...xǁTelemetryǁattach__mutmut_1`` -> ``...Telemetry.attach``."""
    module, _, mangled = mutant.rpartition("__mutmut_")[0].rpartition(".")
    name = ".".join(mangled.split("ǁ")[1:]) if mangled.startswith("xǁ") else mangled.removeprefix("x_")
    return f"{module}.{name}"


@dataclass(frozen=True)
class MutantKey:
    """What a mutant is, whatever mutmut numbers it: its function, the lines it changes as the code
    reads them (``original``) and as the mutant does (``mutated``), each stripped, joined by newlines;
    and, when the function holds the same line more than once (``if wait > 0:`` twice), which of the
    mutants changing that text the same way it is, in source order (``occurrence``, from 1)."""

    function: str
    original: str
    mutated: str
    occurrence: int = 1

    @property
    def text(self) -> tuple[str, str, str]:
        return self.function, self.original, self.mutated


def key_of(mutant: str, diff: Iterable[str], occurrence: int = 1) -> MutantKey:
    """The key of ``mutant`` from its diff lines (``diff_of``: ``-`` the original, ``+`` the mutant)."""
    lines = list(diff)
    return MutantKey(function_of(mutant), "\n".join(line[1:].strip() for line in lines if line.startswith("-")),
                     "\n".join(line[1:].strip() for line in lines if line.startswith("+")), occurrence)


def mutant_keys(mutants: Iterable[str], every: Iterable[str], diff: Callable[[str], list[str]]) -> dict[str, MutantKey]:
    """The key of each of ``mutants``; ``every``: all the mutants of their modules, among which a
    mutant's occurrence is counted (only those of its function with a lower number are read)."""
    every = sorted(set(every), key=_natural)
    keys: dict[str, MutantKey] = {}
    for mutant in mutants:
        key = key_of(mutant, diff(mutant))
        base, n = _natural(mutant)
        earlier = [m for m in every if _natural(m)[0] == base and _natural(m)[1] < n]
        same = sum(1 for m in earlier if key_of(m, diff(m)).text == key.text)
        keys[mutant] = MutantKey(*key.text, same + 1)
    return keys


def globs(modules: Iterable[str]) -> list[str]:
    out: list[str] = []
    for path in modules:
        functions = SCOPE[path]
        out += [f"{module_name(path)}.*"] if functions is None else [function_glob(path, f) for f in functions]
    return out


def in_scope(path: str, mutant: str) -> bool:
    functions = SCOPE[path]
    if functions is None:
        return True
    return any(mutant.startswith(function_glob(path, f).removesuffix("*")) for f in functions)


@dataclass
class ModuleResult:
    path: str
    killed: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)  # survived, or no test reaches it
    unchecked: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.killed) + len(self.survived) + len(self.unchecked)


def load_results() -> dict[str, ModuleResult]:
    """Each module's results: from ``mutants/`` after a run, else as stored (``stored_results``)."""
    results: dict[str, ModuleResult] = {}
    stored = stored_results()
    for path in SCOPE:
        meta = ROOT / "mutants" / (path + ".meta")
        result = results[path] = ModuleResult(path)
        if meta.exists():
            codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        elif path in stored:
            codes = meta_of(path, stored[path])["exit_code_by_key"]
        else:
            continue
        for mutant, code in sorted(codes.items(), key=lambda kv: _natural(kv[0])):
            if not in_scope(path, mutant):
                continue
            if code in KILLED:
                result.killed.append(mutant)
            elif code in NOT_CHECKED:
                result.unchecked.append(mutant)
            else:
                result.survived.append(mutant)
    return results


def _natural(name: str) -> tuple[str, int]:
    base, _, n = name.rpartition("__mutmut_")
    return base, int(n) if n.isdigit() else 0


def diff_of(mutant: str) -> list[str]:
    """The lines the mutant changes (``-`` the original, ``+`` the mutant), from mutmut's diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        diff = get_diff_for_mutant(mutant)
    except Exception as exc:  # noqa: BLE001 - a mutant whose source moved: say so, do not stop the report
        return [f"(no diff: {type(exc).__name__})"]
    finally:
        os.chdir(cwd)
    return [line for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


@dataclass(frozen=True)
class Earlier:
    """A module's row and survivors as the report being replaced showed them (``earlier_of``): kept for
    a module none of whose mutants ``mutants/`` holds a result of (not run since it was made), marked so."""

    row: str
    section: tuple[str, ...] = ()

    def counts(self) -> tuple[int, int, int, int, int] | None:
        """mutants, killed, equivalent, surviving, not run (None: the row has none)."""
        cells = [c.strip() for c in self.row.strip().strip("|").split("|")]
        try:
            return tuple(int(c) for c in cells[2:7])  # type: ignore[return-value]
        except ValueError:
            return None


def earlier_of(text: str) -> dict[str, Earlier]:
    """Each module's row of the table, and its section under "Surviving mutants", in a report."""
    rows: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("| `") and line.count("`") >= 2:
            rows[line.split("`")[1]] = line
        if line.startswith("## "):
            current = None
        elif line.startswith("### `"):
            current = sections.setdefault(line.split("`")[1], [])
        elif current is not None:
            current.append(line)
    return {path: Earlier(row, tuple(sections.get(path, ()))) for path, row in rows.items()}


def render(results: dict[str, ModuleResult], equivalents: Mapping[MutantKey, str],
           diff: Callable[[str], list[str]] | None = None, earlier: Mapping[str, Earlier] | None = None) -> str:
    """The report. ``diff``: a mutant's diff lines (``diff_of`` by default), by which a survivor is
    looked up among the ``equivalents``; ``earlier``: the rows and survivors of the report replaced,
    kept (marked "earlier run") for a module ``mutants/`` has no result of."""
    earlier = earlier or {}
    kept = {path: earlier[path] for path, r in results.items()
            if not r.killed and not r.survived and path in earlier and earlier[path].counts() is not None}
    read = diff or diff_of
    cache: dict[str, list[str]] = {}

    def diffs(mutant: str) -> list[str]:
        if mutant not in cache:
            cache[mutant] = read(mutant)
        return cache[mutant]

    recorded = {k.text for k in equivalents}
    keys: dict[str, MutantKey] = {}
    for r in results.values():
        every = [*r.killed, *r.survived, *r.unchecked]
        plain = {m: key_of(m, diffs(m)) for m in r.survived}
        keys |= plain | mutant_keys([m for m, k in plain.items() if k.text in recorded], every, diffs)
    version = _mutmut_version()
    lines = [
        "# Mutation testing",
        "",
        "Generated by `make mutation` (`tests/mutation_report.py`, mutmut " + version + "): do not edit by hand.",
        "",
        "mutmut copies `reconciler/` to `mutants/` and makes one small change at a time (a mutant) in each",
        "function of the core: an operator or comparison flipped, a constant or string changed, an argument",
        "dropped, a call's result replaced by `None`. Each mutant runs the in-process tests that call the",
        "function it changes (`[tool.mutmut]` in pyproject.toml). A mutant is *killed* when a test fails",
        "(or times out); one that survives is a change of behaviour no test notices, unless it is",
        "*equivalent* (no user can tell it apart: the reason is given below, from",
        "`tests/mutation_equivalents.toml`, where each is recorded by its function and the text it changes,",
        "not by mutmut's number, so an edit elsewhere keeps it). mutmut 3 mutates the bodies of functions only: module-level",
        "tables (`PRUNE_ORDER`, `KIND_ORDER`, pacing's constants, the metric names' defaults) are not mutated.",
        "",
        "Under mutmut the planner's property tests run 10 examples instead of 40-60 (`tests/plan/conftest.py`):",
        "they were nine tenths of each planner mutant's test time; the scores are a lower bound.",
        "",
        "A full run takes hours on a shared 2-core machine. The results are kept in",
        "`tests/mutation_results.json` (mutmut's exit code of each mutant and a hash of each function's",
        "text), so a run goes on where the last one stopped, on any machine: it checks the mutants never",
        "run, the surviving ones (a test added since may kill them) and those of every function whose text",
        "changed; `--module` limits it to some modules, `--again` runs every mutant of them. A module with",
        "no stored result keeps the row and the survivors of the report this one replaced, marked",
        "*earlier run*: they were not checked again.",
        "",
        "Runs on several machines or worktrees add up: `--merge FILE` takes another run's results file in",
        "(a mutant killed in either is killed; a function's verdicts come from the run that mutated it as",
        "the code reads now). `--tests PATH` runs a module's mutants with only the tests under PATH, a",
        "quick first pass: what they kill is killed, what survives them counts as surviving here until a",
        "run with the whole selection (which checks survivors again) says otherwise.",
        "",
        "Score = killed / (mutants - equivalent - not run). The target is at least 90% on every module; a",
        "module with mutants not run was not finished in the time the last run had (its score is partial).",
        "",
        "| module | part | mutants | killed | equivalent | surviving | not run | score |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    scores: dict[str, float] = {}
    counts = {"equivalent": 0, "surviving": 0, "not run": 0}
    for path, r in results.items():
        part = "all" if SCOPE.get(path) is None else ", ".join(f"`{f}`" for f in SCOPE.get(path) or ())
        if path in kept:
            cells = kept[path].row.strip().strip("|").split("|")
            cells[1] = cells[1].strip().removesuffix(" (earlier run)") + " (earlier run)"
            lines.append("| " + " | ".join(c.strip() for c in cells) + " |")
            mutants, killed, eq_n, left, not_run = kept[path].counts() or (0, 0, 0, 0, 0)
            counts["equivalent"] += eq_n
            counts["surviving"] += left
            counts["not run"] += not_run
            if mutants - eq_n - not_run:
                scores[path] = 100 * killed / (mutants - eq_n - not_run)
            continue
        if not r.total:
            why = "no mutant (mutmut finds nothing to change)" if (ROOT / "mutants" / (path + ".meta")).exists() \
                else "not mutated by the last run"
            lines.append(f"| `{path}` | {part} | 0 | - | - | - | - | {why} |")
            continue
        eq = [m for m in r.survived if keys[m] in equivalents]
        denominator = r.total - len(eq) - len(r.unchecked)
        if denominator:
            scores[path] = 100 * len(r.killed) / denominator
        score = f"{scores[path]:.1f}%" if denominator else "-"
        counts["equivalent"] += len(eq)
        counts["surviving"] += len(r.survived) - len(eq)
        counts["not run"] += len(r.unchecked)
        lines.append(f"| `{path}` | {part} | {r.total} | {len(r.killed)} | {len(eq)} | "
                     f"{len(r.survived) - len(eq)} | {len(r.unchecked)} | {score} |")
    counted = [r for path, r in results.items() if path not in kept]
    totals = [sum(r.total for r in counted), sum(len(r.killed) for r in counted)]
    for e in kept.values():
        mutants, killed, *_ = e.counts() or (0, 0)
        totals = [totals[0] + mutants, totals[1] + killed]
    summary = (f"In all: {totals[1]} of {totals[0]} mutants killed, {counts['equivalent']} equivalent, "
               f"{counts['surviving']} surviving unexplained, {counts['not run']} not run.")
    if scores:
        lowest = min(scores, key=lambda p: (scores[p], p))
        summary += (f" Every module scores {scores[lowest]:.1f}%." if len(set(scores.values())) == 1
                    else f" Lowest module: `{lowest}` at {scores[lowest]:.1f}%.")
    lines += ["", summary, ""]
    lines += ["## Surviving mutants", ""]
    any_survivor = False
    for path, r in results.items():
        section = [line for line in kept[path].section] if path in kept else []
        while section and not section[-1].strip():
            section.pop()
        while section and not section[0].strip():
            section.pop(0)
        if section:
            any_survivor = True
            lines += [f"### `{path}` (earlier run)", "", *section, ""]
        if not r.survived:
            continue
        any_survivor = True
        lines += [f"### `{path}`", ""]
        for mutant in r.survived:
            short = mutant.removeprefix(module_name(path) + ".")
            reason = equivalents.get(keys[mutant])
            lines.append(f"- `{short}`: " + (f"equivalent: {reason}" if reason else "**survives**"))
            lines += [f"      {d[:160]}" for d in diffs(mutant)]
        lines.append("")
    if not any_survivor:
        lines += ["None.", ""]
    # killed, or no longer a mutant of the code; one of a function with mutants not run yet is not stale
    surviving = set(keys.values())
    pending = {function_of(m) for r in results.values() for m in r.unchecked}
    unrun = {module_name(path) for path, r in results.items() if not r.killed and not r.survived}  # none checked
    stale = sorted((k for k in equivalents if k not in surviving and k.function not in pending
                    and not any(k.function.startswith(m + ".") for m in unrun)),
                   key=lambda k: (k.function, k.original, k.mutated))
    if stale:
        lines += ["## Equivalents no longer surviving", "",
                  "Listed in `tests/mutation_equivalents.toml` but killed, or their line edited, now:", ""]
        lines += [f"- `{k.function}`: `{k.original[:80]}` -> `{k.mutated[:80]}`" for k in stale] + [""]
    return "\n".join(lines)


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def load_equivalents(text: str | None = None) -> dict[MutantKey, str]:
    """The recorded equivalents (``tests/mutation_equivalents.toml``, or ``text``): key -> reason.
    Each ``[[equivalent]]`` gives ``function``, ``original``, ``mutated`` and ``reason``."""
    if text is None:
        if not EQUIVALENTS.exists():
            return {}
        text = EQUIVALENTS.read_text()
    data = tomllib.loads(text)
    out: dict[MutantKey, str] = {}
    for entry in data.get("equivalent", []):
        key = MutantKey(str(entry["function"]), str(entry["original"]), str(entry["mutated"]),
                        int(entry.get("occurrence", 1)))
        if key in out and out[key] != entry["reason"]:
            raise ValueError(f"{EQUIVALENTS.name}: {key.function} `{key.mutated}` is recorded twice")
        out[key] = str(entry["reason"])
    return out


def toml_entry(key: MutantKey, reason: str) -> str:
    """One ``[[equivalent]]`` table as ``load_equivalents`` reads it (JSON strings are TOML strings)."""
    fields: dict[str, str | int] = {"function": key.function, "original": key.original, "mutated": key.mutated}
    if key.occurrence != 1:
        fields["occurrence"] = key.occurrence
    fields["reason"] = reason
    return "[[equivalent]]\n" + "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in fields.items())


# ------------------------------------------------------------------ results kept between runs
#
# mutmut keeps each module's results in ``mutants/<path>.meta``: the exit code of each mutant and a
# hash of each function's text. When it makes the mutants again, a function whose hash changed has
# its results cleared; the others keep theirs. ``tests/mutation_results.json`` holds those two
# tables for the modules of ``SCOPE``, so that a run on another machine (or after ``make clean``)
# starts from the last results instead of from nothing: ``restore`` writes them back to
# ``mutants/`` before a run, ``keep`` reads them after it. One line per function:
# ``"mangled name": [hash, [exit code of mutant 1, of mutant 2, ...]]``.


def _meta_path(path: str) -> Path:
    return ROOT / "mutants" / (path + ".meta")


def stored_results(text: str | None = None) -> dict[str, dict[str, tuple[str, list[int | None]]]]:
    """``tests/mutation_results.json`` (or ``text``): module -> mangled function -> (hash, codes)."""
    if text is None:
        if not RESULTS.exists():
            return {}
        text = RESULTS.read_text(encoding="utf-8")
    data = json.loads(text)
    return {path: {f: (str(h), list(codes)) for f, (h, codes) in functions.items()}
            for path, functions in data.items()}


def results_text(results: Mapping[str, Mapping[str, tuple[str, list[int | None]]]]) -> str:
    lines = ["{"]
    for i, path in enumerate(sorted(results)):
        lines.append(f"{json.dumps(path)}: {{")
        functions = sorted(results[path].items())
        for j, (f, (h, codes)) in enumerate(functions):
            comma = "," if j < len(functions) - 1 else ""
            lines.append(f" {json.dumps(f, ensure_ascii=False)}: {json.dumps([h, codes], separators=(',', ':'))}{comma}")
        lines.append("}" + ("," if i < len(results) - 1 else ""))
    return "\n".join(lines) + "\n}\n"


def meta_of(path: str, functions: Mapping[str, tuple[str, list[int | None]]]) -> dict[str, Any]:
    """mutmut's meta of one module from its stored results."""
    codes = {f"{module_name(path)}.{f}__mutmut_{n}": code
             for f, (_, results) in functions.items() for n, code in enumerate(results, start=1)}
    return {"exit_code_by_key": codes, "hash_by_function_name": {f: h for f, (h, _) in functions.items()},
            "type_check_error_by_key": {}, "durations_by_key": {}, "estimated_durations_by_key": {}}


def functions_of(path: str, meta: Mapping[str, Any]) -> dict[str, tuple[str, list[int | None]]]:
    """The stored results of one module from mutmut's meta of it."""
    by_function: dict[str, dict[int, int | None]] = {}
    for mutant, code in meta["exit_code_by_key"].items():
        base, n = _natural(mutant)
        by_function.setdefault(base.rpartition(".")[2], {})[n] = code
    return {f: (h, [by_function.get(f, {}).get(n) for n in range(1, max(by_function.get(f, {0: None})) + 1)])
            for f, h in meta["hash_by_function_name"].items()}


def restore() -> list[str]:
    """Write the stored results of each module ``mutants/`` holds none of; the modules written."""
    written = []
    for path, functions in stored_results().items():
        meta = _meta_path(path)
        if meta.exists() or path not in SCOPE:
            continue
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps(meta_of(path, functions), ensure_ascii=False), encoding="utf-8")
        written.append(path)
    return written


def keep() -> None:
    """Store the results ``mutants/`` holds (modules it holds none of keep their stored ones)."""
    results = {path: functions for path, functions in stored_results().items() if path in SCOPE}
    for path in SCOPE:
        meta = _meta_path(path)
        if meta.exists():
            results[path] = functions_of(path, json.loads(meta.read_text(encoding="utf-8")))
    RESULTS.write_text(results_text(results), encoding="utf-8")


def function_hashes(source: str) -> dict[str, str]:
    """The hash mutmut gives each function of a module's source (``hash_by_function_name`` of its
    meta): the first 12 hex digits of the sha256 of the function's ``ast.dump`` without field names,
    keyed by its mangled name."""
    hashes: dict[str, str] = {}

    def visit(body: list[ast.stmt], cls: str = "") -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"xǁ{cls}ǁ{node.name}" if cls else f"x_{node.name}"
                hashes[key] = hashlib.sha256(ast.dump(node, annotate_fields=False).encode()).hexdigest()[:12]
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{cls}.{node.name}" if cls else node.name)

    visit(ast.parse(source).body)
    return hashes


def _verdict(a: int | None, b: int | None) -> int | None:
    """Of two runs' exit codes for one mutant: killed by either is killed; else a survivor is one."""
    if a in KILLED or b in KILLED:
        return a if a in KILLED else b
    return a if a not in NOT_CHECKED else b


def merge(ours: Mapping[str, Mapping[str, tuple[str, list[int | None]]]],
          theirs: Mapping[str, Mapping[str, tuple[str, list[int | None]]]],
          source: Callable[[str], str]) -> dict[str, dict[str, tuple[str, list[int | None]]]]:
    """Two runs' results as one (runs in other worktrees or on other machines, say with a test
    selection narrowed to a module's own tests): of a function both ran as its ``source`` has it now,
    each mutant's verdict by ``_verdict``; of a function only one ran as it is now, that run's; of a
    function neither ran as it is now, ours (mutmut clears it on the next run)."""
    out: dict[str, dict[str, tuple[str, list[int | None]]]] = {}
    for path in sorted({*ours, *theirs}):
        now = function_hashes(source(path))
        a, b = ours.get(path, {}), theirs.get(path, {})
        functions: dict[str, tuple[str, list[int | None]]] = {}
        for f in sorted({*a, *b}):
            current = [r for r in (a.get(f), b.get(f)) if r is not None and r[0] == now.get(f)]
            if len(current) == 2 and len(current[0][1]) == len(current[1][1]):
                functions[f] = (current[0][0], [_verdict(x, y) for x, y in zip(*(r[1] for r in current), strict=True)])
            elif current:
                functions[f] = current[0]
            else:
                functions[f] = a.get(f) or b[f]
        out[path] = functions
    return out


def explained(modules: Iterable[str]) -> set[str]:
    """The surviving mutants of ``modules`` recorded as equivalent, found by the text ``mutants/``
    shows them with (none on a machine where mutmut has not made them yet)."""
    chosen = set(modules)
    equivalents = load_equivalents()
    cache: dict[str, list[str]] = {}

    def diff(mutant: str) -> list[str]:
        if mutant not in cache:
            cache[mutant] = diff_of(mutant)
        return cache[mutant]

    out: set[str] = set()
    for path, r in load_results().items():
        if path in chosen and r.survived and (ROOT / "mutants" / path).exists():
            keys = mutant_keys(r.survived, [*r.killed, *r.survived, *r.unchecked], diff)
            out |= {m for m, key in keys.items() if key in equivalents}
    return out


def pending(modules: Iterable[str], skip: Collection[str] = ()) -> list[str]:
    """What ``mutmut run`` is given to check: of each module, the mutants in scope not killed yet
    (never run, surviving, or with no test) and not in ``skip`` (``explained``): a function none
    of whose mutants is killed, or whose text changed since its results, by its glob, the others
    by name. A module ``mutants/`` has no results of: all its mutants."""
    names: list[str] = []
    for path in modules:
        meta = _meta_path(path)
        if not meta.exists():
            names += globs([path])
            continue
        stored = json.loads(meta.read_text(encoding="utf-8"))
        now = function_hashes((ROOT / path).read_text(encoding="utf-8"))
        by_function: dict[str, list[tuple[str, int | None]]] = {}
        for mutant, code in stored["exit_code_by_key"].items():
            if in_scope(path, mutant):
                by_function.setdefault(_natural(mutant)[0], []).append((mutant, code))
        for base, mutants in sorted(by_function.items()):
            edited = stored["hash_by_function_name"].get(base.rpartition(".")[2]) != now.get(base.rpartition(".")[2])
            left = sorted((m for m, code in mutants if code not in KILLED and m not in skip), key=_natural)
            # a function edited since its results: mutmut makes its mutants again, all of them to run
            names += [f"{base}__mutmut_*"] if edited or left and len(left) == len(mutants) else left
    return names


def run(modules: list[str], max_children: int, *, again: bool = False, tests: Collection[str] = ()) -> int:
    """``mutmut run`` over what is left to check in ``modules`` (``again``: every mutant of them),
    from the stored results; the results are stored again even when the run is interrupted.
    ``tests`` (paths) narrows the test selection to them: a mutant they kill is killed, one that
    survives them is a survivor until a run with the whole selection says otherwise."""
    restored = restore()
    if restored:
        print(f"results of {len(restored)} modules restored from {RESULTS.relative_to(ROOT)}")
    names = globs(modules) if again else pending(modules, skip=explained(modules))
    if not names:
        print("every mutant in scope of these modules is killed; --again runs them all")
        return 0
    for path in modules:  # copied by a run that did not mutate it (not in only_mutate then): made again
        if not _meta_path(path).exists():
            (ROOT / "mutants" / path).unlink(missing_ok=True)
    # which tests reach which function, collected again for the code and tests as they are now:
    # mutmut keeps the map of its first run, and a function added or moved since would have no test
    (ROOT / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    command = [str(MUTMUT), "run", "--max-children", str(max_children), *names]
    try:
        env = {**os.environ, "MUTATION_TESTS": os.pathsep.join(tests)} if tests else None
        return subprocess.run(command, cwd=ROOT, check=False, env=env).returncode
    finally:
        keep()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="store_true", help="run mutmut first")
    parser.add_argument("--module", action="append", choices=sorted(SCOPE), help="only this module (repeatable)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--again", action="store_true", help="run every mutant of the modules, killed ones too")
    parser.add_argument("--tests", metavar="PATH", action="append", default=[],
                        help="run only the tests under PATH (repeatable): a module's own, for a quick run")
    parser.add_argument("--write", metavar="FILE", help="write the report here (default: print it)")
    parser.add_argument("--merge", metavar="FILE", action="append", default=[],
                        help="first merge another run's results file into the stored ones (repeatable)")
    args = parser.parse_args(argv)
    for other in args.merge:
        merged = merge(stored_results(), stored_results(Path(other).read_text(encoding="utf-8")),
                       lambda path: (ROOT / path).read_text(encoding="utf-8"))
        RESULTS.write_text(results_text(merged), encoding="utf-8")
        print(f"merged {other} into {RESULTS.relative_to(ROOT)}")
    modules = args.module or list(SCOPE)
    if args.run:
        code = run(modules, args.max_children, again=args.again, tests=args.tests)
        if code != 0:
            return code
    replaced = Path(args.write) if args.write else None
    earlier = earlier_of(replaced.read_text()) if replaced is not None and replaced.exists() else {}
    report = render(load_results(), load_equivalents(), earlier=earlier)
    if args.write:
        Path(args.write).write_text(report)
    else:
        print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
