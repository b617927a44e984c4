"""``watch``'s decisions (reconciler/watch.py), one cycle at a time, in-process against the emulator:
what a cycle plans, applies, keeps and reports (events, metrics, notices), the wait before the next
one, and the checks its options get before it starts."""

from __future__ import annotations

import io
import json
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.client.http import ApiClient
from reconciler.errors import ConfigError
from reconciler.plan.model import PlanOptions
from reconciler.telemetry import Telemetry
from reconciler.watch import (
    HealthServer,
    WatchConfig,
    Watcher,
    check_notify_url,
    parse_address,
    parse_duration,
    tree_stamp,
)
from reconciler.workflow import Connection
from tests.watch.helpers import receiving_notices

PROMPT = """
kind: Prompt
space: research
name: NAME
description: DESCRIPTION
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
"""


def prompts(*names: str, description: str = "first") -> str:
    return "---".join(PROMPT.replace("NAME", n).replace("DESCRIPTION", description) for n in names)


class Top(random.Random):
    """Jitter at the top of its range, every time."""

    def uniform(self, a: float, b: float) -> float:
        return b


class Run:
    """A watcher over ``tmp_path/tree`` against an in-process emulator, its events kept (json, or
    the text lines) and what it prints."""

    def __init__(self, tmp_path: Path, *, log_format: str = "json", environment: str | None = None,
                 **config: Any) -> None:
        self.tree = tmp_path / "tree"
        self.tree.mkdir(exist_ok=True)
        self.stream = io.StringIO()
        self.printed: list[str] = []
        self.t = Telemetry(log_format=log_format, stream=self.stream, environment=environment)
        self.w = Watcher(WatchConfig(paths=(str(self.tree),), **config),
                         Connection(emulator=str(tmp_path / "state.db"), parallelism=1), self.t, out=self.printed.append, rng=Top())

    def write(self, text: str) -> None:
        (self.tree / "manifests.yaml").write_text(text.lstrip())

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = [json.loads(line) for line in self.stream.getvalue().splitlines()]
        return [{k: v for k, v in e.items() if k not in ("ts", "duration_s")} for e in found
                if kind is None or e["event"] == kind]

    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()

    def metric(self, name: str, **labels: str) -> float | None:
        return self.t.registry.get_sample_value(name, labels)


@pytest.fixture(autouse=True)
def admin_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "admin-key")


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    r = Run(tmp_path)
    yield r


def client_of(r: Run) -> Iterator[ApiClient]:
    with r.w.connected() as client:
        yield client


def describe(client: ApiClient, name: str, description: str) -> None:
    space = next(s for s in client.run(client.get("/v2/spaces"))["spaces"] if s["name"] == "research")
    found = client.run(client.find_by_name("/v2/prompts", "prompts", name, {"space_id": space["id"]}))
    assert found is not None
    client.run(client.patch(f"/v2/prompts/{found['id']}", {"description": description}))


# ---------------------------------------------------------------------- the desired state


def test_before_any_good_load_a_cycle_only_reports(tmp_path: Path) -> None:
    r = Run(tmp_path)
    r.write("kind: Prompt\nname: [broken\n")
    with r.w.connected() as client:
        assert r.w.cycle(client) == (False, False)
    error, cycle = r.events("manifest_error"), r.events("cycle")
    assert [(e["cycle"], e["outcome"]) for e in error] == [(1, "none")]
    assert cycle == [{"event": "cycle", "cycle": 1, "outcome": "manifest_error"}]
    assert r.metric("reconciler_cycles_total", outcome="manifest_error") == 1
    assert r.metric("reconciler_manifest_error") == 1 and r.metric("reconciler_manifest_errors_total") == 1
    assert not r.w.ready and r.w.last_good is None and r.w.failures == 0


