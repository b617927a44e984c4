"""Telemetry seen from outside: the metrics file a run writes (what a dashboard reads) and the log
events it prints (what a log pipeline reads). Nothing here talks to an API but a MockTransport."""

from __future__ import annotations

import asyncio
import io
import json
import threading
from pathlib import Path
from typing import Any

import httpx
import prometheus_client.metrics
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reconciler import __version__, telemetry, workflow
from reconciler.apply.executor import Outcome
from reconciler.client.http import ApiClient, Exchange
from reconciler.errors import ProblemError
from reconciler.model import DesiredResource, ManifestSet
from reconciler.plan.model import Operation, Plan, Unmanaged
from reconciler.telemetry import Telemetry

NOON = 1_767_268_800.25  # 2026-01-01T12:00:00.250Z


def families(t: Telemetry, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "reconciler.prom"
    t.write_textfile(str(path))
    return {f.name: f for f in text_string_to_metric_families(path.read_text())}


def value(t: Telemetry, tmp_path: Path, name: str, **labels: str) -> float | None:
    for family in families(t, tmp_path).values():
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


def op(address: str, action: str = "update", method: str = "PATCH", kind: str | None = None,
       name: str = "x", path: str = "/v2/things/1") -> Operation:
    return Operation(id=f"{address}#{action}", action=action, kind=kind or address.partition("/")[0], name=name,
                     method=method, path=path, address=address)


def res(kind: str, name: str) -> DesiredResource:
    return DesiredResource(kind=kind, name=name, space="research" if kind == "Prompt" else None, spec={})


def json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


# ---------------------------------------------------------------------- the metrics file


EXPECTED_HELP = {
    "reconciler_resources": ("gauge", "Resources by kind and state (in_sync, drifted, unmanaged)."),
    "reconciler_planned_operations": ("gauge", "Objects the last plan creates, updates, deletes, replaces."),
    "reconciler_cycle_duration_seconds": ("histogram", "Duration of a reconcile cycle (a one-shot command is "
                                                       "one cycle)."),
    "reconciler_cycles": ("counter", "Cycles by outcome (ok, error, manifest_error, interrupted)."),
    "reconciler_last_successful_cycle_timestamp_seconds": (
        "gauge", "Unix time the last cycle that read, planned (and applied) succeeded."),
    "reconciler_api_requests": ("counter", "HTTP exchanges with the API by method and status (retries included)."),
    "reconciler_apply_operations": ("counter", "Apply operations by action and outcome (applied, failed, "
                                               "skipped)."),
    "reconciler_manifest_errors": ("counter", "Manifest loads that failed."),
    "reconciler_manifest_error": ("gauge", "1 while the manifests do not load (the last good desired state is "
                                           "used)."),
    "reconciler_git_pull_errors": ("counter", "git pull --ff-only runs that failed (watch --git-pull)."),
    "reconciler_notifications": ("counter", "Notices posted (watch --notify) by kind and outcome."),
    "reconciler_consecutive_failures": ("gauge", "Cycles failed in a row."),
    "reconciler_build_info": ("gauge", "The reconciler version."),
    "reconciler_policy_verdicts": ("counter", 'Policy rules that fired, by effect (deny, require_approval, warn).'),
}


def test_the_metrics_file_names_and_explains_every_metric(tmp_path: Path) -> None:
    found = families(Telemetry(), tmp_path)
    assert {name: (f.type, f.documentation) for name, f in found.items()
            if not name.endswith("_created")} == EXPECTED_HELP


def test_a_fresh_run_reports_zero_for_every_action_and_cycle_outcome_and_its_version(tmp_path: Path) -> None:
    t = Telemetry()
    for action in ("create", "update", "delete", "replace"):
        assert value(t, tmp_path, "reconciler_planned_operations", action=action) == 0
    for outcome in ("ok", "error", "manifest_error", "interrupted"):
        assert value(t, tmp_path, "reconciler_cycles_total", outcome=outcome) == 0
    assert value(t, tmp_path, "reconciler_build_info", version=__version__) == 1


def test_cycle_durations_fall_in_buckets_from_a_tenth_of_a_second_to_half_an_hour(tmp_path: Path) -> None:
    t = Telemetry()
    t.cycle_done("ok", 0.3, success=True)
    assert value(t, tmp_path, "reconciler_cycle_duration_seconds_bucket", le="0.25") == 0
    assert value(t, tmp_path, "reconciler_cycle_duration_seconds_bucket", le="0.5") == 1
    bounds = [s.labels["le"] for s in families(t, tmp_path)["reconciler_cycle_duration_seconds"].samples
              if s.name.endswith("_bucket")]
    assert bounds == ["0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "30.0", "60.0", "120.0", "300.0",
                      "600.0", "1800.0", "+Inf"]


def test_a_successful_cycle_stamps_the_time_and_clears_the_failure_count(tmp_path: Path) -> None:
    t = Telemetry(clock=lambda: NOON)
    t.cycle_done("error", 1.0, success=False)
    t.cycle_done("error", 1.0, success=False)
    assert value(t, tmp_path, "reconciler_consecutive_failures") == 2
    assert value(t, tmp_path, "reconciler_last_successful_cycle_timestamp_seconds") == 0
    t.cycle_done("ok", 1.0, success=True)
    assert value(t, tmp_path, "reconciler_consecutive_failures") == 0
    assert value(t, tmp_path, "reconciler_last_successful_cycle_timestamp_seconds") == NOON
    assert value(t, tmp_path, "reconciler_cycles_total", outcome="error") == 2
    assert value(t, tmp_path, "reconciler_cycles_total", outcome="ok") == 1
    assert value(t, tmp_path, "reconciler_cycle_duration_seconds_count") == 3


def test_a_run_is_alive_from_its_start_and_each_cycle_renews_it() -> None:
    import time

    t = Telemetry()
    assert 0 < t.heartbeat <= time.monotonic()
    t.heartbeat = 0.0
    t.cycle_done("ok", 1.0, success=True)
    assert t.heartbeat > 0


def test_an_interrupted_cycle_is_counted_but_is_not_a_failure(tmp_path: Path) -> None:
    t = Telemetry()
    t.cycle_done("interrupted", 1.0, success=False)
    assert value(t, tmp_path, "reconciler_consecutive_failures") == 0
    assert value(t, tmp_path, "reconciler_cycles_total", outcome="interrupted") == 1


def test_a_manifest_error_is_counted_and_flagged_until_the_manifests_load_again(tmp_path: Path) -> None:
    t = Telemetry()
    t.manifest_failed()
    t.manifest_failed()
    assert value(t, tmp_path, "reconciler_manifest_errors_total") == 2
    assert value(t, tmp_path, "reconciler_manifest_error") == 1
    t.manifest_loaded()
    assert value(t, tmp_path, "reconciler_manifest_error") == 0
    assert value(t, tmp_path, "reconciler_manifest_errors_total") == 2


def test_every_exchange_is_counted_by_method_and_status_and_keeps_the_run_alive(tmp_path: Path) -> None:
    t = Telemetry()
    t.heartbeat = 0.0
    answers = iter([200, 200, 404, 503])
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(
        lambda request: httpx.Response(next(answers), json={})))
    with ApiClient(http, max_retries=0) as client:
        t.attach(client)
        client.run(client.get("/v2/a"))
        client.run(client.get("/v2/b"))
        client.run(client.delete("/v2/c", missing_ok=True))
        with pytest.raises(ProblemError, match=r"^PUT /v2/d: 503 Service Unavailable"):
            client.run(client.put("/v2/d", {}))
    assert value(t, tmp_path, "reconciler_api_requests_total", method="GET", status="200") == 2
    assert value(t, tmp_path, "reconciler_api_requests_total", method="DELETE", status="404") == 1
    assert value(t, tmp_path, "reconciler_api_requests_total", method="PUT", status="503") == 1
    assert t.heartbeat > 0


