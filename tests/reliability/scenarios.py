"""Scenarios the suite asserts on and the soak repeats over many seeds: each runs the real CLI
against the emulator over a socket and returns what it observed, so the test and the soak judge
the same facts.

``apply_under_faults``: from an empty service with seeded faults and a rate limit, ``apply`` the
same manifests until it exits 0 (at most ``max_runs`` times), then check what the service holds.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.reliability.generators import API_KEY_ENV, DesiredState, api_key_canary, desired_state
from tests.reliability.harness import FAULTS, ApplyOutput, duplicates, live_names, run_cli, serve

_PLAN_LINE = re.compile(r"^Plan: (\d+) to create, (\d+) to update, (\d+) to delete\.$", re.M)


@dataclass
class FaultRun:
    """What one seed of ``apply_under_faults`` observed (the soak sums these)."""

    seed: int
    resources: int
    exit_codes: list[int] = field(default_factory=list)
    figures: Counter[str] = field(default_factory=Counter)  # Recorder.figures() over all runs
    planned_deletes: int = 0
    deletes_sent: int = 0
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    count_mismatch: dict[str, tuple[int, int]] = field(default_factory=dict)  # kind -> (live, manifests)
    unreported: list[str] = field(default_factory=list)  # missing after a run, named nowhere in its output
    inconsistent: list[str] = field(default_factory=list)  # exit code or report that contradicts itself
    leaks: list[str] = field(default_factory=list)  # where a canary was seen
    final_plan_exit: int | None = None

    @property
    def converged(self) -> bool:
        return bool(self.exit_codes) and self.exit_codes[-1] == 0 and self.final_plan_exit == 0

    @property
    def failed_runs(self) -> int:
        return sum(code != 0 for code in self.exit_codes)

    def problems(self) -> list[str]:
        """Every broken promise, as sentences (empty when the run kept them all)."""
        out: list[str] = []
        if not self.converged:
            out.append(f"did not converge: exit codes {self.exit_codes}, final plan exit {self.final_plan_exit}")
        if self.duplicates:
            out.append(f"created twice: {self.duplicates}")
        if self.count_mismatch:
            out.append(f"live count differs from the manifests (live, manifests): {self.count_mismatch}")
        if self.deletes_sent != self.planned_deletes:
            out.append(f"{self.deletes_sent} DELETE requests but {self.planned_deletes} planned deletes")
        if self.unreported:
            out.append(f"missing after a failed run but not reported: {self.unreported[:10]}")
        if self.inconsistent:
            out.append(f"inconsistent reports: {self.inconsistent[:5]}")
        if self.leaks:
            out.append(f"secret leaked: {self.leaks[:5]}")
        if self.figures["real_5xx"]:
            out.append(f"{self.figures['real_5xx']} 5xx answers that were not injected faults")
        return out


def expected_addresses(state: DesiredState) -> dict[str, str]:
    """For each document, the key ``live_names`` lists it under -> its address in plans."""
    out: dict[str, str] = {}
    for d in state.documents:
        address = f"{d['kind']}/{d['space']}/{d['name']}" if "space" in d else f"{d['kind']}/{d['name']}"
        if d["kind"] == "Integration":
            out[f"Integration/{d['type']}:{d['name']}"] = address
        elif d["kind"] == "ResourceRestriction":
            out[f"ResourceRestriction:{d['resource_id']}"] = address
        else:
            out[f"{d['kind']}:{d['name']}"] = address
        if d["kind"] == "Prompt" and d.get("restricted"):
            out[f"PromptRestriction:{d['name']}"] = address
    return out


def expected_counts(state: DesiredState) -> Counter[str]:
    return Counter(key.split(":", 1)[0] for key in expected_addresses(state))


def _present(names: dict[str, list[str]]) -> set[str]:
    return {f"{kind}:{n}" for kind, items in names.items() for n in items}


def apply_under_faults(
    seed: int, total: int, workdir: Path, *, rate_limit: float = 120.0, faults: str = FAULTS, max_runs: int = 3,
) -> FaultRun:
    state = desired_state(total, seed)
    tree = state.write(workdir / f"manifests-{seed}")
    key = api_key_canary()
    env = {**state.env(), API_KEY_ENV: key}
    canaries = {**state.secrets, API_KEY_ENV: key}
    expected = expected_addresses(state)
    run = FaultRun(seed, len(state.documents))
    with serve(admin_key=key, faults=f"seed={seed},{faults}", rate_limit=rate_limit) as served:
        for n in range(max_runs):
            result = run_cli(["apply", str(tree), "--auto-approve", "--base-url", served.url], env)
            run.exit_codes.append(result.exit_code)
            for m in _PLAN_LINE.finditer(result.stdout):
                run.planned_deletes += int(m.group(3))
            output = result.stdout + result.stderr
            run.leaks += [f"run {n} output: {name}" for name, value in canaries.items() if value in output]
            report = ApplyOutput.parse(result.stdout)
            _judge(run, n, result.exit_code, result.stdout, result.stderr, report,
                   expected, _present(live_names(served.url, key)))
            if result.exit_code == 0:
                break
        run.figures.update(served.recorder.figures())
        run.deletes_sent = sum(v for k, v in served.stats().items() if k.startswith("DELETE "))
        names = live_names(served.url, key)
        run.duplicates = duplicates(names)
        want = expected_counts(state)
        run.count_mismatch = {k: (len(names.get(k, [])), want[k]) for k in set(want) | set(names)
                              if len(names.get(k, [])) != want[k]}
        plan = run_cli(["plan", str(tree), "--detailed-exitcode", "--base-url", served.url], env)
        run.final_plan_exit = plan.exit_code
    return run


def _judge(run: FaultRun, n: int, code: int, stdout: str, stderr: str, report: ApplyOutput,
           expected: dict[str, str], present: set[str]) -> None:
    """Every failure reported: whatever is missing after the run is named in its Failed or
    Skipped list, or the run stopped with an error before applying; and the exit code agrees."""
    failed = report.counts.get("Failed", 0) + report.counts.get("Skipped", 0)
    if not report.consistent:
        run.inconsistent.append(f"run {n}: counts differ from the lines listed")
    if code == 0:
        if failed or "Apply complete" not in stdout and "No changes" not in stdout:
            run.inconsistent.append(f"run {n}: exit 0 with {failed} failed or skipped calls")
    elif failed == 0 and "Error:" not in stderr:
        run.inconsistent.append(f"run {n}: exit {code} without a failure or an error message")
    missing = {address for key, address in expected.items() if key not in present}
    if code == 0 and missing:
        run.unreported += [f"run {n}: {a}" for a in sorted(missing)]
    elif report.counts:  # the plan was executed: each missing resource must be named
        named = report.addresses("Failed") | report.addresses("Skipped")
        run.unreported += [f"run {n}: {a}" for a in sorted(missing - named)]
    elif code != 0 and "Error:" not in stderr:
        run.unreported.append(f"run {n}: exit {code} with no report and no error")
