"""The live reader against a scripted account (a MockTransport): what each request asks (the
list's maximum page, its filter), how each answer is read (an object the reconciler cannot read
is refused naming the request it came from), what a read counts, the re-reads of one object, the
examples kept while reading against the manifests, and who uses an integration."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from clienthelpers import ok, problem, ran

from reconciler.client.http import ApiClient
from reconciler.client.live import (
    minimum_requests,
    read_evaluator,
    read_examples,
    read_experiments,
    read_integration_users,
    read_live,
    read_object,
    read_prompt,
    wanted_examples,
)
from reconciler.errors import ResponseError
from reconciler.model import (
    DatasetObject,
    DesiredResource,
    EvaluatorObject,
    EvaluatorVersionObject,
    LiveDataset,
    LiveEvaluator,
    LivePrompt,
    LiveSpace,
    LiveState,
    ManifestSet,
    PromptObject,
    PromptVersionObject,
    ReadScope,
    RestrictionObject,
)

S1, S2, S3 = "S1", "S2", "S3"
SPACES = [{"id": S1, "name": "research"}, {"id": S2, "name": "support"}, {"id": S3, "name": "empty"}]


def template(integration_id: str | None) -> dict[str, Any]:
    llm = {"ai_integration_id": integration_id, "model_name": "m"} if integration_id else None
    return {"id": f"V-{integration_id}", "template_config": {"name": "t", "template": "{{a}}",
                                                             **({"llm_config": llm} if llm else {})}}


class Account:
    """Answers GETs from ``lists`` (``path`` or ``path?filter=value`` -> (list key, items), served
    a page of the asked ``limit`` at a time) and ``objects`` (path -> object); keeps every request.
    A route it does not know is a 404, so a request the reader should not make fails the test."""

    def __init__(self, lists: dict[str, tuple[str, list[dict[str, Any]]]],
                 objects: dict[str, dict[str, Any]] | None = None, failures: int = 0) -> None:
        self.lists = lists
        self.objects = objects or {}
        self.failures = failures  # the first requests answered 503 (retried by the client)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            self.failures -= 1
            return problem(503, "Unavailable")
        path = request.url.path
        if path in self.objects:
            return ok(self.objects[path])
        query = dict(request.url.params)
        limit, start = int(query.pop("limit")), int(query.pop("cursor", "0"))
        route = path + ("?" + urlencode(sorted(query.items())) if query else "")
        if route not in self.lists:
            return problem(404, "Not found", route)
        key, items = self.lists[route]
        more = start + limit < len(items)
        return ok({key: items[start:start + limit],
                   "pagination": {"has_more": more, "next_cursor": str(start + limit) if more else None}})

    def asked(self) -> list[tuple[str, dict[str, str]]]:
        return [(r.url.path, dict(r.url.params)) for r in self.requests]


def account(changes: dict[str, tuple[str, list[dict[str, Any]]]] | None = None) -> Account:
    """An account with the three spaces, a prompt, a dataset and an evaluator declared in research,
    ``changes`` replacing lists."""
    lists: dict[str, tuple[str, list[dict[str, Any]]]] = {
        "/v2/integrations?type=LLM": ("integrations", [{"id": "I1", "type": "LLM", "name": "vendor-a"}]),
        "/v2/integrations?type=AGENT": ("integrations", []),
        "/v2/spaces": ("spaces", SPACES),
        "/v2/organizations": ("organizations", [{"id": "O1", "name": "acme"}]),
        "/v2/resource-restrictions": ("resource_restrictions", [{"resource_type": "PROMPT", "resource_id": "P1"}]),
        "/v2/prompts?space_id=S1": ("prompts", [{"id": "P1", "name": "summarize", "space_id": S1}]),
        "/v2/datasets?space_id=S1": ("datasets", [{"id": "D1", "name": "golden", "space_id": S1}]),
        "/v2/evaluators?space_id=S1": ("evaluators", [{"id": "E1", "name": "judge", "space_id": S1}]),
        "/v2/prompts/P1/versions": ("prompt_versions", [{"id": "PV2", "labels": ["production"]}, {"id": "PV1"}]),
        "/v2/datasets/D1/examples": ("examples", [{"id": "X1", "q": "a"}]),
        "/v2/experiments?dataset_id=D1": ("experiments", [{"id": "R1", "name": "run"}]),
    }
    lists.update(changes or {})
    return Account(lists, {"/v2/evaluators/E1": {"id": "E1", "name": "judge", "version": template("I1")}})


SCOPE = ReadScope(spaces=frozenset({"research"}), prompts=frozenset({("research", "summarize")}),
                  datasets=frozenset({("research", "golden")}), retention=frozenset({("research", "golden")}),
                  evaluators=frozenset({("research", "judge")}))


def read(make_client: Callable[..., ApiClient], api: Account, scope: ReadScope = SCOPE) -> LiveState:
    live: LiveState = ran(make_client(api), lambda c: read_live(c, scope))
    return live


def test_every_list_is_asked_at_the_api_maximum_and_examples_at_theirs(
        make_client: Callable[..., ApiClient]) -> None:
    api = account()
    live = read(make_client, api)
    lists = {(path, tuple(sorted((k, v) for k, v in query.items() if k != "limit"))): query["limit"]
             for path, query in api.asked() if "limit" in query}
    assert lists == {
        ("/v2/integrations", (("type", "LLM"),)): "100", ("/v2/integrations", (("type", "AGENT"),)): "100",
        ("/v2/spaces", ()): "100", ("/v2/organizations", ()): "100", ("/v2/resource-restrictions", ()): "100",
        ("/v2/prompts", (("space_id", S1),)): "100", ("/v2/datasets", (("space_id", S1),)): "100",
        ("/v2/evaluators", (("space_id", S1),)): "100", ("/v2/prompts/P1/versions", ()): "100",
        ("/v2/datasets/D1/examples", ()): "500", ("/v2/experiments", (("dataset_id", "D1"),)): "100"}
    assert [o.id for o in live.organizations] == ["O1"] and [s.name for s in live.spaces] == [
        "research", "support", "empty"]
    assert live.restrictions == {("PROMPT", "P1"): RestrictionObject.read(
        {"resource_type": "PROMPT", "resource_id": "P1"})}
    golden = live.datasets[(S1, "golden")]
    assert golden.examples == [{"id": "X1", "q": "a"}] and [e.id for e in golden.experiments or []] == ["R1"]
    assert live.evaluators[(S1, "judge")].latest == EvaluatorVersionObject.read(template("I1"))


def test_integrations_listed_per_type_are_keyed_by_the_type_asked_when_the_items_do_not_say(
        make_client: Callable[..., ApiClient]) -> None:
    live = read(make_client, account({"/v2/integrations?type=AGENT": ("integrations", [{"id": "I2", "name": "bot"}])}))
    assert live.integrations[("AGENT", "bot")].type == "AGENT"
    assert live.integrations[("LLM", "vendor-a")].id == "I1"


@pytest.mark.parametrize(("route", "answer", "path", "what"), [
    ("/v2/organizations", ("organizations", [{"name": "acme"}]), "/v2/organizations", "an organization"),
    ("/v2/spaces", ("spaces", [{"id": S1}]), "/v2/spaces", "a space"),
    ("/v2/resource-restrictions", ("resource_restrictions", [{"resource_type": "PROMPT"}]),
     "/v2/resource-restrictions", "a restriction"),
    ("/v2/integrations?type=LLM", ("integrations", [{"id": "I1"}]), "/v2/integrations", "an integration"),
    ("/v2/experiments?dataset_id=D1", ("experiments", [{"name": "run"}]), "/v2/experiments", "an experiment"),
])
def test_an_object_the_reconciler_cannot_read_is_refused_naming_the_list_it_came_from(
        make_client: Callable[..., ApiClient], route: str, answer: tuple[str, list[dict[str, Any]]],
        path: str, what: str) -> None:
    with pytest.raises(ResponseError) as caught:
        read(make_client, account({route: answer}))
    assert str(caught.value).startswith(f"GET {path}: the API answered {what} that the reconciler cannot read: ")


def test_a_read_counts_only_its_own_requests_and_retries(make_client: Callable[..., ApiClient]) -> None:
    api = account()
    api.failures = 1
    client = make_client(api)
    first: LiveState = ran(client, lambda c: read_live(c, SCOPE))
    second: LiveState = ran(client, lambda c: read_live(c, SCOPE))
    assert first.retries == 1 and second.retries == 0
    assert first.requests == second.requests == 12 == minimum_requests(second, SCOPE)


def test_a_prompt_without_versions_has_no_latest_and_no_labels(make_client: Callable[..., ApiClient]) -> None:
    live = read(make_client, account({"/v2/prompts/P1/versions": ("prompt_versions", [])}))
    prompt = live.prompts[(S1, "summarize")]
    assert (prompt.latest, prompt.labels, prompt.version_count) == (None, {}, 0)


def test_the_minimum_counts_a_space_list_by_the_objects_of_that_space_only() -> None:
    live = LiveState(spaces=[LiveSpace.read(s) for s in SPACES])
    live.prompts.update({(S1, f"p{i}"): LivePrompt.read({"id": f"P{i}", "name": f"p{i}"}) for i in range(60)})
    live.prompts.update({(S2, f"q{i}"): LivePrompt.read({"id": f"Q{i}", "name": f"q{i}"}) for i in range(150)})
    scope = ReadScope(spaces=frozenset({"research"}), kinds=frozenset({"Prompt"}))
    fixed = 2 + 1 + 1 + 1  # integrations (a page per type), spaces, organizations, restrictions
    assert minimum_requests(live, scope) == fixed + 1  # 60 prompts of research: one page
    live.prompts[(S1, "p0")].version_count = 150
    assert minimum_requests(live, ReadScope(spaces=frozenset({"research"}), kinds=frozenset({"Prompt"}),
                                            prompts=frozenset({("research", "p0")}))) == fixed + 1 + 2


# ---------------------------------------------------------------- one object read again


def test_a_prompt_read_by_id_has_its_version_taken_apart_with_its_labels(
        make_client: Callable[..., ApiClient]) -> None:
    api = Account({}, {"/v2/prompts/P1": {"id": "P1", "name": "summarize", "version": {
        "id": "PV2", "labels": ["production", {"name": "staging"}]}},
        "/v2/prompts/P2": {"id": "P2", "name": "bare"}, "/v2/prompts/P3": {"id": "P3", "name": "n", "version": None},
        "/v2/prompts/P4": {"id": "P4", "name": "n", "version": {"labels": []}},
        "/v2/prompts/P5": {"id": "P5"}})
    client = make_client(api)
    prompt: LivePrompt = ran(client, lambda c: read_prompt(c, "P1"))
    assert prompt.prompt == PromptObject.read({"id": "P1", "name": "summarize"})
    assert prompt.latest == PromptVersionObject.read({"id": "PV2", "labels": ["production", {"name": "staging"}]})
    assert prompt.labels == {"production": "PV2", "staging": "PV2"}
    for bare in ("P2", "P3"):
        read_again = client.run(read_prompt(client, bare))
        assert (read_again.id, read_again.latest, read_again.labels) == (bare, None, {})
    for broken, what in (("P4", "a prompt version"), ("P5", "a prompt")):
        with pytest.raises(ResponseError, match=rf"^GET /v2/prompts/{broken}: the API answered {what} that"):
            client.run(read_prompt(client, broken))


def test_an_evaluator_read_by_id_has_its_latest_version_taken_apart(make_client: Callable[..., ApiClient]) -> None:
    api = Account({}, {"/v2/evaluators/E1": {"id": "E1", "name": "judge", "version": template("I1")},
                       "/v2/evaluators/E2": {"id": "E2", "name": "bare"},
                       "/v2/evaluators/E3": {"id": "E3", "name": "n", "version": None},
                       "/v2/evaluators/E4": {"id": "E4", "name": "n", "version": {"template_config": "x"}},
                       "/v2/evaluators/E5": {"name": "n"}})
    client = make_client(api)
    evaluator: LiveEvaluator = ran(client, lambda c: read_evaluator(c, "E1"))
    assert evaluator.evaluator == EvaluatorObject.read({"id": "E1", "name": "judge"})
    assert evaluator.latest is not None and evaluator.latest.integration_id == "I1"
    for bare in ("E2", "E3"):
        assert client.run(read_evaluator(client, bare)).latest is None
    for broken, what in (("E4", "an evaluator version"), ("E5", "an evaluator")):
        with pytest.raises(ResponseError, match=rf"^GET /v2/evaluators/{broken}: the API answered {what} that"):
            client.run(read_evaluator(client, broken))


def test_an_object_read_by_id_is_read_as_its_kind_from_its_collection(make_client: Callable[..., ApiClient]) -> None:
    api = Account({}, {"/v2/prompts/P1": {"id": "P1", "name": "summarize"}, "/v2/prompts/P2": {"id": "P2"}})
    client = make_client(api)
    prompt = ran(client, lambda c: read_object(c, "Prompt", "P1"))
    assert isinstance(prompt, LivePrompt) and (prompt.id, prompt.prompt.name) == ("P1", "summarize")
    with pytest.raises(ResponseError, match=r"^GET /v2/prompts/P2: the API answered a prompt that"):
        ran(client, lambda c: read_object(c, "Prompt", "P2"))


def test_a_datasets_experiments_are_listed_by_its_id_at_the_api_maximum(make_client: Callable[..., ApiClient]) -> None:
    runs = [{"id": f"R{i}", "name": f"run-{i}"} for i in range(101)]
    api = Account({"/v2/experiments?dataset_id=D1": ("experiments", runs)})
    experiments = ran(make_client(api), lambda c: read_experiments(c, "D1"))
    assert [e.id for e in experiments] == [r["id"] for r in runs]
    assert [q["limit"] for _, q in api.asked()] == ["100", "100"]


# ---------------------------------------------------------------- examples read against the manifests


class Pages:
    """A client whose examples list answers ``pages`` (counting the passes over them)."""

    def __init__(self, *pages: list[dict[str, Any]]) -> None:
        self.answer = pages
        self.passes = 0

    async def pages(self, path: str, key: str, params: Any = None,
                    limit: int = 0) -> AsyncIterator[list[dict[str, Any]]]:
        self.passes += 1
        for page in self.answer:
            yield page


def examples_read(client: Pages, wanted: tuple[str, list[Any]] | None) -> LiveDataset:
    dataset = LiveDataset(dataset=DatasetObject.read({"id": "D1", "name": "golden"}))
    asyncio.run(read_examples(client, dataset, wanted))  # type: ignore[arg-type]
    return dataset


def live_example(n: int, k: Any, q: str) -> dict[str, Any]:
    return {"id": f"E{n}", "updated_at": "t", "k": k, "q": q}


def test_a_key_declared_twice_matches_nothing_and_its_twins_live_are_kept_in_one_pass() -> None:
    client = Pages([live_example(0, 0, "a"), live_example(1, 0, "a")])
    dataset = examples_read(client, ("k", [{"k": 0, "q": "a"}, {"k": 0, "q": "b"}]))
    assert client.passes == 1
    assert dataset.matched == set() and [e["id"] for e in dataset.examples or []] == ["E0", "E1"]


def test_a_key_met_twice_live_after_a_kept_example_reads_the_dataset_again_whole() -> None:
    client = Pages([live_example(0, 0, "changed")], [live_example(1, 0, "a")])
    dataset = examples_read(client, ("k", [{"k": 0, "q": "a"}]))
    assert client.passes == 2
    assert dataset.matched is None and [e["id"] for e in dataset.examples or []] == ["E0", "E1"]


def test_a_declared_example_without_the_key_matches_nothing_and_the_keyed_ones_still_do() -> None:
    client = Pages([live_example(0, 0, "a"), live_example(1, 1, "b"), {"id": "E2", "q": "c"}])
    dataset = examples_read(client, ("k", [{"k": 0, "q": "a"}, {"q": "c"}, "not an object"]))
    assert dataset.matched == {0} and [e["id"] for e in dataset.examples or []] == ["E1", "E2"]


def test_only_keyed_datasets_declaring_examples_in_a_live_space_are_read_against_the_manifests() -> None:
    live = LiveState(spaces=[LiveSpace.read(s) for s in SPACES])
    examples = [{"k": 1}]

    def dataset(name: str, space: str = "research", **spec: Any) -> DesiredResource:
        return DesiredResource("Dataset", name, spec, space=space)

    manifests = ManifestSet((
        dataset("keyed", key="k", examples=examples), dataset("by-id", space=S2, key="k", examples=examples),
        dataset("unkeyed", examples=examples), dataset("empty-key", key="", examples=examples),
        dataset("not-a-str", key=1, examples=examples), dataset("from-file", key="k", examples_file="x.jsonl"),
        dataset("nowhere", space="no-such-space", key="k", examples=examples)))
    assert wanted_examples(manifests, live) == {(S1, "keyed"): ("k", examples), (S2, "by-id"): ("k", examples)}


# ---------------------------------------------------------------- who uses an integration


def test_the_users_of_an_integration_are_every_evaluator_naming_it_in_every_space(
        make_client: Callable[..., ApiClient]) -> None:
    """The evaluators the live read holds are reused (their latest version read only when the read
    did not); the other spaces are listed and each of their evaluators read once. An evaluator
    without a version or whose template names no integration uses none."""
    live = LiveState(spaces=[LiveSpace.read(s) for s in SPACES])
    live.evaluators[(S1, "judge")] = LiveEvaluator(EvaluatorObject.read({"id": "E1", "name": "judge"}),
                                                   EvaluatorVersionObject.read(template("I1")))
    live.evaluators[(S1, "tone")] = LiveEvaluator(EvaluatorObject.read({"id": "E2", "name": "tone"}))
    api = Account(
        {"/v2/evaluators?space_id=S2": ("evaluators", [{"id": "E3", "name": "grader"}, {"id": "E4", "name": "plain"}]),
         "/v2/evaluators?space_id=S3": ("evaluators", [{"id": "E5", "name": "versionless"}])},
        {"/v2/evaluators/E2": {"id": "E2", "name": "tone", "version": template("I2")},
         "/v2/evaluators/E3": {"id": "E3", "name": "grader", "version": template("I1")},
         "/v2/evaluators/E4": {"id": "E4", "name": "plain", "version": template(None)},
         "/v2/evaluators/E5": {"id": "E5", "name": "versionless"}})
    users = ran(make_client(api), lambda c: read_integration_users(c, live))
    assert users == [("I1", "research", "judge", "E1"), ("I1", "support", "grader", "E3"),
                     ("I2", "research", "tone", "E2")]
    assert sorted((path, query.get("space_id", ""), query.get("limit", "")) for path, query in api.asked()) == [
        ("/v2/evaluators", S2, "100"), ("/v2/evaluators", S3, "100"), ("/v2/evaluators/E2", "", ""),
        ("/v2/evaluators/E3", "", ""), ("/v2/evaluators/E4", "", ""), ("/v2/evaluators/E5", "", "")]


def test_an_evaluator_listed_for_its_users_that_cannot_be_read_is_refused_naming_the_list(
        make_client: Callable[..., ApiClient]) -> None:
    live = LiveState(spaces=[LiveSpace.read(SPACES[1])])
    api = Account({"/v2/evaluators?space_id=S2": ("evaluators", [{"name": "nameless"}])})
    with pytest.raises(ResponseError, match=r"^GET /v2/evaluators: the API answered an evaluator that"):
        ran(make_client(api), lambda c: read_integration_users(c, live))
