"""The executor on a scripted transport: references, secrets, dependency skips, --fail-fast."""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

import httpx
import pytest

from reconciler.apply.executor import APPLIED, FAILED, SKIPPED, ApplyReport, execute
from reconciler.client.http import ApiClient
from reconciler.plan.model import SENSITIVE, Operation, Plan
from tests.apply.runs import no_sleep, run_plan


def client(handler: Any) -> ApiClient:
    http = httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler))
    return ApiClient(http, max_retries=0, sleep=no_sleep)


def op(id: str, method: str, path: str, body: Any = None, depends: tuple[str, ...] = (), **kw: Any) -> Operation:
    return Operation(id=id, action=kw.pop("action", "create"), kind=kw.pop("kind", "Integration"), name=id,
                     method=method, path=path, body=body, depends_on=depends, address=kw.pop("address", id), **kw)


def problem(status: int) -> httpx.Response:
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
        op("a", "POST", "/v2/prompts", {"name": "a", "api_key": SENSITIVE}, secrets={"/api_key": "env:CANARY_KEY"}),
        op("b", "PUT", "/v2/prompt-versions/${a:version.id}/labels", {"labels": ["x"], "of": "${a:id}"}, ("a",)),
    ))
    report = run_plan(plan, client(handler), parallelism=4)
    assert report.ok
    assert seen == [("POST", "/v2/prompts", {"name": "a", "api_key": "sekret-123"}),
                    ("PUT", "/v2/prompt-versions/V1/labels", {"labels": ["x"], "of": "P1"})]
    assert plan.operations[0].body["api_key"] == SENSITIVE  # the plan itself never holds the value


def test_a_failed_call_skips_its_dependents_and_independent_work_goes_on() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return problem(422) if request.url.path == "/v2/a" else httpx.Response(200, json={"id": "x"})

    plan = Plan(operations=(op("a", "POST", "/v2/a", {}), op("b", "PUT", "/v2/b", {}, ("a",)),
                            op("c", "PUT", "/v2/c", {}, ("b",)), op("d", "PATCH", "/v2/d", {})))
    report = run_plan(plan, client(handler), parallelism=2)
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
        return problem(500) if request.url.path == "/v2/a" else httpx.Response(200, json={})

    plan = Plan(operations=tuple(op(n, "PATCH", f"/v2/{n}", {}, address="same") for n in "abcd"))
    report = run_plan(plan, client(handler), parallelism=1, fail_fast=True)
    assert calls == ["/v2/a"]
    assert [o.status for o in report.outcomes] == [FAILED, SKIPPED, SKIPPED, SKIPPED]


def test_deletes_run_after_creates_and_updates() -> None:
    order: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        order.append(f"{request.method} {request.url.path}")
        return httpx.Response(204) if request.method == "DELETE" else httpx.Response(200, json={"id": "1"})

    plan = Plan(operations=(op("del", "DELETE", "/v2/integrations/9", action="delete"),
                            op("new", "POST", "/v2/integrations", {"name": "n"})))
    assert run_plan(plan, client(handler), parallelism=4).ok
    assert order == ["POST /v2/integrations", "DELETE /v2/integrations/9"]


def test_a_create_that_meets_409_adopts_the_existing_resource() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return problem(409)
        return httpx.Response(200, json={"integrations": [{"id": "I9", "name": "n", "type": "LLM"}],
                                         "pagination": {"has_more": False}})

    plan = Plan(operations=(op("n", "POST", "/v2/integrations", {"type": "LLM", "name": "n"}),))
    report = run_plan(plan, client(handler))
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
            return problem(503)  # committed, but the answer was lost
        if request.method == "GET":
            versions = [{"id": "V2", "name": "v2", "created_at": datetime.now(UTC).isoformat()}] \
                if made_version["done"] else []
            return httpx.Response(200, json={"id": "D1", "versions": versions + [{"id": "V1", "name": "v1",
                                                                                  "created_at": "2020-01-01T00:00:00Z"}]})
        return httpx.Response(200, json={"completed": True})

    plan = Plan(operations=(
        op("v", "PATCH", "/v2/datasets/D1/examples", {"examples": [], "new_version": "v2"}, address="d"),
        op("x", "DELETE", "/v2/datasets/D1/examples", {"dataset_version_id": "${v:dataset_version_id}",
                                                       "example_ids": ["E1"]}, ("v",), address="d",
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
    plan = Plan(operations=(op("a", "POST", "/v2/integrations", {"name": "a", "config": {"api_key": SENSITIVE}},
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
    plan = Plan(operations=(op("a", "POST", "/v2/integrations", {"api_key": SENSITIVE},
                               secrets={"/api_key": "env:TINY"}),))
    (outcome,) = run_plan(plan, api).outcomes
    assert outcome.detail == "422 Unprocessable Entity: names must be set"  # every "s" left as it is


def test_ctrl_c_finishes_the_calls_in_flight_reports_them_and_starts_nothing_more() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v2/slow":
            signal.raise_signal(signal.SIGINT)  # Ctrl-C lands while this call is in flight
            await asyncio.sleep(0.01)
        return httpx.Response(200, json={"id": "x"})

    api = client(handler)
    plan = Plan(operations=(op("slow", "PUT", "/v2/slow", {}), op("next", "PUT", "/v2/next", {}, ("slow",)),
                            op("later", "DELETE", "/v2/later", action="delete")))
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
        return await execute(plan, api, parallelism=3)

    api = client(handler)
    plan = Plan(operations=tuple(op(f"c{i}", "PUT", f"/v2/c{i}", {}) for i in range(6)))
    report = api.run(apply())
    assert report.interrupted and calls == ["/v2/c0", "/v2/c1", "/v2/c2"]
    statuses = [(o.op.id, o.status) for o in report.outcomes]
    assert statuses == [("c0", APPLIED), ("c1", APPLIED), ("c2", APPLIED),
                        ("c3", SKIPPED), ("c4", SKIPPED), ("c5", SKIPPED)]
