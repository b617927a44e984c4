"""``reconciler/apply/recover.py`` on its own: after an ambiguous POST (or the PATCH that makes a
dataset version), each recover function re-reads and answers "it took effect" (the object) or
"it did not" (None), against the emulator in-process."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.apply.recover import recover_for, recover_for_patch
from reconciler.client.http import ApiClient, open_client
from reconciler.client.settings import Endpoint

MESSAGES = [{"role": "user", "content": "hi {x}"}]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[ApiClient]:
    with open_client(Endpoint(base_url=None, emulator_db=str(tmp_path / "state.db")), "admin-key") as c:
        yield c


@pytest.fixture
def research(client: ApiClient) -> str:
    return str(next(s["id"] for s in client.run(client.get("/v2/spaces"))["spaces"] if s["name"] == "research"))


def integration(name: str) -> dict[str, Any]:
    return {"type": "LLM", "name": name, "config": {"provider": "VENDOR_A", "api_key": "k-123456"}}


def test_an_integration_create_is_found_by_name_and_type(client: ApiClient) -> None:
    body = integration("found-me")
    recover = recover_for(client, "/v2/integrations", body)
    assert recover is not None and client.run(recover()) is None  # not made yet: the POST may be sent again
    made = client.run(client.post("/v2/integrations", body))
    assert client.run(recover())["id"] == made["id"]
    other_type = recover_for(client, "/v2/integrations", {**body, "type": "AGENT"})
    assert other_type is not None and client.run(other_type()) is None  # identity is (type, name)


def test_a_name_that_only_contains_the_wanted_one_is_not_taken_for_it(client: ApiClient) -> None:
    client.run(client.post("/v2/integrations", integration("found-me-too")))  # the list's name filter is a substring match
    recover = recover_for(client, "/v2/integrations", integration("found-me"))
    assert recover is not None and client.run(recover()) is None


def test_a_prompt_create_is_found_in_its_space_with_its_version(client: ApiClient, research: str) -> None:
    body = {"space_id": research, "name": "p1", "version": {"commit_message": "c", "provider": "VENDOR_A",
                                                             "messages": MESSAGES}}
    recover = recover_for(client, "/v2/prompts", body)
    assert recover is not None and client.run(recover()) is None
    made = client.run(client.post("/v2/prompts", body))
    found = client.run(recover())
    assert found["id"] == made["id"] and found["version"]["messages"] == MESSAGES


def test_a_prompt_of_that_name_in_another_space_is_not_it(client: ApiClient, research: str) -> None:
    default = str(next(s["id"] for s in client.run(client.get("/v2/spaces"))["spaces"] if s["name"] == "default"))
    client.run(client.post("/v2/prompts", {"space_id": default, "name": "p2", "version": {
        "commit_message": "c", "provider": "VENDOR_A", "messages": MESSAGES}}))
    recover = recover_for(client, "/v2/prompts", {"space_id": research, "name": "p2"})
    assert recover is not None and client.run(recover()) is None


def test_a_dataset_create_is_found_by_name(client: ApiClient, research: str) -> None:
    body = {"space_id": research, "name": "d1", "examples": [{"q": 1}]}
    recover = recover_for(client, "/v2/datasets", body)
    assert recover is not None and client.run(recover()) is None
    made = client.run(client.post("/v2/datasets", body))
    assert client.run(recover())["id"] == made["id"]


def test_a_prompt_version_took_effect_only_when_the_newest_version_is_the_one_sent(
        client: ApiClient, research: str) -> None:
    prompt = client.run(client.post("/v2/prompts", {"space_id": research, "name": "p3", "version": {
        "commit_message": "c", "provider": "VENDOR_A", "messages": MESSAGES}}))
    path = f"/v2/prompts/{prompt['id']}/versions"
    new = {"commit_message": "second", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "bye"}]}
    recover = recover_for(client, path, new)
    assert recover is not None and client.run(recover()) is None  # the newest is still the first version
    client.run(client.post(path, new))
    assert client.run(recover())["messages"] == new["messages"]


def test_appended_examples_took_effect_only_when_every_one_is_there(client: ApiClient, research: str) -> None:
    dataset = client.run(client.post("/v2/datasets", {"space_id": research, "name": "d2", "examples": [{"q": 1}]}))
    path = f"/v2/datasets/{dataset['id']}/examples"
    body = {"examples": [{"q": 2}, {"q": 3}]}
    recover = recover_for(client, path, body)
    assert recover is not None and client.run(recover()) is None
    client.run(client.post(path, {"examples": [{"q": 2}]}))
    assert client.run(recover()) is None  # one of two is not proof
    client.run(client.post(path, {"examples": [{"q": 3}]}))
    assert client.run(recover()) == {"recovered": True}


def test_a_restriction_post_is_idempotent_so_its_recover_always_resends(client: ApiClient) -> None:
    recover = recover_for(client, "/v2/resource-restrictions", {"resource_id": "X"})
    assert recover is not None and client.run(recover()) is None


def test_paths_without_a_recover_rule_get_none(client: ApiClient) -> None:
    assert recover_for(client, "/v2/unknown", {"name": "x"}) is None
    assert recover_for(client, "/v2/integrations", ["not", "an", "object"]) is None


def test_an_evaluator_version_took_effect_when_the_live_template_is_the_one_sent() -> None:
    live = {"template_config": {"name": "t", "template": "old"}}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "E1", "version": live})

    client = ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(handler)))
    recover = recover_for(client, "/v2/evaluators/E1/versions", {"template_config": {"name": "t", "template": "new"}})
    assert recover is not None and client.run(recover()) is None
    live["template_config"] = {"template": "new", "name": "t"}  # key order does not matter
    assert client.run(recover()) == live


def test_a_dataset_version_patch_took_effect_when_the_newest_version_has_its_name_and_is_recent(
        client: ApiClient, research: str) -> None:
    dataset = client.run(client.post("/v2/datasets", {"space_id": research, "name": "d3", "examples": [{"q": 1}]}))
    path = f"/v2/datasets/{dataset['id']}/examples"
    started = datetime.now(UTC)
    recover = recover_for_patch(client, path, {"examples": [], "new_version": "v9"}, started)
    assert recover is not None and client.run(recover()) is None
    client.run(client.patch(path, {"examples": [], "new_version": "v9"}))
    assert client.run(recover())["recovered"] is True
    stale = recover_for_patch(client, path, {"examples": [], "new_version": "v9"}, started + timedelta(hours=1))
    assert stale is not None and client.run(stale()) is None  # a version of that name made long before this apply


def test_only_the_patch_that_makes_a_version_has_a_recover(client: ApiClient) -> None:
    now = datetime.now(UTC)
    assert recover_for_patch(client, "/v2/datasets/D1/examples", {"examples": [{"id": "x"}]}, now) is None
    assert recover_for_patch(client, "/v2/integrations/I1", {"new_version": "v"}, now) is None


class Account:
    """A stand-in API that answers each GET path with a fixed JSON body and records what it was asked."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, dict[str, str]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append((request.url.path, dict(request.url.params)))
        return httpx.Response(200, json=self.answers.get(request.url.path, {}))

    def client(self) -> ApiClient:
        return ApiClient(httpx.AsyncClient(base_url="https://api.test", transport=httpx.MockTransport(self)))


