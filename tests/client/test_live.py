"""The live reader against the emulator: the right state on a known account (also under a rate
limit and injected faults), and exactly as many requests as list pages plus per-resource reads."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clienthelpers import gathered

from reconciler.client.http import ApiClient, build_http_client, open_client
from reconciler.client.live import minimum_requests, read_examples, read_live
from reconciler.client.settings import Endpoint
from reconciler.emulator.core import Emulator
from reconciler.model import (
    DatasetObject,
    DesiredResource,
    LiveDataset,
    LiveSpace,
    LiveState,
    ManifestSet,
    ReadScope,
)
from reconciler.plan.datasets import examples_digest
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan

ADMIN = "admin-key"
LLM_COUNT = 101  # two pages of integrations at limit 100
EXAMPLE_COUNT = 1100  # three pages of examples at limit 500

SCOPE = ReadScope(
    spaces=frozenset({"research", "no-such-space"}),
    prompts=frozenset({("research", "summarize"), ("research", "not-created-yet")}),
    datasets=frozenset({("research", "golden")}),
    evaluators=frozenset({("research", "faithfulness")}),
    retention=frozenset({("research", "golden")}),
    kinds=frozenset({"Integration", "Prompt", "Dataset", "Evaluator"}),
)

#: What reading SCOPE must cost on the known account: list pages plus per-resource reads.
EXPECTED_REQUESTS = {
    "GET /v2/integrations": 2 + 1,  # LLM (101: two pages), AGENT (one page)
    "GET /v2/spaces": 1,
    "GET /v2/organizations": 1,
    "GET /v2/resource-restrictions": 1,
    "GET /v2/prompts": 1,  # the research space's list
    "GET /v2/datasets": 1,
    "GET /v2/evaluators": 1,
    "GET /v2/prompts/{prompt_id}/versions": 1,  # only the declared prompt that exists
    "GET /v2/datasets/{dataset_id}/examples": 3,  # 1100 examples at 500 a page
    "GET /v2/experiments": 1,  # the retention dataset's experiments
    "GET /v2/evaluators/{evaluator_id}": 1,  # the latest evaluator version
}


def template_config(name: str, integration_id: str, template: str) -> dict[str, Any]:
    return {
        "name": name, "template": template, "include_explanations": True,
        "use_function_calling_if_available": True, "classification_choices": {"yes": 1, "no": 0},
        "direction": "maximize", "data_granularity": "span",
        "llm_config": {"ai_integration_id": integration_id, "model_name": "model-large",
                       "invocation_parameters": {"temperature": 0}, "provider_parameters": {}},
    }


def seed_known_account(client: ApiClient) -> dict[str, Any]:
    """The known account: 101 LLM integrations (names that contain each other), an AGENT, a third
    space whose name contains "research", prompts summarize (3 versions, labels on v2 and v3) and
    summarize-v2, dataset golden (1100 examples, 3 experiments) and golden-old, evaluator
    faithfulness (2 versions), and the summarize prompt restricted."""
    ids: dict[str, Any] = {}
    client.run(gathered(*(client.post("/v2/integrations", {
        "type": "LLM", "name": "vendor-a" if i == 0 else f"vendor-a-{i:03d}",
        "config": {"provider": "VENDOR_A", "api_key": "sk-seed"}}) for i in range(LLM_COUNT))))
    ids["vendor-a"] = client.run(client.find_by_name("/v2/integrations", "integrations", "vendor-a", {"type": "LLM"}))
    client.run(client.post("/v2/integrations", {
        "type": "AGENT", "name": "support-agent", "description": "replays",
        "config": {"endpoint": "https://agent.example.com/v1/run",
                   "input_schema": {"type": "object", "properties": {"t": {"type": "number"}}},
                   "request_presets": [{"name": "cold", "config": {"t": 0}}]}}))
    client.run(client.post("/v2/spaces", {"name": "research-archive"}))
    research = client.run(client.find_by_name("/v2/spaces", "spaces", "research"))
    assert research is not None
    sid = ids["space_id"] = research["id"]

    def version(text: str) -> dict[str, Any]:
        return {"commit_message": text, "provider": "VENDOR_A", "model": "model-large",
                "messages": [{"role": "system", "content": text}, {"role": "user", "content": "{ticket}"}]}

    prompt = client.run(client.post("/v2/prompts", {"space_id": sid, "name": "summarize", "version": version("v1")}))
    v2 = client.run(client.post(f"/v2/prompts/{prompt['id']}/versions", version("v2")))
    v3 = client.run(client.post(f"/v2/prompts/{prompt['id']}/versions", version("v3")))
    client.run(client.put(f"/v2/prompt-versions/{v2['id']}/labels", {"labels": ["production"]}))
    client.run(client.put(f"/v2/prompt-versions/{v3['id']}/labels", {"labels": ["staging"]}))
    client.run(client.post("/v2/prompts", {"space_id": sid, "name": "summarize-v2", "version": version("other")}))
    ids.update(prompt=prompt["id"], v2=v2["id"], v3=v3["id"])

    dataset = client.run(client.post("/v2/datasets", {"space_id": sid, "name": "golden",
                                           "examples": [{"ticket_id": i, "q": f"q{i}"} for i in range(EXAMPLE_COUNT)]}))
    client.run(client.post("/v2/datasets", {"space_id": sid, "name": "golden-old", "examples": [{"q": "x"}]}))
    first = client.run(client.get(f"/v2/datasets/{dataset['id']}/examples", {"limit": 1}))["examples"][0]
    for n in range(3):
        client.run(client.post("/v2/experiments", {"name": f"run-{n}", "dataset_id": dataset["id"],
                                        "experiment_runs": [{"example_id": first["id"], "output": "o"}]}))
    ids["dataset"] = dataset["id"]

    integration_id = ids["vendor-a"]["id"]
    evaluator = client.run(client.post("/v2/evaluators", {
        "space_id": sid, "name": "faithfulness", "type": "template",
        "version": {"commit_message": "first", "template_config": template_config("f", integration_id, "{{a}}")}}))
    latest = client.run(client.post(f"/v2/evaluators/{evaluator['id']}/versions", {
        "commit_message": "second", "template_config": template_config("f", integration_id, "{{b}}")}))
    ids.update(evaluator=evaluator["id"], evaluator_latest=latest["id"])
    client.run(client.post("/v2/resource-restrictions", {"resource_id": prompt["id"]}))
    return ids


@pytest.fixture(scope="module")
def account(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A SQLite file holding the known account (seeded once through the in-process emulator)."""
    db = tmp_path_factory.mktemp("account") / "account.db"
    with open_client(Endpoint(base_url=None, emulator_db=str(db)), ADMIN) as client:
        ids = seed_known_account(client)
    return db, ids


