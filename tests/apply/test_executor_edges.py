"""The executor at its edges, on a scripted transport: the order calls go in, what each method
sends, what the end report and its advice say, and the callbacks a progress display relies on."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest

from reconciler.apply.executor import APPLIED, FAILED, SKIPPED, ApplyReport, Outcome, describe
from reconciler.client.http import ApiClient
from reconciler.plan.model import APPLY_TIME, Change, Operation, Plan
from tests.apply.runs import no_sleep, run_plan


def client(handler: Any, **kw: Any) -> ApiClient:
    http = httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler))
    return ApiClient(http, max_retries=kw.pop("max_retries", 0), sleep=no_sleep, **kw)


def op(id: str, method: str = "PATCH", path: str | None = None, body: Any = None, depends: tuple[str, ...] = (),
       **kw: Any) -> Operation:
    return Operation(id=id, action=kw.pop("action", "update"), kind=kw.pop("kind", "Integration"), name=id,
                     method=method, path=path or f"/v2/things/{id}", body=body, depends_on=depends,
                     address=kw.pop("address", f"Integration/{id}"), **kw)


def problem(status: int, detail: str = "no") -> httpx.Response:
    return httpx.Response(status, json={"title": "Boom", "status": status, "detail": detail},
                          headers={"content-type": "application/problem+json"})


class Recorder:
    """Answers 200 with ``{"id": "<n>"}`` (or what ``answers`` says for a path) and records each call."""

    def __init__(self, answers: dict[str, httpx.Response] | None = None) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.answers = answers or {}
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            body = json.loads(request.content) if request.content else None
            self.calls.append((request.method, request.url.path, body))
            n = len(self.calls)
        return self.answers.get(request.url.path, httpx.Response(200, json={"id": f"ID{n}"}))

    @property
    def sent(self) -> list[str]:
        return [f"{m} {p}" for m, p, _ in self.calls]


# ---------------------------------------------------------------------- order


def test_deletes_go_kind_by_kind_in_reverse_dependency_order_after_every_other_call() -> None:
    kinds = ["Integration", "Dataset", "Prompt", "Evaluator", "ResourceRestriction", "Experiment", "Space"]
    ops = tuple(op(f"d{k}", "DELETE", f"/v2/{k.lower()}/1", action="delete", kind=k) for k in kinds)
    rec = Recorder()
    report = run_plan(Plan(operations=(*ops, op("u", "PATCH", "/v2/u"))), client(rec), parallelism=4)
    assert report.ok
    assert rec.sent == ["PATCH /v2/u", "DELETE /v2/experiment/1", "DELETE /v2/resourcerestriction/1",
                        "DELETE /v2/evaluator/1", "DELETE /v2/prompt/1", "DELETE /v2/dataset/1",
                        "DELETE /v2/integration/1", "DELETE /v2/space/1"]


def test_a_replace_deletes_in_the_first_phase_in_plan_order() -> None:
    rec = Recorder({"/v2/integrations/OLD": httpx.Response(204)})
    plan = Plan(operations=(op("gone", "DELETE", "/v2/integrations/OLD", action="replace", address="Integration/x"),
                            op("new", "POST", "/v2/integrations", {"name": "x"}, action="replace",
                               address="Integration/x")))
    assert run_plan(plan, client(rec), parallelism=4).ok
    assert rec.sent == ["DELETE /v2/integrations/OLD", "POST /v2/integrations"]


def test_calls_of_one_resource_keep_their_plan_order_with_many_workers() -> None:
    rec = Recorder()
    plan = Plan(operations=tuple(op(f"c{i}", "PATCH", f"/v2/x/{i}", address="Prompt/research/p") for i in range(6)))
    assert run_plan(plan, client(rec, parallelism=4), parallelism=4).ok
    assert rec.sent == [f"PATCH /v2/x/{i}" for i in range(6)]


def test_ready_calls_start_in_plan_order_on_one_worker() -> None:
    rec = Recorder()
    plan = Plan(operations=(op("b", depends=("a",)), op("a"), op("c"), op("d", depends=("c",))))
    assert run_plan(plan, client(rec), parallelism=1).ok
    assert rec.sent == ["PATCH /v2/things/a", "PATCH /v2/things/b", "PATCH /v2/things/c", "PATCH /v2/things/d"]


def test_a_dependency_that_failed_in_an_earlier_phase_skips_the_delete_naming_it() -> None:
    rec = Recorder({"/v2/things/a": problem(422)})
    plan = Plan(operations=(op("a"), op("z", "DELETE", "/v2/z", depends=("a",), action="delete")))
    report = run_plan(plan, client(rec), parallelism=2)
    assert [(o.op.id, o.status, o.detail) for o in report.outcomes] == [
        ("a", FAILED, "422 Boom: no"), ("z", SKIPPED, "depends on a, which was failed")]
    assert rec.sent == ["PATCH /v2/things/a"]


def test_a_skipped_call_skips_what_depends_on_it_too_and_the_rest_is_sent() -> None:
    rec = Recorder({"/v2/things/a": problem(500)})
    plan = Plan(operations=(op("a"), op("b", depends=("a",)), op("c", depends=("b",)), op("d")))
    report = run_plan(plan, client(rec), parallelism=3)
    assert [o.status for o in report.outcomes] == [FAILED, SKIPPED, SKIPPED, APPLIED]
    assert report.outcomes[2].detail == "depends on b, which was skipped"
    assert sorted(rec.sent) == ["PATCH /v2/things/a", "PATCH /v2/things/d"]
    assert not report.ok


def test_fail_fast_skips_later_phases_too() -> None:
    rec = Recorder({"/v2/things/a": problem(500)})
    plan = Plan(operations=(op("a"), op("z", "DELETE", "/v2/z", action="delete")))
    report = run_plan(plan, client(rec), parallelism=2, fail_fast=True)
    assert [(o.status, o.detail) for o in report.outcomes] == [
        (FAILED, "500 Boom: no"), (SKIPPED, "not started: --fail-fast after an earlier failure")]
    assert rec.sent == ["PATCH /v2/things/a"]


def test_without_fail_fast_a_failure_stops_nothing_else() -> None:
    rec = Recorder({"/v2/things/a": problem(500)})
    plan = Plan(operations=(op("a", address="Integration/s"), op("b", address="Integration/s"),
                            op("z", "DELETE", "/v2/z", action="delete")))
    report = run_plan(plan, client(rec), parallelism=1)
    assert [o.status for o in report.outcomes] == [FAILED, APPLIED, APPLIED]


def test_an_empty_plan_sends_nothing_and_reports_nothing() -> None:
    report = run_plan(Plan(operations=()), client(Recorder()))
    assert report.outcomes == [] and report.ok
    assert report.lines() == ["Applied: 0", "Failed: 0", "Skipped: 0"]


# ---------------------------------------------------------------------- what each call sends


def test_each_method_sends_its_body_and_a_delete_of_a_missing_object_counts_as_done() -> None:
    rec = Recorder({"/v2/gone": problem(404), "/v2/empty": httpx.Response(204)})
    plan = Plan(operations=(
        op("p", "POST", "/v2/new", {"name": "n"}, action="create"),
        op("u", "PUT", "/v2/labels", {"labels": ["x"]}),
        op("e", "PATCH", "/v2/empty", {"a": 1}),
        op("g", "DELETE", "/v2/gone", action="delete"),
    ))
    report = run_plan(plan, client(rec), parallelism=1)
    assert [o.status for o in report.outcomes] == [APPLIED] * 4
    assert rec.calls == [("POST", "/v2/new", {"name": "n"}), ("PUT", "/v2/labels", {"labels": ["x"]}),
                         ("PATCH", "/v2/empty", {"a": 1}), ("DELETE", "/v2/gone", None)]
    assert report.responses == {"p": {"id": "ID1"}, "u": {"id": "ID2"}, "e": {}, "g": {}}


def test_a_delete_that_is_part_of_an_update_fails_on_404() -> None:
    rec = Recorder({"/v2/examples": problem(404)})
    plan = Plan(operations=(op("x", "DELETE", "/v2/examples", {"example_ids": ["E1"]}, action="update"),))
    report = run_plan(plan, client(rec))
    assert report.outcomes[0].status == FAILED
    assert report.outcomes[0].http_status == 404
    assert rec.calls == [("DELETE", "/v2/examples", {"example_ids": ["E1"]})]


def test_an_unknown_method_fails_that_call_only() -> None:
    report = run_plan(Plan(operations=(op("x", "TRACE"), op("y"))), client(Recorder()))
    assert [(o.status, o.detail) for o in report.outcomes] == [(FAILED, "unsupported method TRACE"), (APPLIED, None)]


def test_the_apply_time_is_the_one_given_or_the_start_of_the_apply() -> None:
    rec = Recorder()
    plan = Plan(operations=(op("v", "PATCH", "/v2/d", {"new_version": APPLY_TIME}),))
    run_plan(plan, client(rec), apply_time="2026-01-01T12:00:00Z")
    run_plan(plan, client(rec))
    assert rec.calls[0][2] == {"new_version": "2026-01-01T12:00:00Z"}
    stamp = rec.calls[1][2]["new_version"]
    assert len(stamp) == 20 and stamp.endswith("Z") and stamp[10] == "T"


def test_a_reference_to_a_call_that_failed_to_answer_it_fails_with_the_reference() -> None:
    rec = Recorder({"/v2/a": httpx.Response(200, json={"other": 1})})
    plan = Plan(operations=(op("a", "POST", "/v2/a", {}), op("b", "PUT", "/v2/b/${a:id}", {}, ("a",))))
    report = run_plan(plan, client(rec))
    assert report.outcomes[1].status == FAILED
    assert report.outcomes[1].detail == "reference ${a:id}: the response of a has no id"
    assert report.outcomes[1].http_status is None


def test_the_report_shows_the_path_as_sent_with_real_ids() -> None:
    rec = Recorder({"/v2/a": httpx.Response(201, json={"id": "I7"})})
    plan = Plan(operations=(op("a", "POST", "/v2/a", {}), op("b", "PATCH", "/v2/b/${a:id}", {}, ("a",),
                                                            note="rename")))
    report = run_plan(plan, client(rec))
    assert report.outcomes[1].path == "/v2/b/I7"
    assert report.lines() == ["Applied: 2", "  Integration/a POST /v2/a", "  Integration/b PATCH /v2/b/I7 (rename)",
                              "Failed: 0", "Skipped: 0"]


def test_a_call_never_sent_is_described_with_its_planned_path() -> None:
    planned = op("b", "PATCH", "/v2/b/${a:id}", note="n")
    assert describe(planned) == "Integration/b PATCH /v2/b/(known after apply) (n)"
    assert describe(op("c")) == "Integration/c PATCH /v2/things/c"
    assert Outcome(planned, SKIPPED, path="/v2/b/I1").describe() == "Integration/b PATCH /v2/b/I1 (n)"


# ---------------------------------------------------------------------- the report


def test_the_end_report_lists_failed_and_skipped_with_their_reason_and_applied_only_when_asked() -> None:
    rec = Recorder({"/v2/things/a": problem(422, "name is taken")})
    plan = Plan(operations=(op("a"), op("b", depends=("a",)), op("c")))
    report = run_plan(plan, client(rec), parallelism=1)
    assert report.lines(list_applied=False) == [
        "Applied: 1", "Failed: 1", "  Integration/a PATCH /v2/things/a: 422 Boom: name is taken",
        "Skipped: 1", "  Integration/b PATCH /v2/things/b: depends on a, which was failed"]
    assert report.of(APPLIED)[0].op.id == "c"


@pytest.mark.parametrize(("status", "transient"), [
    (None, True), (500, True), (503, True), (408, True), (409, True), (429, True),
    (400, False), (404, False), (422, False), (499, False)])
def test_only_a_transport_failure_a_5xx_a_timeout_a_race_or_a_throttle_is_worth_a_re_run(
        status: int | None, transient: bool) -> None:
    outcome = Outcome(op("a", changes=(Change("config.x", 1, 2, "m.yaml:3"),)), FAILED, "boom", http_status=status)
    summary = ApplyReport([outcome]).failure_summary()
    if transient:
        assert summary == "apply finished with 1 failed and 0 skipped calls; the failures may be transient: " \
                          "re-run to converge"
    else:
        assert summary.splitlines() == [
            "apply finished with 1 failed and 0 skipped calls; the API refused these, and will again until the "
            "manifests (or the key) change:",
            "  Integration/a: boom -> change config.x at m.yaml:3", "Fix them and re-run."]


def test_the_advice_names_at_most_three_changes_and_prefers_those_the_refusal_names() -> None:
    changes = tuple(Change(f"config.f{i}", 0, 1, f"m.yaml:{i}") for i in range(5)) + (Change("config.nosrc", 0, 1),)
    named = Outcome(op("a", changes=changes), FAILED, "F3 is too long", http_status=422)
    unnamed = Outcome(op("b", changes=changes), FAILED, "invalid", http_status=422)
    forbidden = Outcome(op("c", changes=changes), FAILED, "no", http_status=403)
    lines = ApplyReport([named, unnamed, forbidden]).failure_summary().splitlines()
    assert lines[1:] == [
        "  Integration/a: F3 is too long -> change config.f3 at m.yaml:3",
        "  Integration/b: invalid -> change config.f0 at m.yaml:0, config.f1 at m.yaml:1, config.f2 at m.yaml:2",
        "  Integration/c: no -> use a key that may write (RECONCILER_API_KEY or --api-key-file)",
        "Fix them and re-run."]


def test_a_refusal_with_no_manifest_line_to_point_at_gives_no_advice() -> None:
    outcome = Outcome(op("a", changes=(Change("config.x", 0, 1),)), FAILED, "nope", http_status=401)
    assert ApplyReport([outcome]).failure_summary().splitlines()[1] == \
        "  Integration/a: nope -> use a key that may write (RECONCILER_API_KEY or --api-key-file)"
    bare = Outcome(op("b", changes=(Change("", 0, 1, "m.yaml:1"),)), FAILED, "nope", http_status=400)
    assert ApplyReport([bare]).failure_summary().splitlines()[1] == "  Integration/b: nope"


def test_refused_and_transient_failures_together_say_both() -> None:
    report = ApplyReport([Outcome(op("a"), FAILED, "bad", http_status=422),
                          Outcome(op("b"), FAILED, "down", http_status=503),
                          Outcome(op("c"), SKIPPED, "depends on b, which was failed")])
    lines = report.failure_summary().splitlines()
    assert lines[0].startswith("apply finished with 2 failed and 1 skipped calls; the API refused these")
    assert lines[1:] == ["  Integration/a: bad",
                         "The other failures may be transient: re-run after fixing these to converge."]


# ---------------------------------------------------------------------- callbacks


def test_each_call_is_announced_before_it_is_sent_and_reported_once_after() -> None:
    events: list[str] = []
    rec = Recorder({"/v2/things/a": problem(500)})
    plan = Plan(operations=(op("a"), op("b", depends=("a",)), op("c")))
    run_plan(plan, client(rec), parallelism=1, on_start=lambda o: events.append(f"start {o.id}"),
            on_done=lambda o: events.append(f"done {o.op.id} {o.status}"))
    assert events == ["start a", "done a failed", "done b skipped", "start c", "done c applied"]


def test_an_error_raised_by_a_callback_reaches_the_caller() -> None:
    def boom(outcome: Outcome) -> None:
        raise RuntimeError("display broke")

    with pytest.raises(RuntimeError, match="^display broke$"):
        run_plan(Plan(operations=(op("a"), op("b"))), client(Recorder()), parallelism=2, on_done=boom)


def test_a_refusal_without_detail_lists_every_change_even_one_named_x() -> None:
    changes = (Change("config.x", 0, 1, "m.yaml:1"), Change("config.y", 0, 1, "m.yaml:2"))
    outcome = Outcome(op("a", changes=changes), FAILED, None, http_status=422)
    assert ApplyReport([outcome]).failure_summary().splitlines()[1] == \
        "  Integration/a: None -> change config.x at m.yaml:1, config.y at m.yaml:2"


def test_the_advice_matches_a_refusal_on_the_last_part_of_a_nested_field_or_a_top_level_one() -> None:
    nested = (Change("config.auth.api_key", 0, 1, "m.yaml:5"), Change("config.model", 0, 1, "m.yaml:6"))
    top = (Change("name", "a", "b", "m.yaml:2"), Change("config.model", 0, 1, "m.yaml:6"))
    lines = ApplyReport([Outcome(op("a", changes=nested), FAILED, "API_KEY is too long", http_status=422),
                         Outcome(op("b", changes=top), FAILED, "name is taken", http_status=409),
                         Outcome(op("c", changes=top), FAILED, "name is taken", http_status=400)]
                        ).failure_summary().splitlines()
    assert lines[1:3] == ["  Integration/a: API_KEY is too long -> change config.auth.api_key at m.yaml:5",
                          "  Integration/c: name is taken -> change name at m.yaml:2"]


def test_a_create_whose_answer_was_lost_is_found_by_name_and_not_sent_twice() -> None:
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(f"{request.method} {request.url.path}")
        if request.method == "POST":
            return problem(503)  # made, but the answer was lost
        return httpx.Response(200, json={"integrations": [{"id": "I9", "name": "n", "type": "LLM"}],
                                         "pagination": {"has_more": False}})

    plan = Plan(operations=(op("n", "POST", "/v2/integrations", {"type": "LLM", "name": "n"}, action="create"),))
    report = run_plan(plan, client(handler, max_retries=2))
    assert report.ok and report.responses["n"]["id"] == "I9"
    assert sent == ["POST /v2/integrations", "GET /v2/integrations"]


def test_a_bug_in_a_call_reaches_the_caller_as_it_was_raised() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="^boom$"):
        run_plan(Plan(operations=(op("a"),)), client(handler), parallelism=2)


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_parallelism_bounds_the_calls_in_flight(parallelism: int) -> None:
    state = {"in_flight": 0, "most": 0}

    async def handler(request: httpx.Request) -> httpx.Response:
        state["in_flight"] += 1
        state["most"] = max(state["most"], state["in_flight"])
        await asyncio.sleep(0.005)  # the others are sent meanwhile, as far as the bound lets them
        state["in_flight"] -= 1
        return httpx.Response(200, json={})

    # twelve calls: enough for the client's in-flight limit to grow from where it starts past the bound
    report = run_plan(Plan(operations=tuple(op(n) for n in "abcdefghijkl")), client(handler, parallelism=3),
                      parallelism=parallelism)
    assert report.ok
    assert state["most"] == parallelism


def test_a_refused_call_is_reported_with_the_path_it_was_sent_to() -> None:
    rec = Recorder({"/v2/a": httpx.Response(201, json={"id": "I7"}), "/v2/b/I7": problem(422, "bad")})
    plan = Plan(operations=(op("a", "POST", "/v2/a", {}), op("b", "PATCH", "/v2/b/${a:id}", {}, ("a",))))
    report = run_plan(plan, client(rec))
    assert report.lines(list_applied=False)[2] == "  Integration/b PATCH /v2/b/I7: 422 Boom: bad"


def test_an_adopted_create_and_a_bare_refusal_are_reported_in_their_own_words() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(409, json={"title": "Conflict", "status": 409},
                                  headers={"content-type": "application/problem+json"})
        if request.method == "PUT":
            return httpx.Response(422, json={"title": "Unprocessable", "status": 422},
                                  headers={"content-type": "application/problem+json"})
        return httpx.Response(200, json={"integrations": [{"id": "I9", "name": "n", "type": "LLM"}],
                                         "pagination": {"has_more": False}})

    plan = Plan(operations=(op("n", "POST", "/v2/integrations", {"type": "LLM", "name": "n"}, action="create"),
                            op("u", "PUT", "/v2/u", {})))
    report = run_plan(plan, client(handler), parallelism=1)
    assert [(o.status, o.detail) for o in report.outcomes] == [
        (APPLIED, "already existed (409): adopted the existing resource"), (FAILED, "422 Unprocessable")]
    assert report.interrupted is False


def test_a_call_lost_on_the_wire_is_reported_with_the_path_it_was_sent_to() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/a":
            return httpx.Response(201, json={"id": "I7"})
        raise httpx.ReadError("connection reset")

    plan = Plan(operations=(op("a", "POST", "/v2/a", {}), op("b", "PATCH", "/v2/b/${a:id}", {}, ("a",))))
    report = run_plan(plan, client(handler))
    assert report.lines(list_applied=False)[2] == "  Integration/b PATCH /v2/b/I7: PATCH /v2/b/I7: ReadError: connection reset"