STARTED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def versions(*made: tuple[str, str | None, str | None]) -> dict[str, Any]:
    return {"id": "D1", "versions": [{"id": vid, "name": name, "created_at": at} for vid, name, at in made]}


@pytest.mark.parametrize(("made", "recovered"), [
    (versions(("V2", "v9", "2026-03-01T11:56:00Z"), ("V1", "v1", "2026-01-01T00:00:00Z")), True),  # skew allowed
    (versions(("V2", "v9", "2026-03-01T11:55:00+00:00")), True),  # five minutes before, at the limit
    (versions(("V2", "v9", "2026-03-01T11:54:59Z")), False),  # made before this apply
    (versions(("V1", "v1", "2026-03-01T12:01:00Z"), ("V2", "v9", "2026-03-01T12:00:30Z")), False),  # not the newest
    (versions(("V2", "v8", "2026-03-01T12:01:00Z")), False),
    (versions(("V2", "v9", "yesterday")), False),
    (versions(("V2", "v9", None)), False),
    (versions(), False),
    ({"id": "D1"}, False),
])
def test_a_dataset_version_took_effect_only_when_the_newest_is_named_so_and_made_since_the_apply_began(
        made: dict[str, Any], recovered: bool) -> None:
    account = Account({"/v2/datasets/D1": made})
    recover = recover_for_patch(account.client(), "/v2/datasets/D1/examples", {"new_version": "v9"}, STARTED)
    assert recover is not None
    found = account.client().run(recover())
    assert found == ({"dataset_version_id": "V2", "recovered": True} if recovered else None)
    assert [path for path, _ in account.asked] == ["/v2/datasets/D1"]


