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
from tests.reliability.harness import (
    FAULTS,
    ApplyOutput,
    Exchange,
    cli_process,
    duplicates,
    live_names,
    run_cli,
    serve,
)

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
        run.leaks += wire_leaks(served.recorder.api(), state.secrets, key)
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
        if failed or ("Apply complete" not in stdout and "No changes" not in stdout):
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


def wire_leaks(exchanges: list[Exchange], secrets: dict[str, str], api_key: str) -> list[str]:
    """Where a secret crossed the wire where it should not: the API key anywhere but the
    ``Authorization`` header, a manifest secret anywhere but the body of an integration create or
    update, and any secret in any answer. (``test_secrets`` also checks which integration.)"""
    out: list[str] = []
    for e in exchanges:
        where = f"{e.method} {e.path}"
        if api_key in e.body.decode("utf-8", "replace") or api_key in e.path + e.query or any(
                api_key in v for k, v in e.headers if k != "authorization"):
            out.append(f"API key in {where}")
        carries = e.method in ("POST", "PATCH") and (e.path == "/v2/integrations" or
                                                     e.path.startswith("/v2/integrations/"))
        head = "\n".join(v for _, v in e.headers) + e.path + e.query
        body = e.body.decode("utf-8", "replace")
        answer = e.response_text()
        for name, value in secrets.items():
            if value in head or (value in body and not carries) or value in answer:
                out.append(f"{name} in {where}")
        if api_key in answer:
            out.append(f"API key in the answer to {where}")
    return out


@dataclass
class ConcurrentRun:
    """Two applies of the same manifests started together, and what the service holds after."""

    seed: int
    resources: int
    exit_codes: list[int] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    conflicts: int = 0  # 409 answers to creates: the two runs did race
    requests: int = 0
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    count_mismatch: dict[str, tuple[int, int]] = field(default_factory=dict)
    leaks: list[str] = field(default_factory=list)
    final_plan_exit: int | None = None

    def problems(self) -> list[str]:
        out: list[str] = []
        if self.exit_codes != [0, 0]:
            out.append(f"exit codes {self.exit_codes}: " + " | ".join(o[-1500:] for o in self.outputs))
        if self.duplicates:
            out.append(f"created twice: {self.duplicates}")
        if self.count_mismatch:
            out.append(f"live count differs from the manifests (live, manifests): {self.count_mismatch}")
        if self.final_plan_exit != 0:
            out.append(f"the plan after both runs is not clean (exit {self.final_plan_exit})")
        if self.leaks:
            out.append(f"secret leaked: {self.leaks[:5]}")
        return out


def concurrent_applies(seed: int, total: int, workdir: Path, *, latency_ms: int = 25) -> ConcurrentRun:
    """Both processes read the empty service before either writes (``latency_ms`` on every request
    makes sure of that), so every create races."""
    state = desired_state(total, seed)
    tree = state.write(workdir / f"concurrent-{seed}")
    key = api_key_canary()
    env = {**state.env(), API_KEY_ENV: key}
    run = ConcurrentRun(seed, len(state.documents))
    with serve(admin_key=key, faults=f"latency_ms={latency_ms}") as served:
        procs = [cli_process(["apply", str(tree), "--auto-approve", "--base-url", served.url], env) for _ in range(2)]
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            run.exit_codes.append(proc.returncode)
            run.outputs.append(out + err)
            run.leaks += [f"output: {name}" for name, value in {**state.secrets, API_KEY_ENV: key}.items()
                          if value in out + err]
        exchanges = served.recorder.api()
        run.requests = len(exchanges)
        run.conflicts = sum(e.method == "POST" and e.status == 409 for e in exchanges)
        run.leaks += wire_leaks(exchanges, state.secrets, key)
        names = live_names(served.url, key)
        run.duplicates = duplicates(names)
        want = expected_counts(state)
        run.count_mismatch = {k: (len(names.get(k, [])), want[k]) for k in set(want) | set(names)
                              if len(names.get(k, [])) != want[k]}
        run.final_plan_exit = run_cli(["plan", str(tree), "--detailed-exitcode", "--base-url", served.url],
                                      env).exit_code
    return run