@pytest.fixture
def inprocess(account: tuple[Path, dict[str, Any]]) -> Iterator[ApiClient]:
    with open_client(Endpoint(base_url=None, emulator_db=str(account[0])), ADMIN, read_only=True) as client:
        yield client


def comparable(live: LiveState) -> LiveState:
    return dataclasses.replace(live, requests=0, retries=0)


def assert_known_state(live: LiveState, ids: dict[str, Any]) -> None:
    sid = ids["space_id"]
    assert len([k for k in live.integrations if k[0] == "LLM"]) == LLM_COUNT
    assert (live.integrations[("AGENT", "support-agent")].config or {})["request_presets"][0]["name"] == "cold"
    assert live.integrations[("LLM", "vendor-a")].id == ids["vendor-a"]["id"]
    assert sorted(s.name for s in live.spaces) == ["default", "research", "research-archive"]
    assert len(live.organizations) == 1

    assert set(live.prompts) == {(sid, "summarize"), (sid, "summarize-v2")}
    summarize = live.prompts[(sid, "summarize")]
    assert summarize.latest is not None and summarize.latest.id == ids["v3"]
    assert summarize.labels == {"production": ids["v2"], "staging": ids["v3"]}
    assert summarize.version_count == 3
    undeclared = live.prompts[(sid, "summarize-v2")]
    assert undeclared.latest is None and undeclared.version_count is None  # listed, not read further

    golden = live.datasets[(sid, "golden")]
    assert golden.examples is not None
    assert [e["ticket_id"] for e in golden.examples] == list(range(EXAMPLE_COUNT))
    assert golden.experiments is not None and sorted(str(e.name) for e in golden.experiments) == [
        "run-0", "run-1", "run-2"]
    assert live.datasets[(sid, "golden-old")].examples is None

    evaluator = live.evaluators[(sid, "faithfulness")]
    assert evaluator.latest is not None and evaluator.latest.id == ids["evaluator_latest"]
    assert evaluator.latest.template_config is not None and evaluator.latest.template_config.template == "{{b}}"
    assert set(live.restrictions) == {("PROMPT", ids["prompt"])}


def test_a_live_read_returns_the_known_account(inprocess: ApiClient,
                                                account: tuple[Path, dict[str, Any]]) -> None:
    live = inprocess.run(read_live(inprocess, SCOPE))
    assert_known_state(live, account[1])