def test_a_dataset_version_name_that_is_not_text_is_compared_as_text() -> None:
    account = Account({"/v2/datasets/D1": versions(("V2", "7", "2026-03-01T12:00:00Z"))})
    recover = recover_for_patch(account.client(), "/v2/datasets/D1/examples", {"new_version": 7}, STARTED)
    assert recover is not None and account.client().run(recover()) == {"dataset_version_id": "V2", "recovered": True}


def test_a_patch_without_a_new_version_or_of_another_path_has_no_recover() -> None:
    client = Account({}).client()
    for path, body in (("/v2/datasets/D1/examples", {"new_version": ""}), ("/v2/datasets/D1/examples", ["x"]),
                       ("/v2/datasets/D1/examples/x", {"new_version": "v"}), ("/v2/x/v2/datasets/D1/examples",
                                                                              {"new_version": "v"})):
        assert recover_for_patch(client, path, body, STARTED) is None, path


def test_a_create_is_looked_up_by_name_within_its_scope_and_read_with_its_version() -> None:
    account = Account({
        "/v2/prompts": {"prompts": [{"id": "P0", "name": "p1x"}, {"id": "P1", "name": "p1"}],
                        "pagination": {"has_more": False}},
        "/v2/prompts/P1": {"id": "P1", "name": "p1", "version": {"id": "V1"}},
        "/v2/integrations": {"integrations": [{"id": "I1", "name": "llm", "type": "LLM"}],
                             "pagination": {"has_more": False}},
        "/v2/evaluators": {"evaluators": [], "pagination": {"has_more": False}},
    })
    client = account.client()
    prompt = recover_for(client, "/v2/prompts", {"space_id": "S1", "name": "p1", "version": {}})
    assert prompt is not None and client.run(prompt()) == {"id": "P1", "name": "p1", "version": {"id": "V1"}}
    assert account.asked[0] == ("/v2/prompts", {"space_id": "S1", "name": "p1", "limit": "100"})
    assert account.asked[1:] == [("/v2/prompts/P1", {})]
    account.asked.clear()
    made = recover_for(client, "/v2/integrations", {"type": "LLM", "name": "llm"})
    assert made is not None and client.run(made()) == {"id": "I1", "name": "llm", "type": "LLM"}
    assert account.asked == [("/v2/integrations", {"type": "LLM", "name": "llm", "limit": "100"})]  # no read
    account.asked.clear()
    absent = recover_for(client, "/v2/evaluators", {"space_id": "S1", "name": "e"})
    assert absent is not None and client.run(absent()) is None
    assert account.asked == [("/v2/evaluators", {"space_id": "S1", "name": "e", "limit": "100"})]


def test_a_prompt_version_is_compared_field_by_field_with_the_newest_one() -> None:
    newest = {"id": "V2", "provider": "VENDOR_A", "model": "m", "messages": [{"role": "user", "content": "hi"}],
              "commit_message": "other"}
    account = Account({"/v2/prompts/P1/versions": {"prompt_versions": [newest]}})
    client = account.client()
    sent = {"provider": "VENDOR_A", "messages": [{"content": "hi", "role": "user"}], "commit_message": "mine"}
    recover = recover_for(client, "/v2/prompts/P1/versions", sent)
    assert recover is not None and client.run(recover()) == newest  # the commit message is not compared
    assert account.asked == [("/v2/prompts/P1/versions", {"limit": "1"})]
    other = recover_for(client, "/v2/prompts/P1/versions", {**sent, "model": "m2"})
    assert other is not None and client.run(other()) is None
    empty = Account({"/v2/prompts/P1/versions": {"prompt_versions": []}}).client()
    none = recover_for(empty, "/v2/prompts/P1/versions", sent)
    assert none is not None and empty.run(none()) is None