def test_an_observer_already_on_the_client_still_runs_when_telemetry_attaches() -> None:
    seen: list[int] = []
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(lambda r: httpx.Response(204)))
    with ApiClient(http) as client:
        client.observers.append(lambda exchange: seen.append(exchange.status))
        Telemetry().attach(client)
        client.run(client.get("/v2/a"))
    assert seen == [204]


def test_with_log_requests_each_exchange_is_a_request_event_made_from_the_client_s_fields() -> None:
    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, clock=lambda: NOON, metrics=False)
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(
        lambda r: httpx.Response(200, json={"spaces": []})))
    with ApiClient(http) as client:
        t.attach(client, log_requests=True)
        client.run(client.get("/v2/spaces", {"limit": 100}))
    (event,) = json_lines(stream)
    assert {k: event[k] for k in ("ts", "event", "method", "path", "status")} == {
        "ts": "2026-01-01T12:00:00.250Z", "event": "request", "method": "GET", "path": "/v2/spaces?limit=100",
        "status": 200}
    assert isinstance(event["duration_s"], float) and list(event) == ["ts", "event", "method", "path", "status",
                                                                      "duration_s"]


def test_observers_are_told_typed_exchanges_retries_included_and_telemetry_parses_no_text() -> None:
    answers = iter([429, 503, 200])
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(
        lambda r: httpx.Response(next(answers), headers={"Retry-After": "0"}, json={"spaces": []})))
    seen: list[Exchange] = []
    lines: list[str] = []
    with ApiClient(http, on_event=lines.append, trace=True, sleep=asyncio.sleep) as client:
        client.observers.append(seen.append)
        client.run(client.get("/v2/spaces", {"limit": 100, "cursor": None}))
    assert [(e.method, e.path, dict(e.params or {}), e.status, e.attempt) for e in seen] == [
        ("GET", "/v2/spaces", {"limit": 100}, 429, 1), ("GET", "/v2/spaces", {"limit": 100}, 503, 2),
        ("GET", "/v2/spaces", {"limit": 100}, 200, 3)]
    assert all(isinstance(e.seconds, float) and e.seconds >= 0 for e in seen)
    # -v's lines are made from the same fields, as before
    assert [line for line in lines if "->" in line] == [e.line() for e in seen]
    assert seen[0].line() == f"GET /v2/spaces?limit=100 -> 429 ({seen[0].milliseconds} ms)"
    source = Path(telemetry.__file__).read_text(encoding="utf-8")
    assert "import re\n" not in source and "re.compile" not in source and ".match(" not in source