def test_a_bad_load_keeps_the_last_good_state_says_so_once_and_the_next_good_load_says_so(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text")
    r.write(prompts("p"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, True)
        good = r.w.last_good
        r.write("kind: Prompt\nname: [broken\n")
        assert r.w.cycle(client) == (True, True)  # the last good state is still planned
        assert r.w.cycle(client) == (True, True)
        assert r.w.last_good is good
        r.write(prompts("p"))
        assert r.w.cycle(client) == (True, True)
    lines = r.lines()
    assert [line for line in lines if "the manifests do not load" in line] == [
        "cycle 2: the manifests do not load (keeping the last good desired state):"]
    cycle2 = next(line for line in lines if line.startswith("cycle 2: Plan:"))
    assert cycle2.startswith("cycle 2: Plan: 1 to create, 0 to update, 0 to delete; 1 drifted, manifests failing: "
                             "last good state used (")
    assert "cycle 4: the manifests load again" in lines
    assert not any(line.startswith("cycle 3: the manifests") for line in lines)
    assert r.metric("reconciler_manifest_error") == 0 and r.metric("reconciler_manifest_errors_total") == 2
    assert r.metric("reconciler_cycles_total", outcome="manifest_error") == 2
    assert r.metric("reconciler_cycles_total", outcome="ok") == 2


def test_a_bad_load_in_json_names_what_it_kept(tmp_path: Path) -> None:
    r = Run(tmp_path)
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
        r.write("kind: Prompt\nname: [broken\n")
        r.w.cycle(client)
        r.write(prompts("p"))
        r.w.cycle(client)
    [error] = r.events("manifest_error")
    assert error["cycle"] == 2 and error["outcome"] == "kept_last_good" and error["message"]
    assert [e["cycle"] for e in r.events("manifest_ok")] == [3]
    assert [e["outcome"] for e in r.events("cycle")] == ["ok", "manifest_error", "ok"]


def test_a_load_warning_is_said_when_it_first_appears(tmp_path: Path) -> None:
    r = Run(tmp_path, options=PlanOptions(variables=("unused=1",)))
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
        r.w.cycle(client)
    warnings = r.events("warning")
    assert [(e["cycle"], "unused" in e["message"]) for e in warnings] == [(1, True)]


def test_a_tree_that_changes_while_it_is_read_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler import watch

    r = Run(tmp_path)
    r.write(prompts("p"))
    loaded = watch.load

    def load_and_touch(*args: Any, **kwargs: Any) -> Any:
        found = loaded(*args, **kwargs)
        (r.tree / "late.yaml").write_text(prompts("q").lstrip())
        return found

    monkeypatch.setattr(watch, "load", load_and_touch)
    with r.w.connected() as client:
        assert r.w.cycle(client) == (False, False)
    [error] = r.events("manifest_error")
    assert error["message"] == "the manifests changed while they were read; the next cycle reads them again"


def test_tree_stamp_lists_every_file_with_its_time_and_size_but_not_git(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("12345")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref")
    (tmp_path / "b.yaml").write_text("1")
    stamp = tree_stamp([str(tmp_path), str(tmp_path / "b.yaml"), str(tmp_path / "absent")])
    assert [(Path(f).relative_to(tmp_path).as_posix(), size) for f, _, size in stamp] == [
        ("a/x.yaml", 5), ("b.yaml", 1), ("b.yaml", 1)]
    assert all(mtime == (tmp_path / "b.yaml").stat().st_mtime_ns for f, mtime, _ in stamp if f.endswith("b.yaml"))


# ---------------------------------------------------------------------- planning and applying


def test_a_planning_cycle_reports_the_drift_and_leaves_it(tmp_path: Path) -> None:
    r = Run(tmp_path)
    r.write(prompts("p", "q"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, True)
        assert r.w.cycle(client) == (True, True)
    cycles = r.events("cycle")
    assert cycles[0] == {"event": "cycle", "cycle": 1, "outcome": "ok", "drifted": 2, "healed": 0, "unmanaged": 0,
                         "applied": 0}
    drift = r.events("drift")
    assert drift == [{"event": "drift", "cycle": 1, "resources": ["Prompt/research/p", "Prompt/research/q"],
                      "healed": []}]
    assert r.w.ready and r.w.failures == 0
    assert r.metric("reconciler_cycles_total", outcome="ok") == 2


def test_an_applying_cycle_heals_the_drift_and_says_so(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text", apply=True)
    r.write(prompts("p", "q"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, False)
        assert r.w.cycle(client) == (True, False)
    lines = r.lines()
    first = next(line for line in lines if line.startswith("cycle 1: Plan:"))
    assert first.startswith("cycle 1: Plan: 2 to create, 0 to update, 0 to delete; 2 drifted, 2 healed (2 calls) (")
    second = next(line for line in lines if line.startswith("cycle 2:"))
    assert second.startswith("cycle 2: Plan: 0 to create, 0 to update, 0 to delete; 0 drifted (")
    assert any(line.startswith("Drift detected by reconciler watch: 2 resource(s) differ from the manifests: "
                               "Prompt/research/p, Prompt/research/q") for line in lines)
    assert "Drift healed: Prompt/research/p, Prompt/research/q match the manifests again" in lines
    assert "Applied: 2" in r.printed


def test_an_applying_cycle_reports_its_apply_and_the_notices_in_json(tmp_path: Path) -> None:
    r = Run(tmp_path, apply=True)
    r.write(prompts("p"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, False)
        describe(client, "p", "edited by hand")
        assert r.w.cycle(client) == (True, False)
        assert r.w.cycle(client) == (True, False)
    assert r.events("apply") == [
        {"event": "apply", "cycle": 1, "outcome": "ok", "applied": 1, "failed": 0, "skipped": 0},
        {"event": "apply", "cycle": 2, "outcome": "ok", "applied": 1, "failed": 0, "skipped": 0}]
    assert [(e["event"], e["cycle"], e.get("resources"), e["healed"]) for e in r.events()
            if e["event"] in ("drift", "healed")] == [
        ("drift", 1, ["Prompt/research/p"], ["Prompt/research/p"]), ("healed", 1, None, ["Prompt/research/p"]),
        ("drift", 2, ["Prompt/research/p"], ["Prompt/research/p"]), ("healed", 2, None, ["Prompt/research/p"])]
    assert [(e["cycle"], e["drifted"], e["healed"], e["applied"]) for e in r.events("cycle")] == [
        (1, 1, 1, 1), (2, 1, 1, 1), (3, 0, 0, 0)]


def test_the_plan_is_printed_when_what_drifted_changes_not_every_cycle(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text")
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
        r.w.cycle(client)
        assert len([line for line in r.printed if "Prompt/research/p" in line]) == 1
        r.write(prompts("p", "q"))
        r.w.cycle(client)
    shown = [line for line in r.printed if "Plan:" in line]
    assert len(shown) == 2 and "+ Prompt/research/q" in shown[1]


def test_nothing_is_printed_in_json_mode(tmp_path: Path) -> None:
    r = Run(tmp_path, apply=True)
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
    assert r.printed == []


def test_a_watch_that_is_stopping_plans_but_does_not_apply(tmp_path: Path) -> None:
    r = Run(tmp_path, apply=True)
    r.write(prompts("p"))
    r.w.stop.set()
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, True)
    assert r.events("apply") == []


def test_an_apply_stopped_after_its_first_call_is_reported_interrupted(tmp_path: Path) -> None:
    r = Run(tmp_path, apply=True)
    r.write(prompts("p", "q"))
    with r.w.connected() as client:
        client.observers.append(lambda exchange: r.w.stop.set() if exchange.method == "POST" else None)
        assert r.w.cycle(client) == (False, True)
    [cycle] = r.events("cycle")
    assert cycle == {"event": "cycle", "cycle": 1, "outcome": "interrupted"}
    assert [(e["outcome"], e["applied"], e["skipped"]) for e in r.events("apply")] == [("interrupted", 1, 1)]
    assert r.metric("reconciler_cycles_total", outcome="interrupted") == 1 and r.w.failures == 0


def test_a_replacement_watch_may_not_make_fails_the_cycle_and_backs_off(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text", apply=True, interval=20.0, max_backoff=100.0)
    integration = ("kind: Integration\nname: llm\ntype: LLM\nconfig: {provider: PROVIDER, api_key: {env: KEY_A}}\n")
    import os

    os.environ["KEY_A"] = "canary-key-a"
    try:
        r.write(integration.replace("PROVIDER", "VENDOR_A"))
        with r.w.connected() as client:
            assert r.w.cycle(client) == (True, False)
            assert r.w.delay(True) == pytest.approx(22.0)
            r.write(integration.replace("PROVIDER", "VENDOR_C"))
            assert r.w.cycle(client) == (False, False)
            assert r.w.cycle(client) == (False, False)
            assert r.w.failures == 2 and r.w.ready
            assert r.w.delay(False) == pytest.approx(40.0)  # base min(20, 30), doubled once
            r.write(integration.replace("PROVIDER", "VENDOR_A"))
            assert r.w.cycle(client) == (True, False)
            assert r.w.failures == 0
    finally:
        del os.environ["KEY_A"]
    lines = r.lines()
    assert any(line.startswith("cycle 2: failed (1 in a row): the plan replaces Integration/llm") for line in lines)
    assert any(line.startswith("cycle 3: failed (2 in a row): ") for line in lines)
    assert "backing off 40.0s after 2 failed cycle(s)" in lines
    assert r.metric("reconciler_cycles_total", outcome="error") == 2


def test_a_failed_cycle_names_its_error_in_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_KEY", raising=False)
    r = Run(tmp_path, apply=True)
    r.write("kind: Integration\nname: llm\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: UNSET_KEY}}\n")
    with r.w.connected() as client:
        assert r.w.cycle(client) == (False, False)
    [cycle] = r.events("cycle")
    assert cycle["outcome"] == "error" and cycle["error_type"] == "SecretError" and cycle["failures"] == 1
    assert "UNSET_KEY" in cycle["message"]
    assert r.events("apply") == []  # nothing was sent


def test_the_backoff_doubles_up_to_its_cap_with_equal_jitter(tmp_path: Path) -> None:
    r = Run(tmp_path, interval=300.0, max_backoff=100.0)
    r.w.cycles = 7
    expected = {1: 30.0, 2: 60.0, 3: 100.0, 4: 100.0}
    for failures, d in expected.items():
        r.w.failures = failures
        assert r.w.delay(False) == d  # d/2 + the top of uniform(0, d/2)
    assert r.w.delay(True) == pytest.approx(330.0)
    r.w.failures = 0
    assert r.w.delay(False) == pytest.approx(330.0)  # no failure yet: the schedule
    backoffs = r.events("backoff")
    assert [(e["cycle"], e["failures"]) for e in backoffs] == [(7, 1), (7, 2), (7, 3), (7, 4)]
    low = Run(tmp_path, interval=4.0)
    low.w.rng = random.Random(3)
    low.w.failures = 1
    for _ in range(20):
        assert 2.0 <= low.w.delay(False) <= 4.0
        assert 3.6 <= low.w.delay(True) <= 4.4


# ---------------------------------------------------------------------- policies


POLICED = """
kind: Policy
name: guard
rules:
  - name: RULE
    match: {actions: [create], kinds: [Prompt]}
    effect: EFFECT
    message: not without a word
---
""" + PROMPT.replace("NAME", "p").replace("DESCRIPTION", "first")


def test_a_denied_or_unapproved_change_is_held_and_said(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text", apply=True)
    r.write(POLICED.replace("RULE", "no-prompts").replace("EFFECT", "deny"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, True)
        r.write(POLICED.replace("RULE", "ask").replace("EFFECT", "require_approval"))
        assert r.w.cycle(client) == (True, True)
    held = [line for line in r.printed if line.startswith("Not applied")]
    assert held[0].startswith("Not applied (denied): ") and "no-prompts" in held[0]
    assert held[1].startswith("Not applied (needs --approve ask): ")
    assert any(line.startswith("cycle 1: not applied (denied): ") for line in r.lines())


def test_a_held_change_is_an_event_of_its_cycle(tmp_path: Path) -> None:
    r = Run(tmp_path, apply=True)
    r.write(POLICED.replace("RULE", "no-prompts").replace("EFFECT", "deny"))
    with r.w.connected() as client:
        r.w.cycle(client)
        r.w.cycle(client)
    assert [(e["cycle"], e["rule"], e["effect"]) for e in r.events("policy_held")] == [
        (1, "no-prompts", "deny"), (2, "no-prompts", "deny")]
    assert [(e["drifted"], e["healed"], e["applied"]) for e in r.events("cycle")] == [(1, 0, 0), (1, 0, 0)]


def test_an_approved_change_is_applied_and_an_unapproved_one_held(tmp_path: Path) -> None:
    (tmp_path / "approved").mkdir()
    (tmp_path / "held").mkdir()
    approved = Run(tmp_path / "approved", apply=True, approvals=("ask",))
    held = Run(tmp_path / "held", apply=True)
    for r in (approved, held):
        r.write(POLICED.replace("RULE", "ask").replace("EFFECT", "require_approval"))
        with r.w.connected() as client:
            r.w.cycle(client)
    assert approved.events("policy_held") == [] and len(approved.events("apply")) == 1
    assert [(e["rule"], e["effect"], e["resource"]) for e in held.events("policy_held")] == [
        ("ask", "require_approval", "Prompt/research/p")]
    assert held.events("apply") == []


# ---------------------------------------------------------------------- notices


def test_notices_are_posted_on_drift_and_on_healing_with_what_they_are_about(tmp_path: Path) -> None:
    with receiving_notices() as (url, received):
        r = Run(tmp_path, apply=True, notify_url=url, environment="staging")
        r.write(prompts("p"))
        with r.w.connected() as client:
            r.w.cycle(client)
            r.w.cycle(client)
    paths = [str(r.tree)]
    assert received == [
        {"text": "staging: Drift detected by reconciler watch: 1 resource(s) differ from the manifests: "
                 "Prompt/research/p", "event": "drift", "cycle": 1, "drifted": ["Prompt/research/p"],
         "healed": ["Prompt/research/p"], "paths": paths, "apply": True, "environment": "staging"},
        {"text": "staging: Drift healed: Prompt/research/p match the manifests again", "event": "healed",
         "cycle": 1, "drifted": [], "healed": ["Prompt/research/p"], "paths": paths, "apply": True,
         "environment": "staging"}]
    assert r.metric("reconciler_notifications_total", kind="drift", outcome="ok") == 1
    assert r.metric("reconciler_notifications_total", kind="healed", outcome="ok") == 1
    assert [(e["cycle"], e["kind"], e["outcome"]) for e in r.events("notify")] == [(1, "drift", "ok"),
                                                                                     (1, "healed", "ok")]


def test_drift_that_stays_is_noticed_once_and_its_healing_once(tmp_path: Path) -> None:
    with receiving_notices() as (url, received):
        r = Run(tmp_path, notify_url=url)
        r.write(prompts("p"))
        with r.w.connected() as client:
            r.w.cycle(client)
            r.w.cycle(client)
            r.write(prompts("p", "q"))
            r.w.cycle(client)  # something new drifted: a new notice, of both
            r.write("")
            r.w.cycle(client)
    assert [(n["event"], n["cycle"], n["drifted"], n["healed"]) for n in received] == [
        ("drift", 1, ["Prompt/research/p"], []),
        ("drift", 3, ["Prompt/research/p", "Prompt/research/q"], []),
        ("healed", 4, [], ["Prompt/research/p", "Prompt/research/q"])]
    assert "environment" not in received[0] and received[0]["text"].startswith("Drift detected")


def test_a_notice_not_delivered_is_counted_and_said_without_the_url(tmp_path: Path) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    r = Run(tmp_path, log_format="text", notify_url=f"http://127.0.0.1:{port}/hooks/secret-token")
    r.write(prompts("p"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, True)
    assert "cycle 1: the drift notice was not delivered (ConnectError)" in r.lines()
    assert "secret-token" not in r.stream.getvalue()
    assert r.metric("reconciler_notifications_total", kind="drift", outcome="error") == 1


def test_without_a_url_notices_are_events_only(tmp_path: Path) -> None:
    r = Run(tmp_path)
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
    assert r.events("notify") == [] and len(r.events("drift")) == 1
    assert r.metric("reconciler_notifications_total", kind="drift", outcome="ok") is None


def test_a_long_list_of_drifted_resources_is_cut_short(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text")
    names = [f"p{i:02}" for i in range(12)]
    r.write(prompts(*names))
    with r.w.connected() as client:
        r.w.cycle(client)
    [said] = [line for line in r.lines() if line.startswith("Drift detected")]
    assert said.endswith(": " + ", ".join(f"Prompt/research/{n}" for n in names[:10]) + " and 2 more")


# ---------------------------------------------------------------------- liveness


def test_healthy_while_the_loop_runs_and_showed_life_recently(tmp_path: Path) -> None:
    r = Run(tmp_path, interval=100.0, max_backoff=50.0)
    assert r.w.healthy()
    r.t.heartbeat = time.monotonic() - (2 * 110.0 + 600 - 5)
    assert r.w.healthy()
    r.t.heartbeat = time.monotonic() - (2 * 110.0 + 600 + 0.5)
    assert not r.w.healthy()
    slow = Run(tmp_path, interval=10.0, max_backoff=500.0)
    slow.t.heartbeat = time.monotonic() - (2 * 500.0 + 600 - 5)
    assert slow.w.healthy()
    slow.w.finished = True
    assert not slow.w.healthy()


def test_the_health_server_answers_each_path(tmp_path: Path) -> None:
    t = Telemetry()
    t.cycle_done("ok", 0.1, success=True)
    states = {"healthy": True, "ready": False}
    server = HealthServer(("127.0.0.1", 0), t, healthy=lambda: states["healthy"], ready=lambda: states["ready"])
    try:
        plain = "text/plain; charset=utf-8"
        assert server.answer("GET", "/healthz") == (200, b"ok\n", plain)
        assert server.answer("GET", "/healthz?a=1?b=2") == (200, b"ok\n", plain)
        assert server.answer("HEAD", "/readyz?x=1") == (503, b"no cycle has succeeded yet\n", plain)
        states.update(healthy=False, ready=True)
        assert server.answer("GET", "/healthz") == (503, b"the loop is not running\n", plain)
        assert server.answer("GET", "/readyz") == (200, b"ok\n", plain)
        assert server.answer("POST", "/healthz") == (405, b"only GET\n", plain)
        assert server.answer("GET", "/other") == (404, b"not found: try /metrics, /healthz or /readyz\n", plain)
        status, body, kind = server.answer("GET", "/metrics?debug=1")
        assert status == 200 and b'reconciler_cycles_total{outcome="ok"} 1.0' in body and kind.startswith("text/plain")
        status, body, kind = server.answer("GET", "/metrics", "application/openmetrics-text; version=1.0.0")
        assert kind.startswith("application/openmetrics-text") and body.endswith(b"# EOF\n")
    finally:
        server.close()


# ---------------------------------------------------------------------- the options, checked at start


@pytest.mark.parametrize(("text", "seconds"), [
    ("5m", 300.0), ("30s", 30.0), ("1h", 3600.0), ("250ms", 0.25), ("1.5s", 1.5), ("45", 45.0), (" 2 m ", 120.0)])
def test_a_duration_is_read_in_its_unit(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "0s", "-1s", "5d", "", "soon", "1.s", "m", "5mm", "1e3"])
def test_a_duration_that_is_not_positive_or_has_no_known_unit_is_refused(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_duration(text)
    assert str(refused.value) == f"expected a positive duration such as 30s, 5m or 1h, got {text!r}"


@pytest.mark.parametrize(("text", "address"), [
    ("0.0.0.0:9108", ("0.0.0.0", 9108)), (":9108", ("0.0.0.0", 9108)), ("[::1]:9108", ("::1", 9108)),
    ("localhost:0", ("localhost", 0)), ("h:65535", ("h", 65535)), ("XBOX:80", ("XBOX", 80))])
def test_a_metrics_address_is_host_and_port(text: str, address: tuple[str, int]) -> None:
    assert parse_address(text) == address


@pytest.mark.parametrize("text", ["localhost", "9108", "h:", "h:65536", "h:-1", "h:x", "h:1.5"])
def test_a_metrics_address_without_a_port_in_range_is_refused(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_address(text)
    assert str(refused.value) == f"expected HOST:PORT (e.g. 0.0.0.0:9108), got {text!r}"


@pytest.mark.parametrize(("raw", "url"), [
    ("https://hooks.example.com/T/secret\n", "https://hooks.example.com/T/secret"),
    ("  http://127.0.0.1:9/x ", "http://127.0.0.1:9/x"), ("http://localhost/x", "http://localhost/x"),
    ("http://[::1]:8/x", "http://[::1]:8/x"), ("https://" + "a" * 63 + ".example/x", "https://" + "a" * 63 + ".example/x"),
    ("https://" + ("a" * 63 + ".") * 3 + "a" * 61 + "/x", "https://" + ("a" * 63 + ".") * 3 + "a" * 61 + "/x"),  # 253
])
def test_a_notify_url_is_https_or_loopback_http_and_stripped(raw: str, url: str) -> None:
    assert check_notify_url(raw) == url


@pytest.mark.parametrize(("raw", "message"), [
    ("http://hooks.example.com/T/secret", "--notify http://hooks.example.com/...: plain http:// is refused except "
                                          "to a loopback address (the URL is a secret and the notice is sent in "
                                          "clear text); use https://"),
    ("ftp://hooks.example.com/secret", "--notify: expected an absolute https:// URL (the URL is not shown: it is a "
                                       "secret)"),
    ("/relative/secret", "--notify: expected an absolute https:// URL (the URL is not shown: it is a secret)"),
    ("https://hooks.example.com/a secret", "--notify https://hooks.example.com/...: the URL holds whitespace or "
                                           "control characters"),
    ("https://hooks.example.com/a\xa0secret", "--notify https://hooks.example.com/...: the URL holds whitespace or "
                                              "control characters"),
    ("https://hooks.example.com/a\x85secret", "--notify https://hooks.example.com/...: the URL holds whitespace or "
                                              "control characters"),
    ("https://hooks.example.com/a\x7fsecret", "--notify: not a valid URL (the URL is not shown: it is a secret)"),
    ("https://" + "a" * 64 + ".example/secret", "--notify https://...: the host is not a DNS name: a DNS label of "
                                                "more than 63 characters"),
    ("https://" + ("a" * 60 + ".") * 5 + "example/secret", "--notify https://...: the host is not a DNS name: a host "
                                                           "name of more than 253 characters"),
    ("https://" + ("a" * 63 + ".") * 3 + "a" * 62 + "/secret", "--notify https://...: the host is not a DNS name: a "
                                                              "host name of more than 253 characters"),  # 254
    ("https://" + "a" * 64 + "." + "a" * 63 + "." + "a" * 63 + "." + "a" * 60 + "/secret",  # 253, one label too long
     "--notify https://...: the host is not a DNS name: a DNS label of more than 63 characters"),
    ("mailto:a\xa0secret", "--notify it/...: the URL holds whitespace or control characters"),
    ("http://[::1/secret", "--notify: not a valid URL (the URL is not shown: it is a secret)"),
])
def test_a_notify_url_that_would_leak_or_cannot_be_sent_to_is_refused_without_showing_it(
        raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        check_notify_url(raw)
    assert str(refused.value) == message
    assert "secret" not in str(refused.value).replace("is a secret", "")


SCOPED = """
kind: Integration
name: scoped
type: LLM
scopings: [{space: default}]
config: {provider: VENDOR_A, api_key: {env: SCOPED_KEY}}
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: scoped, model_name: m}
"""


def test_an_apply_with_a_refused_call_fails_the_cycle_and_says_what_is_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCOPED_KEY", "canary-scoped-key")
    r = Run(tmp_path, apply=True)
    r.write(SCOPED)
    with r.w.connected() as client:
        assert r.w.cycle(client) == (False, False)
    assert r.events("apply") == [
        {"event": "apply", "cycle": 1, "outcome": "partial", "applied": 1, "failed": 1, "skipped": 0}]
    [cycle] = r.events("cycle")
    assert cycle["outcome"] == "error" and cycle["failures"] == 1 and cycle["error_type"] == "ReconcilerError"
    assert cycle["message"] == "apply finished with 1 failed and 0 skipped calls; the next cycle retries"
    assert r.w.drift_open == {"Evaluator/research/judge"}
    assert [(e["event"], e.get("resources"), e["healed"]) for e in r.events() if e["event"] in ("drift", "healed")] == [
        ("drift", ["Evaluator/research/judge", "Integration/scoped"], ["Integration/scoped"])]
    assert r.metric("reconciler_resources", kind="Evaluator", state="drifted") == 1  # re-read after the failure
    assert r.metric("reconciler_resources", kind="Integration", state="in_sync") == 1


def test_a_load_warning_that_goes_and_comes_back_is_said_again(tmp_path: Path) -> None:
    r = Run(tmp_path, options=PlanOptions(variables=("team=support",)))
    with r.w.connected() as client:
        for text in (prompts("p"), prompts("p"), prompts("p", description="${var.team}"), prompts("p")):
            r.write(text)
            r.w.cycle(client)
    assert [e["cycle"] for e in r.events("warning")] == [1, 4]


def test_the_start_and_the_stop_are_said(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text", apply=True, interval=90.0, options=PlanOptions(prune=True))
    r.w.started(None)
    r.w.stopped("SIGTERM")
    r.w.ready = True
    r.w.cycles = 3
    r.w.stopped(None)
    assert r.lines() == [f"watching {r.tree} every 90s (applying, pruning)",
                         "SIGTERM: stopped after 0 cycle(s) (none succeeded).", "stop: stopped after 3 cycle(s)."]


@pytest.mark.parametrize("control", [chr(c) for c in (*range(32), 127)])
def test_a_notify_url_with_a_control_character_is_refused_without_showing_it(control: str) -> None:
    with pytest.raises(ConfigError) as refused:
        check_notify_url(f"https://hooks.example.com/a{control}secret")
    assert "secret" not in str(refused.value).replace("is a secret", "")


class Answering:
    """A webhook on 127.0.0.1 that answers each POST with ``status``, or never (``hang``)."""

    def __init__(self, status: int = 200, *, hang: threading.Event | None = None) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                if outer.hang is not None:
                    outer.hang.wait(60)
                self.send_response(outer.status)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.status, self.hang = status, hang
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/secret-token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        if self.hang is not None:
            self.hang.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_notice_the_webhook_refuses_is_counted_as_an_error(tmp_path: Path) -> None:
    hook = Answering(500)
    try:
        r = Run(tmp_path, notify_url=hook.url)
        r.write(prompts("p"))
        with r.w.connected() as client:
            assert r.w.cycle(client) == (True, True)
    finally:
        hook.close()
    assert [(e["cycle"], e["kind"], e["outcome"]) for e in r.events("notify")] == [(1, "drift", "HTTP 500")]
    assert r.metric("reconciler_notifications_total", kind="drift", outcome="error") == 1


def test_a_webhook_that_never_answers_does_not_hold_the_cycle(tmp_path: Path) -> None:
    hook = Answering(hang=threading.Event())
    try:
        r = Run(tmp_path, notify_url=hook.url)
        r.write(prompts("p"))
        with r.w.connected() as client:
            assert r.w.cycle(client) == (True, True)
    finally:
        hook.close()
    assert [e["outcome"] for e in r.events("notify")] == ["ReadTimeout"]


def test_a_loopback_webhook_is_reached_directly_not_through_a_proxy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    with receiving_notices() as (url, received):
        r = Run(tmp_path, notify_url=url)
        r.write(prompts("p"))
        with r.w.connected() as client:
            r.w.cycle(client)
    assert len(received) == 1 and [e["outcome"] for e in r.events("notify")] == ["ok"]


def test_before_any_good_load_the_cycle_says_so_in_text(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text")
    r.write("kind: Prompt\nname: [broken\n")
    with r.w.connected() as client:
        r.w.cycle(client)
    assert "cycle 1: no desired state yet (the manifests have never loaded)" in r.lines()
    assert "cycle 1: the manifests do not load (no desired state yet):" in r.lines()


RESTRICTED = PROMPT.replace("NAME", "p").replace("DESCRIPTION", "first") + """---
kind: ResourceRestriction
name: finance-dashboard
resource_type: DASHBOARD
resource_id: RGFzaGJvYXJkOjEy
"""


def test_an_applying_watch_compares_restrictions_a_planning_one_leaves_unseen_ones_out(tmp_path: Path) -> None:
    applying = Run(tmp_path, apply=True)
    applying.write(prompts("p"))
    with applying.w.connected() as client:
        applying.w.cycle(client)
    applying.write(RESTRICTED)  # none listed live, and the tree was applied before: a reader key looks the same
    planning = Run(tmp_path)
    with planning.w.connected() as client:
        assert planning.w.cycle(client) == (True, False)
    assert planning.events("drift") == []
    with applying.w.connected() as client:
        assert applying.w.cycle(client) == (True, False)
    assert [(e["cycle"], e["applied"]) for e in applying.events("apply")] == [(1, 1), (2, 1)]


def test_a_planning_watch_holds_nothing_back(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text")
    r.write(POLICED.replace("RULE", "no-prompts").replace("EFFECT", "deny"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, True)
    assert not any(line.startswith("Not applied") for line in r.printed)
    assert not any("not applied" in line for line in r.lines())


def test_a_replacement_is_made_when_watch_may_make_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEY_A", "canary-key-a")
    r = Run(tmp_path, apply=True, options=PlanOptions(allow_replace=True))
    integration = "kind: Integration\nname: llm\ntype: LLM\nconfig: {provider: PROVIDER, api_key: {env: KEY_A}}\n"
    r.write(integration.replace("PROVIDER", "VENDOR_A"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, False)
        r.write(integration.replace("PROVIDER", "VENDOR_C"))
        assert r.w.cycle(client) == (True, False)
    assert [(e["cycle"], e["applied"]) for e in r.events("apply")] == [(1, 1), (2, 2)]  # delete, then create


def test_a_secret_watch_would_send_that_does_not_resolve_is_named_with_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_KEY", raising=False)
    r = Run(tmp_path, apply=True)
    r.write("kind: Integration\nname: llm\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: UNSET_KEY}}\n")
    with r.w.connected() as client:
        r.w.cycle(client)
    [cycle] = r.events("cycle")
    assert "manifests.yaml:4:" in cycle["message"]


def test_an_interrupted_apply_says_how_far_it_got(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text", apply=True)
    r.write(prompts("p", "q"))
    with r.w.connected() as client:
        client.observers.append(lambda exchange: r.w.stop.set() if exchange.method == "POST" else None)
        r.w.cycle(client)
    assert "cycle 1: apply interrupted: 1 calls applied, 1 not started" in r.lines()


def test_the_plan_printed_ends_without_a_blank_line(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text")
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
    [shown] = [text for text in r.printed if "Plan:" in text]
    assert not shown.endswith("\n") and shown.rstrip() == shown


def test_a_delivered_notice_adds_no_line(tmp_path: Path) -> None:
    with receiving_notices() as (url, received):
        r = Run(tmp_path, log_format="text", notify_url=url)
        r.write(prompts("p"))
        with r.w.connected() as client:
            r.w.cycle(client)
    assert len(received) == 1 and not any("notice" in line for line in r.lines())


def test_ten_drifted_resources_are_all_named(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text")
    names = [f"p{i:02}" for i in range(10)]
    r.write(prompts(*names))
    with r.w.connected() as client:
        r.w.cycle(client)
    [said] = [line for line in r.lines() if line.startswith("Drift detected")]
    assert said.endswith(": " + ", ".join(f"Prompt/research/{n}" for n in names))


def test_a_load_warning_is_a_line_in_text(tmp_path: Path) -> None:
    r = Run(tmp_path, log_format="text", options=PlanOptions(variables=("unused=1",)))
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
    assert any(line.startswith("Warning: ") and "unused" in line for line in r.lines())


def test_a_cycle_is_timed_and_a_success_is_recorded(tmp_path: Path) -> None:
    r = Run(tmp_path)
    r.write(prompts("p"))
    with r.w.connected() as client:
        r.w.cycle(client)
    [cycle] = [json.loads(line) for line in r.stream.getvalue().splitlines() if '"cycle"' in line
               and json.loads(line)["event"] == "cycle"]
    assert isinstance(cycle["duration_s"], float) and 0 <= cycle["duration_s"] < 3600  # an upper bound only
    assert 0 <= (r.metric("reconciler_cycle_duration_seconds_sum") or -1) < 3600
    assert (r.metric("reconciler_last_successful_cycle_timestamp_seconds") or 0) > 0


def test_variable_files_and_policies_of_the_options_are_read_each_cycle(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("team: support\n")
    (tmp_path / "policy.yaml").write_text(POLICED.split("---")[0].replace("RULE", "watched").replace("EFFECT", "warn")
                                          .lstrip())
    r = Run(tmp_path, options=PlanOptions(var_files=(str(tmp_path / "vars.yaml"),),
                                          policies=(str(tmp_path / "policy.yaml"),)))
    r.write(prompts("p", description="${var.team}"))
    with r.w.connected() as client:
        assert r.w.cycle(client) == (True, True)
    assert r.events("manifest_error") == []
    assert [(e["rule"], e["effect"]) for e in r.events("policy")] == [("watched", "warn")]


def test_git_work_trees_are_pulled_before_a_cycle_unless_another_pulls_them(tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    r = Run(tmp_path)
    r.write(prompts("p"))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, capture_output=True, timeout=60)
    config = WatchConfig(paths=(str(r.tree),), git_pull=True)
    for pulls, expected in ((True, [(1, "error")]), (False, [])):
        stream = io.StringIO()
        w = Watcher(config, Connection(emulator=str(tmp_path / "state.db")), Telemetry(log_format="json", stream=stream),
                    out=lambda line: None, pulls=pulls)
        assert w.git_tops == [str(tmp_path)]
        with w.connected() as client:
            w.cycle(client)
        events = [json.loads(line) for line in stream.getvalue().splitlines()]
        # no upstream to pull from: the pull fails, and the cycle goes on with the files as they are
        assert [(e["cycle"], e["outcome"]) for e in events if e["event"] == "git_pull"] == expected
        assert [e["outcome"] for e in events if e["event"] == "cycle"] == ["ok"]


def test_a_webhook_elsewhere_is_reached_through_the_proxy_of_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    asked: list[bytes] = []
    proxy = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = proxy.accept()
        with conn:
            asked.append(conn.recv(4096).split(b"\r\n", 1)[0])  # the CONNECT line; then closed

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.getsockname()[1]}")
    try:
        r = Run(tmp_path, notify_url="https://hooks.example.test/T/secret-token")
        r.write(prompts("p"))
        with r.w.connected() as client:
            r.w.cycle(client)
        thread.join(30)
    finally:
        proxy.close()
    assert asked == [b"CONNECT hooks.example.test:443 HTTP/1.1"]
    [notice] = r.events("notify")
    assert notice["outcome"] != "ok" and "secret-token" not in r.stream.getvalue()


class Bottom(random.Random):
    """Jitter at the bottom of its range, every time."""

    def uniform(self, a: float, b: float) -> float:
        return a


def test_the_backoff_is_at_least_half_its_step_and_its_event_gives_the_wait(tmp_path: Path) -> None:
    r = Run(tmp_path, interval=300.0, max_backoff=100.0)
    r.w.rng = Bottom()
    r.w.failures = 2
    assert r.w.delay(False) == 30.0  # half of 60
    r.w.rng = random.Random(1)
    waited = r.w.delay(False)  # 34.0309...
    backoffs = [json.loads(line) for line in r.stream.getvalue().splitlines() if '"backoff"' in line]
    assert [e["duration_s"] for e in backoffs] == [30.0, 34.031] and round(waited, 3) == 34.031