def test_an_evaluator_without_a_version_or_template_matches_only_a_version_sent_without_one() -> None:
    for answer in ({"id": "E1"}, {"id": "E1", "version": None}, {"id": "E1", "version": {"id": "V1"}}):
        client = Account({"/v2/evaluators/E1": answer}).client()
        sent = recover_for(client, "/v2/evaluators/E1/versions", {"template_config": {"name": "t"}})
        assert sent is not None and client.run(sent()) is None
        bare = recover_for(client, "/v2/evaluators/E1/versions", {"commit_message": "c"})
        assert bare is not None and client.run(bare()) == (answer.get("version") or {})


def test_appended_examples_are_compared_without_the_fields_the_api_adds() -> None:
    live = [{"id": "X1", "created_at": "t", "updated_at": "t", "q": 1},
            {"id": "X2", "created_at": "t", "updated_at": "t", "q": 1, "a": {"b": [1]}}]
    account = Account({"/v2/datasets/D1/examples": {"examples": live, "pagination": {"has_more": False}}})
    client = account.client()
    for body, took in (({"examples": [{"q": 1}, {"a": {"b": [1]}, "q": 1}]}, True),
                       ({"examples": [{"q": 1}, {"q": 1}]}, False),  # sent twice, there once
                       ({"examples": [{"q": 1, "id": "X1"}]}, False), ({}, True), ({"examples": None}, True)):
        recover = recover_for(client, "/v2/datasets/D1/examples", body)
        assert recover is not None and client.run(recover()) == ({"recovered": True} if took else None), body
    assert account.asked[0] == ("/v2/datasets/D1/examples", {"limit": "500"})


def test_a_version_or_examples_post_with_a_body_that_is_not_an_object_has_no_recover() -> None:
    client = Account({}).client()
    for path in ("/v2/prompts/P1/versions", "/v2/evaluators/E1/versions", "/v2/datasets/D1/examples",
                 "/v2/datasets"):
        assert recover_for(client, path, ["x"]) is None, path
    assert recover_for(client, "/v2/resource-restrictions", ["x"]) is not None  # resent whatever it holds
    assert recover_for(client, "/v2/prompts/P1/versions/x", {}) is None
    assert recover_for(client, "/v2/evaluators/E1/versions/x", {}) is None
    assert recover_for(client, "/v2/datasets/D1/examples/x", {}) is None


@pytest.mark.parametrize(("path", "body", "answers", "where"), [
    ("/v2/prompts/P1/versions", {"provider": "VENDOR_A"},
     {"/v2/prompts/P1/versions": {"prompt_versions": [{"provider": 7}]}}, "/v2/prompts/P1/versions"),
    ("/v2/evaluators/E1/versions", {"template_config": {}},
     {"/v2/evaluators/E1": {"version": {"template_config": "not an object"}}}, "/v2/evaluators/E1"),
])
def test_an_answer_the_reconciler_cannot_read_is_an_error_naming_where_it_came_from(
        path: str, body: dict[str, Any], answers: dict[str, Any], where: str) -> None:
    from reconciler.errors import ResponseError

    client = Account(answers).client()
    recover = recover_for(client, path, body)
    assert recover is not None
    with pytest.raises(ResponseError) as failed:
        client.run(recover())
    assert failed.value.path == where and where in str(failed.value)


def test_a_dataset_version_the_reconciler_cannot_read_is_an_error_naming_the_dataset() -> None:
    from reconciler.errors import ResponseError

    client = Account({"/v2/datasets/D1": {"versions": [{"name": "v9"}]}}).client()
    recover = recover_for_patch(client, "/v2/datasets/D1/examples", {"new_version": "v9"}, STARTED)
    assert recover is not None
    with pytest.raises(ResponseError) as failed:
        client.run(recover())
    assert failed.value.path == "/v2/datasets/D1" and "/v2/datasets/D1" in str(failed.value)