# ---------------------------------------------------------------------- what a plan sets


def test_a_plan_sets_declared_resources_in_sync_or_drifted_and_counts_the_unmanaged(tmp_path: Path) -> None:
    t = Telemetry()
    manifests = ManifestSet((res("Integration", "a"), res("Integration", "b"), res("Integration", "c"),
                             res("Prompt", "p")))
    plan = Plan(operations=(op("Integration/a"), op("Integration/a", "update", "PUT"),
                            op("Prompt/research/stray", "delete", "DELETE", name="stray")),
                unmanaged=(Unmanaged("Integration/z", "Integration", "z", "/v2/integrations/9"),))
    states = t.observe_plan(manifests, plan)
    assert states == {"drifted": ["Integration/a"], "unmanaged": ["Integration/z", "Prompt/research/stray"]}
    assert value(t, tmp_path, "reconciler_resources", kind="Integration", state="drifted") == 1
    assert value(t, tmp_path, "reconciler_resources", kind="Integration", state="in_sync") == 2
    assert value(t, tmp_path, "reconciler_resources", kind="Integration", state="unmanaged") == 1
    assert value(t, tmp_path, "reconciler_resources", kind="Prompt", state="in_sync") == 1
    assert value(t, tmp_path, "reconciler_resources", kind="Prompt", state="unmanaged") == 1
    assert value(t, tmp_path, "reconciler_planned_operations", action="update") == 1  # objects, not calls
    assert value(t, tmp_path, "reconciler_planned_operations", action="delete") == 1
    assert value(t, tmp_path, "reconciler_planned_operations", action="create") == 0


def test_unmanaged_resources_of_one_kind_are_counted_together(tmp_path: Path) -> None:
    t = Telemetry()
    unmanaged = tuple(Unmanaged(f"Integration/z{i}", "Integration", f"z{i}", f"/v2/integrations/{i}") for i in range(3))
    t.observe_plan(None, Plan(operations=(), unmanaged=unmanaged))
    assert value(t, tmp_path, "reconciler_resources", kind="Integration", state="unmanaged") == 3