def test_a_live_read_makes_exactly_the_list_pages_plus_per_resource_reads(
        inprocess: ApiClient, account: tuple[Path, dict[str, Any]]) -> None:
    inprocess.run(inprocess.http.post("/_emulator/reset-stats"))
    live = inprocess.run(read_live(inprocess, SCOPE))
    counted = inprocess.run(inprocess.http.get("/_emulator/stats")).json()["requests"]
    assert counted == EXPECTED_REQUESTS
    assert live.requests == sum(EXPECTED_REQUESTS.values()) == 15
    assert live.retries == 0
    assert minimum_requests(live, SCOPE) == live.requests


def test_only_the_kinds_the_manifests_use_are_listed(inprocess: ApiClient,
                                                     account: tuple[Path, dict[str, Any]]) -> None:
    scope = ReadScope(spaces=frozenset({"research"}), datasets=frozenset({("research", "golden-old")}),
                      kinds=frozenset({"Dataset"}))
    live = inprocess.run(read_live(inprocess, scope))
    assert live.prompts == {} and live.evaluators == {}
    assert live.requests == 3 + 1 + 1 + 1 + 1 + 1  # integrations, spaces, orgs, restrictions, datasets, examples
    assert live.requests == minimum_requests(live, scope)


def test_spaces_are_resolved_by_exact_name_or_by_id(inprocess: ApiClient,
                                                    account: tuple[Path, dict[str, Any]]) -> None:
    sid = account[1]["space_id"]
    by_id = inprocess.run(read_live(inprocess, dataclasses.replace(
        SCOPE, spaces=frozenset({sid}), prompts=frozenset({(sid, "summarize")}),
        datasets=frozenset({(sid, "golden")}), evaluators=frozenset({(sid, "faithfulness")}),
        retention=frozenset({(sid, "golden")}))))
    assert_known_state(by_id, account[1])
    none = inprocess.run(read_live(inprocess, ReadScope(spaces=frozenset({"Research", "researc"}))))
    assert none.prompts == {} and none.datasets == {}


def over_socket(url: str, **kwargs: Any) -> ApiClient:
    return ApiClient(build_http_client(url, ADMIN, parallelism=8), **kwargs)


@pytest.mark.socket
def test_a_live_read_under_a_rate_limit_still_returns_the_right_state(
        emulator_factory: Callable[..., tuple[str, Emulator]], account: tuple[Path, dict[str, Any]],
        inprocess: ApiClient) -> None:
    expected = comparable(inprocess.run(read_live(inprocess, SCOPE)))
    url, _ = emulator_factory(db=str(account[0]), rate_limit=20)
    events: list[str] = []
    with over_socket(url, on_event=events.append) as client:
        for _ in range(3):  # 54 requests against a bucket of 20
            assert comparable(client.run(read_live(client, SCOPE))) == expected
        stats = client.stats.snapshot()
    assert stats.throttled > 0
    assert any(e.startswith("429 on GET /v2/") for e in events)


@pytest.mark.socket
def test_a_live_read_under_injected_faults_still_returns_the_right_state(
        emulator_factory: Callable[..., tuple[str, Emulator]], account: tuple[Path, dict[str, Any]],
        inprocess: ApiClient) -> None:
    expected = comparable(inprocess.run(read_live(inprocess, SCOPE)))
    url, _ = emulator_factory(db=str(account[0]), faults="seed=3,error_rate=0.1,reset_rate=0.03")
    with over_socket(url, backoff_base=0.01, read_only=True) as client:
        reads = [client.run(read_live(client, SCOPE)) for _ in range(3)]
    for live in reads:
        assert comparable(live) == expected
        assert live.requests == sum(EXPECTED_REQUESTS.values())
    assert sum(live.retries for live in reads) > 0


def test_the_in_process_emulator_injects_faults_as_dropped_connections(
        tmp_path: Path, account: tuple[Path, dict[str, Any]]) -> None:
    """Faults in-process: a reset reaches the client as a transport failure and is retried."""
    from reconciler.client.inprocess import InProcessTransport
    from reconciler.emulator.app import create_app
    from reconciler.emulator.core import EmulatorSettings

    emu = Emulator(EmulatorSettings(db=str(account[0]), faults="seed=5,reset_rate=0.3,error_rate=0.2"))
    http = build_http_client("http://emulator.invalid", ADMIN,
                             transport=InProcessTransport(create_app(emu), on_close=emu.store.close))
    with ApiClient(http, backoff_base=0.001, max_retries=10) as client:
        live = client.run(read_live(client, SCOPE))
    assert_known_state(live, account[1])
    assert live.retries > 0


def golden_manifest(examples: list[dict[str, Any]], key: str | None = "ticket_id") -> ManifestSet:
    spec: dict[str, Any] = {"examples": examples, **({"key": key} if key else {})}
    return ManifestSet((DesiredResource("Dataset", "golden", spec, space="research"),))


