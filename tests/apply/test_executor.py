"""The executor on a scripted transport: the order calls go in, references and secrets, what each
method sends, dependency skips and --fail-fast, Ctrl-C, what the end report and its advice say, and
the callbacks a progress display relies on."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from reconciler.apply.executor import APPLIED, FAILED, SKIPPED, ApplyReport, Outcome, describe, execute
from reconciler.client.http import ApiClient
from reconciler.plan.model import APPLY_TIME, SENSITIVE, Change, Operation, Plan
from tests.apply.runs import no_sleep, run_plan


def client(handler: Any, **kw: Any) -> ApiClient:
    http = httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler))
    return ApiClient(http, max_retries=kw.pop("max_retries", 0), sleep=no_sleep, **kw)


def op(id: str, method: str = "PATCH", path: str | None = None, body: Any = None, depends: tuple[str, ...] = (),
       **kw: Any) -> Operation:
    return Operation(id=kw.pop("op_id", id), action=kw.pop("action", "update"), kind=kw.pop("kind", "Integration"), name=id,
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
    plan = Plan(operations=(op("a", "POST", "/v2/a", {}, op_id="a#create"), op("b", "PUT", "/v2/b/${a#create:id}", {}, ("a#create",))))
    report = run_plan(plan, client(rec))
    assert report.outcomes[1].status == FAILED
    assert report.outcomes[1].detail == "reference ${a#create:id}: the response of a#create has no id"
    assert report.outcomes[1].http_status is None


def test_the_report_shows_the_path_as_sent_with_real_ids() -> None:
    rec = Recorder({"/v2/a": httpx.Response(201, json={"id": "I7"})})
    plan = Plan(operations=(op("a", "POST", "/v2/a", {}, op_id="a#create"), op("b", "PATCH", "/v2/b/${a#create:id}", {}, ("a#create",),
                                                            note="rename")))
    report = run_plan(plan, client(rec))
    assert report.outcomes[1].path == "/v2/b/I7"
    assert report.lines() == ["Applied: 2", "  Integration/a POST /v2/a", "  Integration/b PATCH /v2/b/I7 (rename)",
                              "Failed: 0", "Skipped: 0"]


def test_a_call_never_sent_is_described_with_its_planned_path() -> None:
    planned = op("b", "PATCH", "/v2/b/${a#create:id}", note="n")
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
    plan = Plan(operations=(op("a", "POST", "/v2/a", {}, op_id="a#create"), op("b", "PATCH", "/v2/b/${a#create:id}", {}, ("a#create",))))
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

    plan = Plan(operations=(op("a", "POST", "/v2/a", {}, op_id="a#create"), op("b", "PATCH", "/v2/b/${a#create:id}", {}, ("a#create",))))
    report = run_plan(plan, client(handler))
    assert report.lines(list_applied=False)[2] == "  Integration/b PATCH /v2/b/I7: PATCH /v2/b/I7: ReadError: connection reset"


# --------------------------------------------------------------------------------------------------
# The executor at edges mutation testing found unpinned (reconciler/apply/executor.py): what the
# advice after a refused call names, and a refusal's detail explained from the responses so far.


MODEL = Change("template_config.llm_config.model_name", "m1", "m2", "judge.yaml:12")
DESCRIPTION = Change("description", "a", "b", "judge.yaml:4")
PARAMETER = Change("template_config.llm_config.invocation_parameters.x", 1, 2, "judge.yaml:13")


def evaluator_update(*changes: Change) -> Operation:
    return Operation(id="Evaluator/research/judge#update", action="update", kind="Evaluator", name="judge",
                     method="PATCH", path="/v2/evaluators/E1", changes=changes, address="Evaluator/research/judge")


def test_a_quoted_value_in_a_refusal_does_not_name_a_field_and_is_not_read_as_other_text() -> None:
    # 'description' is the value the API quotes, not the field; nothing but the quote holds an 'x'.
    detail = "422 Unprocessable: unknown model_name 'description'"
    report = ApplyReport([Outcome(evaluator_update(DESCRIPTION, MODEL, PARAMETER), "failed", detail, http_status=422)])
    assert report.failure_summary().splitlines()[1] == (
        f"  Evaluator/research/judge: {detail} -> change template_config.llm_config.model_name at judge.yaml:12")


def test_a_refusal_naming_an_id_made_earlier_in_the_apply_is_explained_with_its_name() -> None:
    seen: list[dict[str, Any]] = []

    def explain(detail: str, responses: Mapping[str, Any]) -> str:
        seen.append(dict(responses))
        return detail.replace(responses["made"]["id"], "Integration/made")

    rec = Recorder({"/v2/things/uses": problem(422, "ID1 is not an LLM integration")})
    plan = Plan(operations=(op("made", "POST", "/v2/things", {"name": "made"}),
                            op("uses", "PATCH", "/v2/things/uses", {"x": 1}, depends=("made",))))
    report = run_plan(plan, client(rec), parallelism=2, explain=explain)
    assert [(o.status, o.detail) for o in report.outcomes] == [
        ("applied", None), (FAILED, "422 Boom: Integration/made is not an LLM integration")]
    assert seen == [{"made": {"id": "ID1"}}]


def test_fail_fast_starts_nothing_after_a_failure_even_what_was_ready_beside_it() -> None:
    """Two ready calls, room for one: ``b`` fails first (plan order), and ``a``, ready all along, is
    never sent; the report says why."""
    rec = Recorder({"/v2/things/b": problem(422, "bad")})
    plan = Plan(operations=(op("b", "PATCH", "/v2/things/b", {"x": 2}), op("a", "PATCH", "/v2/things/a", {"x": 1})))
    report = run_plan(plan, client(rec), parallelism=1, fail_fast=True)
    assert [(o.op.id, o.status, o.detail) for o in report.outcomes] == [
        ("b", FAILED, "422 Boom: bad"), ("a", "skipped", "not started: --fail-fast after an earlier failure")]
    assert rec.sent == ["PATCH /v2/things/b"]


# --------------------------------------------------------------------------------------------------
# The executor on a scripted transport: references, secrets, dependency skips, --fail-fast.


def strict_client(handler: Any) -> ApiClient:
    http = httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler))
    return ApiClient(http, max_retries=0, sleep=no_sleep)


def create_op(id: str, method: str, path: str, body: Any = None, depends: tuple[str, ...] = (), **kw: Any) -> Operation:
    return Operation(id=kw.pop("op_id", id), action=kw.pop("action", "create"), kind=kw.pop("kind", "Integration"), name=id,
                     method=method, path=path, body=body, depends_on=depends, address=kw.pop("address", id), **kw)


def boom(status: int) -> httpx.Response:
    return httpx.Response(status, json={"title": "Boom", "status": status, "detail": "no"},
                          headers={"content-type": "application/problem+json"})


def test_references_resolve_from_earlier_responses_and_secrets_are_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANARY_KEY", "sekret-123")
    seen: list[tuple[str, str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, request.url.path, body))
        if request.url.path == "/v2/prompts":
            return httpx.Response(201, json={"id": "P1", "version": {"id": "V1"}})
        return httpx.Response(200, json={})

    plan = Plan(operations=(
        create_op("a", "POST", "/v2/prompts", {"name": "a", "api_key": SENSITIVE}, secrets={"/api_key": "env:CANARY_KEY"},
                  op_id="a#create"),
        create_op("b", "PUT", "/v2/prompt-versions/${a#create:version.id}/labels", {"labels": ["x"], "of": "${a#create:id}"},
                  ("a#create",)),
    ))
    report = run_plan(plan, strict_client(handler), parallelism=4)
    assert report.ok
    assert seen == [("POST", "/v2/prompts", {"name": "a", "api_key": "sekret-123"}),
                    ("PUT", "/v2/prompt-versions/V1/labels", {"labels": ["x"], "of": "P1"})]
    assert plan.operations[0].body["api_key"] == SENSITIVE  # the plan itself never holds the value


def test_a_failed_call_skips_its_dependents_and_independent_work_goes_on() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return boom(422) if request.url.path == "/v2/a" else httpx.Response(200, json={"id": "x"})

    plan = Plan(operations=(create_op("a", "POST", "/v2/a", {}), create_op("b", "PUT", "/v2/b", {}, ("a",)),
                            create_op("c", "PUT", "/v2/c", {}, ("b",)), create_op("d", "PATCH", "/v2/d", {})))
    report = run_plan(plan, strict_client(handler), parallelism=2)
    assert [(o.op.id, o.status) for o in report.outcomes] == [("a", FAILED), ("b", SKIPPED), ("c", SKIPPED),
                                                              ("d", APPLIED)]
    assert "422 Boom: no" in (report.outcomes[0].detail or "")
    assert "depends on a" in (report.outcomes[1].detail or "")
    text = "\n".join(report.lines())
    assert "Applied: 1" in text and "Failed: 1" in text and "Skipped: 2" in text


def test_fail_fast_starts_nothing_after_the_first_failure() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return boom(500) if request.url.path == "/v2/a" else httpx.Response(200, json={})

    plan = Plan(operations=tuple(create_op(n, "PATCH", f"/v2/{n}", {}, address="same") for n in "abcd"))
    report = run_plan(plan, strict_client(handler), parallelism=1, fail_fast=True)
    assert calls == ["/v2/a"]
    assert [o.status for o in report.outcomes] == [FAILED, SKIPPED, SKIPPED, SKIPPED]


def test_deletes_run_after_creates_and_updates() -> None:
    order: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        order.append(f"{request.method} {request.url.path}")
        return httpx.Response(204) if request.method == "DELETE" else httpx.Response(200, json={"id": "1"})

    plan = Plan(operations=(create_op("del", "DELETE", "/v2/integrations/9", action="delete"),
                            create_op("new", "POST", "/v2/integrations", {"name": "n"})))
    assert run_plan(plan, strict_client(handler), parallelism=4).ok
    assert order == ["POST /v2/integrations", "DELETE /v2/integrations/9"]


def test_a_create_that_meets_409_adopts_the_existing_resource() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return boom(409)
        return httpx.Response(200, json={"integrations": [{"id": "I9", "name": "n", "type": "LLM"}],
                                         "pagination": {"has_more": False}})

    plan = Plan(operations=(create_op("n", "POST", "/v2/integrations", {"type": "LLM", "name": "n"}),))
    report = run_plan(plan, strict_client(handler))
    assert report.ok and report.responses["n"]["id"] == "I9"
    assert "adopted" in (report.outcomes[0].detail or "")


def test_a_versioned_examples_patch_is_not_sent_twice_after_an_ambiguous_failure() -> None:
    from datetime import UTC, datetime

    sent: list[str] = []
    made_version = {"done": False}

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(f"{request.method} {request.url.path}")
        if request.method == "PATCH":
            made_version["done"] = True
            return boom(503)  # committed, but the answer was lost
        if request.method == "GET":
            versions = [{"id": "V2", "name": "v2", "created_at": datetime.now(UTC).isoformat()}] \
                if made_version["done"] else []
            return httpx.Response(200, json={"id": "D1", "versions": versions + [{"id": "V1", "name": "v1",
                                                                                  "created_at": "2020-01-01T00:00:00Z"}]})
        return httpx.Response(200, json={"completed": True})

    plan = Plan(operations=(
        create_op("v", "PATCH", "/v2/datasets/D1/examples", {"examples": [], "new_version": "v2"}, address="d",
                  op_id="d#examples"),
        create_op("x", "DELETE", "/v2/datasets/D1/examples", {"dataset_version_id": "${d#examples:dataset_version_id}",
                                                       "example_ids": ["E1"]}, ("d#examples",), address="d",
           action="update"),
    ))
    http = httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler))
    report = run_plan(plan, ApiClient(http, max_retries=2, sleep=no_sleep))
    assert report.ok, report.lines()
    assert sent == ["PATCH /v2/datasets/D1/examples", "GET /v2/datasets/D1", "DELETE /v2/datasets/D1/examples"]


def test_a_secret_the_service_echoes_in_a_problem_is_redacted_from_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANARY_KEY", "canary-echoed-77")
    events: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:  # a service that quotes the body it refused
        return httpx.Response(422, json={"title": "Unprocessable Entity", "status": 422,
                                         "detail": f"invalid body {request.content.decode()}"},
                              headers={"content-type": "application/problem+json"})

    http = httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler))
    api = ApiClient(http, max_retries=0, sleep=no_sleep, on_event=events.append)
    plan = Plan(operations=(create_op("a", "POST", "/v2/integrations", {"name": "a", "config": {"api_key": SENSITIVE}},
                               secrets={"/config/api_key": "env:CANARY_KEY"}),))
    report = run_plan(plan, api)
    (outcome,) = report.outcomes
    assert outcome.status == FAILED and "invalid body" in (outcome.detail or "")
    shown = "\n".join(report.lines()) + "\n".join(events)
    assert "canary-echoed-77" not in shown and "(sensitive)" in shown


def test_a_secret_too_short_to_search_for_does_not_garble_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY", "s")
    events: list[str] = []
    answer = httpx.Response(422, json={"title": "Unprocessable Entity", "status": 422, "detail": "names must be set"},
                            headers={"content-type": "application/problem+json"})
    http = httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(lambda r: answer))
    api = ApiClient(http, max_retries=0, sleep=no_sleep, on_event=events.append)
    plan = Plan(operations=(create_op("a", "POST", "/v2/integrations", {"api_key": SENSITIVE},
                               secrets={"/api_key": "env:TINY"}),))
    (outcome,) = run_plan(plan, api).outcomes
    assert outcome.detail == "422 Unprocessable Entity: names must be set"  # every "s" left as it is


def test_ctrl_c_finishes_the_calls_in_flight_reports_them_and_starts_nothing_more() -> None:
    # Python's own Ctrl-C handler, as in a terminal: a suite started in the background by a shell
    # (`make test &`) runs with SIGINT ignored, and the loop then leaves Ctrl-C alone
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_finishes_the_calls_in_flight()
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_finishes_the_calls_in_flight() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/slow":
            signal.raise_signal(signal.SIGINT)  # Ctrl-C lands while this call is in flight
            await asyncio.sleep(0.01)
        return httpx.Response(200, json={"id": "x"})

    api = strict_client(handler)
    plan = Plan(operations=(create_op("slow", "PUT", "/v2/slow", {}), create_op("next", "PUT", "/v2/next", {}, ("slow",)),
                            create_op("later", "DELETE", "/v2/later", action="delete")))
    report = run_plan(plan, api, parallelism=2)
    assert report.interrupted
    statuses = {o.op.id: (o.status, o.detail) for o in report.outcomes}
    assert statuses["slow"][0] == APPLIED  # in flight when interrupted: finished and reported
    assert statuses["next"] == (SKIPPED, "not started: interrupted (Ctrl-C or SIGTERM)")
    assert statuses["later"] == (SKIPPED, "not started: interrupted (Ctrl-C or SIGTERM)")  # a later phase never began
    assert api.run(api.get("/v2/after")) == {"id": "x"}  # the loop goes on serving after the interrupt


def test_ctrl_c_while_several_calls_are_in_flight_waits_for_each_and_reports_each() -> None:
    calls: list[str] = []
    applying: list[asyncio.Task[Any]] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 3:
            applying[0].cancel()  # what the loop does on Ctrl-C
        await asyncio.sleep(0.01 * len(calls))  # they end one after another, after the interrupt
        return httpx.Response(200, json={"id": "x"})

    async def apply() -> ApplyReport:
        applying.append(asyncio.current_task())  # type: ignore[arg-type]
        report = await execute(plan, api, parallelism=3)
        assert applying[0].cancelling() == 0  # the interrupt was handled: the task goes on, not marked cancelled
        return report

    api = strict_client(handler)
    plan = Plan(operations=tuple(create_op(f"c{i}", "PUT", f"/v2/c{i}", {}) for i in range(6)))
    report = api.run(apply())
    assert report.interrupted and calls == ["/v2/c0", "/v2/c1", "/v2/c2"]
    statuses = [(o.op.id, o.status) for o in report.outcomes]
    assert statuses == [("c0", APPLIED), ("c1", APPLIED), ("c2", APPLIED),
                        ("c3", SKIPPED), ("c4", SKIPPED), ("c5", SKIPPED)]


def test_a_slot_freed_by_one_call_starts_the_next_while_another_is_still_in_flight() -> None:
    third_started = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/slow":
            await asyncio.wait_for(third_started.wait(), 5)  # ends only once c has started beside it
        if request.url.path == "/v2/c":
            third_started.set()
        return httpx.Response(200, json={"id": "x"})

    plan = Plan(operations=(create_op("slow", "PUT", "/v2/slow", {}), create_op("fast", "PUT", "/v2/fast", {}),
                            create_op("c", "PUT", "/v2/c", {})))
    report = run_plan(plan, strict_client(handler), parallelism=2)
    assert [(o.op.id, o.status) for o in report.outcomes] == [("slow", APPLIED), ("fast", APPLIED), ("c", APPLIED)]


def test_a_stop_asked_while_calls_are_in_flight_waits_for_them_reports_them_and_starts_nothing_more() -> None:
    started: list[str] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        started.append(request.url.path)
        await asyncio.sleep(0.01 * len(started))  # c1 still in flight when c0 has answered
        return httpx.Response(200, json={"id": "x"})

    plan = Plan(operations=tuple(create_op(f"c{i}", "PUT", f"/v2/c{i}", {}) for i in range(4)))
    report = run_plan(plan, strict_client(handler), parallelism=2, stop=lambda: len(started) >= 2)
    assert report.interrupted and started == ["/v2/c0", "/v2/c1"]
    assert [(o.op.id, o.status) for o in report.outcomes] == [("c0", APPLIED), ("c1", APPLIED),
                                                              ("c2", SKIPPED), ("c3", SKIPPED)]