def test_a_kind_that_leaves_the_plan_reads_zero_instead_of_its_old_count(tmp_path: Path) -> None:
    t = Telemetry()
    t.observe_plan(ManifestSet((res("Prompt", "p"),)), Plan(operations=(op("Prompt/research/p", "create", "POST"),)))
    assert value(t, tmp_path, "reconciler_resources", kind="Prompt", state="drifted") == 1
    t.observe_plan(ManifestSet((res("Integration", "a"),)), Plan(operations=()))
    assert value(t, tmp_path, "reconciler_resources", kind="Prompt", state="drifted") == 0
    assert value(t, tmp_path, "reconciler_resources", kind="Prompt", state="in_sync") == 0
    assert value(t, tmp_path, "reconciler_resources", kind="Integration", state="in_sync") == 1
    assert value(t, tmp_path, "reconciler_planned_operations", action="create") == 0


def test_a_retention_delete_of_another_kind_is_not_counted_as_unmanaged() -> None:
    t = Telemetry()
    retention = op("Dataset/research/golden", "delete", "DELETE", kind="Experiment", name="exp-3",
                   path="/v2/experiments/E1")
    states = t.observe_plan(ManifestSet((res("Dataset", "golden"),)), Plan(operations=(retention,)))
    assert states["unmanaged"] == []


def test_a_plan_without_manifests_counts_only_what_it_deletes_and_lists() -> None:
    t = Telemetry()
    states = t.observe_plan(None, Plan(operations=(op("Integration/old", "delete", "DELETE"),)))
    assert states == {"drifted": [], "unmanaged": ["Integration/old"]}


def test_a_logged_plan_prints_one_event_per_object_and_per_unmanaged_resource() -> None:
    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, clock=lambda: NOON)
    t.cycle = 4
    plan = Plan(operations=(op("Integration/a", "update", "PATCH"), op("Integration/a", "update", "PUT")),
                unmanaged=(Unmanaged("Integration/z", "Integration", "z", "/v2/integrations/9"),))
    t.observe_plan(ManifestSet((res("Integration", "a"),)), plan, log=True)
    assert json_lines(stream) == [
        {"ts": "2026-01-01T12:00:00.250Z", "event": "plan", "cycle": 4, "resource": "Integration/a",
         "action": "update", "outcome": "planned"},
        {"ts": "2026-01-01T12:00:00.250Z", "event": "plan", "cycle": 4, "resource": "Integration/z",
         "action": "none", "outcome": "unmanaged"},
    ]


def test_a_plan_is_not_logged_unless_asked_or_in_text_mode() -> None:
    stream = io.StringIO()
    plan = Plan(operations=(op("Integration/a"),))
    Telemetry(log_format="json", stream=stream).observe_plan(None, plan)
    Telemetry(log_format="text", stream=stream).observe_plan(None, plan, log=True)
    assert stream.getvalue() == ""


# ---------------------------------------------------------------------- apply outcomes


def test_each_apply_outcome_is_counted_logged_and_passed_on(tmp_path: Path) -> None:
    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, clock=lambda: NOON)
    passed: list[str] = []
    done = t.outcome_sink(lambda o: passed.append(o.status))
    done(Outcome(op("Integration/a", "create", "POST"), "applied"))
    done(Outcome(op("Integration/b", "create", "POST"), "failed", "422 Unprocessable"))
    assert passed == ["applied", "failed"]
    assert value(t, tmp_path, "reconciler_apply_operations_total", action="create", outcome="applied") == 1
    assert value(t, tmp_path, "reconciler_apply_operations_total", action="create", outcome="failed") == 1
    events = json_lines(stream)
    assert [(e["event"], e["resource"], e["action"], e["method"], e["outcome"], e.get("detail")) for e in events] \
        == [("resource", "Integration/a", "create", "POST", "applied", None),
            ("resource", "Integration/b", "create", "POST", "failed", "422 Unprocessable")]
    assert all(0 <= e["duration_s"] < 60 and "cycle" not in e for e in events)


def test_an_outcome_event_carries_the_cycle_and_the_seconds_since_the_apply_began(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream)
    t.cycle = 3
    t.heartbeat = 0.0
    now = iter([100.0, 100.123456, 100.123456])
    monkeypatch.setattr(telemetry.time, "monotonic", lambda: next(now))
    t.outcome_sink(None)(Outcome(op("Integration/a", "create", "POST"), "applied"))
    (event,) = json_lines(stream)
    assert (event["cycle"], event["duration_s"]) == (3, 0.123)
    assert t.heartbeat == 100.123456  # an outcome is a sign of life for /healthz