def test_read_against_the_manifest_keeps_only_the_examples_that_differ(
        inprocess: ApiClient, account: tuple[Path, dict[str, Any]]) -> None:
    declared = [{"ticket_id": i, "q": f"q{i}"} for i in range(EXAMPLE_COUNT)]
    declared[5] = {"ticket_id": 5, "q": "changed"}
    del declared[7]  # live-only: kept whole (it will be deleted)
    declared.append({"ticket_id": 99999, "q": "new"})  # declared only: nothing live to keep
    full = inprocess.run(read_live(inprocess, SCOPE))
    streamed = inprocess.run(read_live(inprocess, SCOPE, golden_manifest(declared)))
    sid = account[1]["space_id"]
    whole, lean = full.datasets[(sid, "golden")], streamed.datasets[(sid, "golden")]
    assert [e["ticket_id"] for e in lean.examples or []] == [5, 7]
    assert lean.matched is not None and len(lean.matched) == EXAMPLE_COUNT - 2
    assert 0 in lean.matched and 5 not in lean.matched and 7 not in lean.matched
    assert whole.matched is None
    # the plan pins the same digest whichever way the examples were read, and makes the same plan
    assert lean.examples_digest == whole.examples_digest == examples_digest(whole.examples)
    assert minimum_requests(streamed, SCOPE) == minimum_requests(full, SCOPE)
    manifests = golden_manifest(declared)
    plans = [make_plan(manifests, live, PlanOptions(version_name="v")) for live in (full, streamed)]
    assert plans[0].to_json()["operations"] == plans[1].to_json()["operations"]
    assert plans[0].fingerprints == plans[1].fingerprints


def test_a_dataset_without_a_key_or_with_a_key_declared_twice_is_read_whole(
        inprocess: ApiClient, account: tuple[Path, dict[str, Any]]) -> None:
    sid = account[1]["space_id"]
    declared = [{"ticket_id": i, "q": f"q{i}"} for i in range(EXAMPLE_COUNT)]
    unkeyed = inprocess.run(read_live(inprocess, SCOPE, golden_manifest(declared, key=None))).datasets[(sid, "golden")]
    assert len(unkeyed.examples or []) == EXAMPLE_COUNT and unkeyed.matched is None
    twice = inprocess.run(read_live(inprocess, SCOPE, golden_manifest([*declared, declared[0]]))).datasets[(sid, "golden")]
    assert len(twice.examples or []) == EXAMPLE_COUNT and twice.matched == set()


def test_a_key_met_twice_live_reads_the_dataset_again_whole_and_plans_as_a_whole_read_does() -> None:
    """Two live examples share a key (made by hand): the streamed read cannot tell which one the
    declared example matches, so it reads the dataset again without matching; the plan is the one a
    whole read makes (one of the two is deleted)."""
    live_examples = [{"id": f"E{i}", "created_at": "t", "updated_at": "t", "k": i % 3, "q": f"q{i % 3}"}
                     for i in range(4)]  # keys 0, 1, 2, 0

    class Pages:
        calls = 0

        async def pages(self, path: str, key: str, params: Any = None,
                        limit: int = 0) -> AsyncIterator[list[dict[str, Any]]]:
            Pages.calls += 1
            yield live_examples[:2]
            yield live_examples[2:]

    declared = [{"k": i, "q": f"q{i}"} for i in range(3)]
    streamed = LiveDataset(dataset=DatasetObject.read({"id": "D1", "name": "golden"}))
    asyncio.run(read_examples(Pages(), streamed, ("k", declared)))  # type: ignore[arg-type]
    assert Pages.calls == 2  # the second pass reads it whole
    assert streamed.matched is None and [e["id"] for e in streamed.examples or []] == ["E0", "E1", "E2", "E3"]
    whole = LiveDataset(dataset=DatasetObject.read({"id": "D1", "name": "golden"}))
    asyncio.run(read_examples(Pages(), whole, None))
    assert streamed.examples == whole.examples and streamed.examples_digest == whole.examples_digest
    manifests = golden_manifest(declared, key="k")
    plans = []
    for dataset in (streamed, whole):
        state = LiveState(spaces=[LiveSpace.read({"id": "S1", "name": "research"})])
        state.datasets[("S1", "golden")] = dataset
        plans.append(make_plan(manifests, state, PlanOptions(version_name="v")))
    assert plans[0].to_json()["operations"] == plans[1].to_json()["operations"]
    deletes = [op for op in plans[0].operations if op.method == "DELETE"]
    assert len(deletes) == 1 and deletes[0].body["example_ids"] in (["E0"], ["E3"])  # one of the two key-0 twins
