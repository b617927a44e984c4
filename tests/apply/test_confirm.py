"""The convergence check re-reads only what apply touched, choosing the cheaper of per-object GETs
and list pages."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest

from reconciler.apply.confirm import reread_touched
from reconciler.client.http import ApiClient
from reconciler.errors import ProblemError
from reconciler.model import DatasetObject, LiveDataset, LiveIntegration, LiveState
from reconciler.plan.model import Operation, Plan


def live_with(n: int) -> LiveState:
    return LiveState(integrations={("LLM", f"i{k}"): LiveIntegration.read({"id": f"I{k}", "type": "LLM",
                                                                           "name": f"i{k}", "v": 0})
                                   for k in range(n)})


def update_plan(names: list[str]) -> Plan:
    ops = tuple(Operation(id=f"Integration/LLM/{n}#update", action="update", kind="Integration", name=n,
                          method="PATCH", path=f"/v2/integrations/I{n[1:]}", address=f"Integration/{n}")
                for n in names)
    return Plan(operations=ops, pins={f"Integration/{n}": ["Integration", "LLM", n] for n in names})


def recording_client(n: int) -> tuple[ApiClient, Counter[str]]:
    seen: Counter[str] = Counter()

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        seen["list" if path == "/v2/integrations" else "get"] += 1
        if path == "/v2/integrations":
            items: list[dict[str, Any]] = [{"id": f"I{k}", "type": "LLM", "name": f"i{k}", "v": 1} for k in range(n)]
            return httpx.Response(200, json={"integrations": items[:100], "pagination": {"has_more": False}})
        k = path.rsplit("I", 1)[1]
        return httpx.Response(200, json={"id": f"I{k}", "type": "LLM", "name": f"i{k}", "v": 1})

    return ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler))), seen


def test_a_few_touched_integrations_are_read_one_by_one() -> None:
    client, seen = recording_client(50)
    fresh = client.run(reread_touched(update_plan(["i3"]), live_with(50), {}, client))
    assert seen == {"get": 1}
    assert fresh.integrations[("LLM", "i3")].raw()["v"] == 1 and fresh.integrations[("LLM", "i4")].raw()["v"] == 0


def test_many_touched_integrations_are_re_listed() -> None:
    client, seen = recording_client(50)
    fresh = client.run(reread_touched(update_plan([f"i{k}" for k in range(10)]), live_with(50), {}, client))
    assert seen == {"list": 1}
    assert all(obj.raw()["v"] == 1 for obj in fresh.integrations.values())


def test_a_kind_without_a_re_read_of_its_own_is_read_again_by_id_as_its_live_type() -> None:
    """Every kind has its own re-read today; a new one is read by ``GET collection/{id}``, the id its
    create answered or the live object's (the integration's collection stands in here)."""
    from reconciler.apply.confirm import _reread_object, _Touched

    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        object_id = request.url.path.rsplit("/", 1)[1]
        return httpx.Response(200, json={"id": object_id, "type": "LLM", "name": "i1", "description": "read again"})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    fresh = live_with(2)
    key = ["Integration", "LLM", "i1"]
    client.run(_reread_object(_Touched(fresh, key, [], None, client, {}, fresh.integrations[("LLM", "i1")])))
    client.run(_reread_object(_Touched(fresh, key, [], {"id": "I9"}, client, {}, None)))
    assert asked == ["/v2/integrations/I1", "/v2/integrations/I9"]
    assert fresh.integrations[("LLM", "i1")] == LiveIntegration.read(
        {"id": "I9", "type": "LLM", "name": "i1", "description": "read again"})
    assert fresh.integrations[("LLM", "i0")].raw()["v"] == 0


def delete_plan(name: str, kind: str = "Integration", path: str | None = None) -> Plan:
    return Plan(operations=(Operation(id=f"{kind}/{name}#prune", action="delete", kind=kind, name=name, method="DELETE",
                                      path=path or f"/v2/integrations/I{name[1:]}", address=f"{kind}/{name}"),))


def answering(status: int, asked: list[str]) -> ApiClient:
    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}")
        if status == 200:
            return httpx.Response(200, json={"id": "I1", "type": "LLM", "name": "i1", "v": 0})
        return httpx.Response(status, json={"title": "no", "status": status, "detail": "no"},
                              headers={"content-type": "application/problem+json"})

    return ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))


def test_a_pruned_resource_leaves_the_state_once_its_get_answers_404() -> None:
    asked: list[str] = []
    client = answering(404, asked)
    fresh = client.run(reread_touched(delete_plan("i1"), live_with(3), {}, client))
    assert asked == ["GET /v2/integrations/I1"]
    assert sorted(fresh.integrations) == [("LLM", "i0"), ("LLM", "i2")]


def test_a_pruned_resource_the_api_still_answers_for_stays_in_the_state() -> None:
    client = answering(200, [])
    fresh = client.run(reread_touched(delete_plan("i1"), live_with(3), {}, client))
    assert sorted(fresh.integrations) == [("LLM", "i0"), ("LLM", "i1"), ("LLM", "i2")]


def test_a_refused_check_of_a_pruned_resource_is_an_error_not_a_deletion() -> None:
    client = answering(403, [])
    with pytest.raises(ProblemError) as refused:
        client.run(reread_touched(delete_plan("i1"), live_with(3), {}, client))
    assert refused.value.status == 403


def test_a_pruned_restriction_is_not_read_one_by_one_the_restrictions_are_listed_again() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}?{request.url.query.decode()}")
        listed = [{"id": "R2", "resource_type": "PROMPT", "resource_id": "P1"}]
        return httpx.Response(200, json={"resource_restrictions": listed, "pagination": {"has_more": False}})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    plan = delete_plan("r1", kind="ResourceRestriction", path="/v2/resource-restrictions/R1")
    fresh = client.run(reread_touched(plan, live_with(1), {}, client))
    assert asked == ["GET /v2/resource-restrictions?limit=100"]
    assert list(fresh.restrictions) == [("PROMPT", "P1")] and fresh.restrictions[("PROMPT", "P1")].raw()["id"] == "R2"
    assert list(fresh.integrations) == [("LLM", "i0")]


@pytest.mark.parametrize(("old", "new"), [("AGENT", "LLM"), ("LLM", "AGENT")])
def test_an_integration_replaced_by_one_of_the_other_type_is_read_by_its_new_id_and_the_old_one_leaves(
        old: str, new: str) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}")
        return httpx.Response(200, json={"id": "N1", "type": new, "name": "x", "v": 1})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    live = LiveState(integrations={(old, "x"): LiveIntegration.read({"id": "O1", "type": old, "name": "x"}),
                                   (old, "y"): LiveIntegration.read({"id": "O2", "type": old, "name": "y"})})
    ops = (Operation(id="Integration/x#delete", action="replace", kind="Integration", name="x", method="DELETE",
                     path="/v2/integrations/O1", address="Integration/x"),
           Operation(id="Integration/x#create", action="replace", kind="Integration", name="x", method="POST",
                     path="/v2/integrations", address="Integration/x"))
    plan = Plan(operations=ops, pins={"Integration/x": ["Integration", new, "x"]})
    fresh = client.run(reread_touched(plan, live, {"Integration/x#create": {"id": "N1"}}, client))
    assert asked == ["GET /v2/integrations/N1"]
    assert sorted(fresh.integrations) == sorted([(old, "y"), (new, "x")])
    assert fresh.integrations[(new, "x")].id == "N1" and (old, "x") in live.integrations


def test_touched_integrations_are_re_listed_only_when_fewer_pages_than_gets() -> None:
    client, seen = recording_client(150)
    client.run(reread_touched(update_plan(["i1", "i2"]), live_with(150), {}, client))
    assert seen == {"get": 2}  # two pages of 100 would cost as much
    client, seen = recording_client(150)
    client.run(reread_touched(update_plan(["i1", "i2", "i3"]), live_with(150), {}, client))
    assert seen == {"list": 1}
    client, seen = recording_client(10)
    client.run(reread_touched(update_plan(["i1", "i2"]), live_with(10), {}, client))
    assert seen == {"list": 1}  # one page for two GETs
    client, seen = recording_client(0)
    client.run(reread_touched(update_plan(["i1"]), LiveState(), {}, client))
    assert not seen  # one page is no cheaper than one GET, and an object neither live nor created has no id to read


def test_a_dataset_is_read_again_as_its_calls_touched_it() -> None:
    """A rename reads the dataset itself, a write of examples its examples, a deletion by retention its
    experiments; nothing else of it is read."""
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}" + (f"?{request.url.query.decode()}"
                                                               if request.url.path == "/v2/experiments" else ""))
        if request.url.path == "/v2/datasets/D1":
            return httpx.Response(200, json={"id": "D1", "name": "golden", "space_id": "S1", "description": "new",
                                             "versions": []})
        if request.url.path == "/v2/datasets/D1/examples":
            return httpx.Response(200, json={"examples": [{"id": "e1", "q": "a"}], "pagination": {"has_more": False}})
        return httpx.Response(200, json={"experiments": [], "pagination": {"has_more": False}})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    live = LiveState(datasets={("S1", "golden"): LiveDataset(dataset=DatasetObject.read(
        {"id": "D1", "name": "golden", "space_id": "S1", "description": "old"}))})
    address, pins = "Dataset/research/golden", {"Dataset/research/golden": ["Dataset", "S1", "golden"]}

    def reread(*ops: Operation) -> LiveDataset:
        asked.clear()
        fresh = client.run(reread_touched(Plan(operations=ops, pins=pins), live, {}, client))
        found: LiveDataset = fresh.datasets[("S1", "golden")]
        return found

    renamed = reread(Operation(id=f"{address}#rename", action="update", kind="Dataset", name="golden", method="PATCH",
                               path="/v2/datasets/D1", address=address, note="rename"))
    assert asked == ["GET /v2/datasets/D1", "GET /v2/datasets/D1/examples"]
    assert renamed.dataset.raw()["description"] == "new" and "versions" not in renamed.dataset.raw()
    assert renamed.examples == [{"id": "e1", "q": "a"}] and renamed.experiments is None
    pruned = reread(Operation(id=f"{address}#retention-E1", action="delete", kind="Experiment", name="exp",
                              method="DELETE", path="/v2/experiments/E1", address=address))
    assert asked == ["GET /v2/experiments?dataset_id=D1&limit=100"]
    assert pruned.experiments == [] and pruned.examples is None and pruned.dataset.raw()["description"] == "old"


def test_integrations_pruned_among_many_are_confirmed_by_the_lists_not_one_by_one() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}?{request.url.query.decode()}")
        kind = request.url.params["type"]
        items = [{"id": "I0", "name": "i0", "v": 1}] if kind == "LLM" else []
        return httpx.Response(200, json={"integrations": items, "pagination": {"has_more": False}})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    plan = Plan(operations=delete_plan("i1").operations + delete_plan("i2").operations)
    fresh = client.run(reread_touched(plan, live_with(3), {}, client))
    assert sorted(asked) == ["GET /v2/integrations?type=AGENT&limit=100", "GET /v2/integrations?type=LLM&limit=100"]
    assert list(fresh.integrations) == [("LLM", "i0")] and fresh.integrations[("LLM", "i0")].raw()["v"] == 1


def test_a_dataset_the_plan_created_is_read_by_the_id_its_create_answered() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}")
        return httpx.Response(200, json={"examples": [{"id": "e1", "q": "a"}], "pagination": {"has_more": False}})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    address = "Dataset/research/golden"
    create = Operation(id=f"{address}#create", action="create", kind="Dataset", name="golden", method="POST",
                       path="/v2/datasets", address=address)
    plan = Plan(operations=(create,), pins={address: ["Dataset", "S1", "golden"]})
    fresh = client.run(reread_touched(plan, LiveState(), {create.id: {"id": "D9"}}, client))
    assert asked == ["GET /v2/datasets/D9/examples"]
    created = fresh.datasets[("S1", "golden")]
    assert (created.id, created.dataset.name, created.dataset.space_id) == ("D9", "golden", "S1")
    assert created.examples == [{"id": "e1", "q": "a"}]