def test_an_outcome_sink_with_nothing_after_it_only_counts(tmp_path: Path) -> None:
    t = Telemetry()
    t.outcome_sink(None)(Outcome(op("Integration/a", "delete", "DELETE"), "skipped"))
    assert value(t, tmp_path, "reconciler_apply_operations_total", action="delete", outcome="skipped") == 1


# ---------------------------------------------------------------------- log events


def test_json_events_carry_a_utc_timestamp_the_event_and_only_the_fields_given() -> None:
    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, clock=lambda: NOON)
    t.event("cycle", "text for humans", cycle=2, outcome="ok", detail=None, path=Path("/x"))
    assert stream.getvalue() == ('{"ts": "2026-01-01T12:00:00.250Z", "event": "cycle", "cycle": 2, '
                                 '"outcome": "ok", "path": "/x"}\n')


def test_text_events_print_their_text_and_an_event_without_text_prints_nothing() -> None:
    stream = io.StringIO()
    t = Telemetry(stream=stream)
    t.event("cycle", "cycle 2: in sync", cycle=2)
    t.event("plan", cycle=2)
    assert stream.getvalue() == "cycle 2: in sync\n"


def test_events_go_to_stderr_when_no_stream_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    Telemetry().event("command", "done")
    assert capsys.readouterr().err == "done\n"


def test_an_unknown_log_format_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"^log format must be one of text, json$"):
        Telemetry(log_format="yaml")


def test_client_lines_are_printed_as_they_are_in_text_mode() -> None:
    stream = io.StringIO()
    sink = Telemetry(stream=stream).client_events()
    sink("GET /v2/spaces -> 200 (12 ms)")
    sink("429 on GET /v2/spaces: waiting 1s (Retry-After)")
    assert stream.getvalue() == "GET /v2/spaces -> 200 (12 ms)\n429 on GET /v2/spaces: waiting 1s (Retry-After)\n"


def test_client_lines_are_client_events_in_json_mode_never_parsed_into_requests() -> None:
    stream = io.StringIO()
    sink = Telemetry(log_format="json", stream=stream, clock=lambda: NOON).client_events()
    sink("GET /v2/spaces?limit=100 -> 200 (1250 ms)")
    sink("429 on GET /v2/spaces: waiting 1s (Retry-After)")
    assert json_lines(stream) == [
        {"ts": "2026-01-01T12:00:00.250Z", "event": "client", "message": "GET /v2/spaces?limit=100 -> 200 (1250 ms)"},
        {"ts": "2026-01-01T12:00:00.250Z", "event": "client",
         "message": "429 on GET /v2/spaces: waiting 1s (Retry-After)"},
    ]


def test_the_telemetry_is_passed_in_never_a_process_global() -> None:
    assert not hasattr(telemetry, "current") and not hasattr(telemetry, "set_current")
    t = Telemetry()
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(lambda r: httpx.Response(204)))
    with ApiClient(http) as client:
        assert workflow.reporter(client) is None  # nothing to report to unless connected with one
        client.reporter = t
        assert workflow.reporter(client) is t


# --------------------------------------------------------------------------------------------------
# Telemetry at edges mutation testing found unpinned (reconciler/telemetry.py): the ``*_created``
# series of the metrics file, on by the environment's choice only, and the error for a figure that
# does not exist.


def series(tmp_path: Path) -> set[str]:
    t = Telemetry()
    t.cycle_done("ok", 1.0, success=True)
    path = tmp_path / "reconciler.prom"
    t.write_textfile(str(path))
    return {line.split("{")[0].split(" ")[0] for line in path.read_text().splitlines() if not line.startswith("#")}


def test_the_metrics_file_has_no_created_series_unless_the_environment_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_client.metrics, "_use_created", True)  # a fresh process's default
    monkeypatch.delenv("PROMETHEUS_DISABLE_CREATED_SERIES", raising=False)
    names = series(tmp_path)
    assert "reconciler_cycles_total" in names
    assert not any(n.endswith("_created") for n in names)


def test_the_created_series_are_written_when_the_environment_asks_for_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_client.metrics, "_use_created", True)  # what prometheus_client read from it
    monkeypatch.setenv("PROMETHEUS_DISABLE_CREATED_SERIES", "false")
    assert "reconciler_cycles_created" in series(tmp_path)


def test_a_figure_that_does_not_exist_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"^'Telemetry' object has no attribute 'nope'$"):
        Telemetry().nope  # noqa: B018
    assert getattr(Telemetry(), "nope", None) is None


def samples(t: Telemetry, tmp_path: Path, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    from prometheus_client.parser import text_string_to_metric_families

    path = tmp_path / "reconciler.prom"
    t.write_textfile(str(path))
    return {tuple(sorted(s.labels.items())): s.value for f in text_string_to_metric_families(path.read_text())
            if f.name == family for s in f.samples if s.name == family + "_total"}


def test_policy_verdicts_are_counted_by_effect_from_zero_and_each_is_logged(tmp_path: Path) -> None:
    import io
    import json

    from reconciler.plan.model import Verdict

    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, clock=lambda: 0.0)
    assert samples(t, tmp_path, "reconciler_policy_verdicts") == {
        (("effect", "deny"),): 0.0, (("effect", "require_approval"),): 0.0, (("effect", "warn"),): 0.0}
    t.count_verdicts([Verdict("no-deletes", "deny", "Prompt/research/p", "no", "policy.yaml:3"),
                      Verdict("review", "warn", None, "look", "policy.yaml:9"),
                      Verdict("no-deletes", "deny", "Prompt/research/q", "no", "policy.yaml:3")])
    assert samples(t, tmp_path, "reconciler_policy_verdicts") == {
        (("effect", "deny"),): 2.0, (("effect", "require_approval"),): 0.0, (("effect", "warn"),): 1.0}
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [{k: v for k, v in e.items() if k != "ts"} for e in events] == [
        {"event": "policy", "rule": "no-deletes", "effect": "deny", "resource": "Prompt/research/p", "message": "no",
         "source": "policy.yaml:3"},
        {"event": "policy", "rule": "review", "effect": "warn", "message": "look", "source": "policy.yaml:9"},
        {"event": "policy", "rule": "no-deletes", "effect": "deny", "resource": "Prompt/research/q", "message": "no",
         "source": "policy.yaml:3"}]


def test_without_metrics_verdicts_are_only_logged() -> None:
    import io

    from reconciler.plan.model import Verdict

    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, metrics=False)
    t.count_verdicts([Verdict("r", "warn", None, "m", "p.yaml:1")])
    assert '"event": "policy"' in stream.getvalue()
    assert "registry" not in vars(t)  # no figure was built


def test_notifications_are_counted_by_kind_and_outcome(tmp_path: Path) -> None:
    t = Telemetry()
    t.notifications.labels("drift", "ok").inc()
    assert samples(t, tmp_path, "reconciler_notifications") == {(("kind", "drift"), ("outcome", "ok")): 1.0}


def test_a_request_event_gives_the_exchange_s_duration_in_seconds() -> None:
    import io
    import json

    import httpx

    from reconciler.client.http import ApiClient, Exchange

    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, metrics=False)
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    with ApiClient(http) as client:
        t.attach(client, log_requests=True)
        for observe in client.observers:  # an exchange that took 1.25 s, as the client tells it
            observe(Exchange("GET", "/v2/spaces", None, 200, 1.25, 1))
    (event,) = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert event["duration_s"] == 1.25


class _Gate:
    """Stands for the telemetry's build lock: each thread that reaches it (its figures not built yet)
    says so, then waits until the test lets it through; the real lock still serialises them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrived = {name: threading.Event() for name in ("first", "second")}
        self.go = {name: threading.Event() for name in ("first", "second")}

    def __enter__(self) -> None:
        name = threading.current_thread().name
        self.arrived[name].set()
        assert self.go[name].wait(30)
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_two_threads_reaching_the_unbuilt_figures_at_once_count_into_one_registry(tmp_path: Path) -> None:
    """Two apply workers finish their first operations together: both find the figures not built; the
    first builds them and counts; the second must count into the same figures, not build new ones (which
    would drop the first count from the metrics file)."""
    t = Telemetry()
    gate = _Gate()
    t._build_lock = gate  # type: ignore[assignment]
    threads = {name: threading.Thread(target=t.observe_outcome, args=("create", "applied"), name=name)
               for name in ("first", "second")}
    for name, thread in threads.items():
        thread.start()
        assert gate.arrived[name].wait(30)
    gate.go["first"].set()
    threads["first"].join(30)
    gate.go["second"].set()
    threads["second"].join(30)
    assert samples(t, tmp_path, "reconciler_apply_operations")[(("action", "create"), ("outcome", "applied"))] == 2
