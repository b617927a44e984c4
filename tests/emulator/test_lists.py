"""The list rules (docs/api.md) the other list tests do not reach: the ``space_name`` filter, a
cursor valid only for the list and query it came from (another list, another prompt's versions,
another dataset version are 400), a label holding "/" removable, and no problem type invented
for a status docs/api.md, "Errors" does not list. Over a real socket."""

from __future__ import annotations

import httpx
import pytest

from tests.emulator.test_datasets import create_dataset
from tests.emulator.test_prompts import create_prompt, version_body

from . import assert_problem

pytestmark = pytest.mark.socket


def test_space_name_filters_by_a_case_insensitive_substring_of_the_space_name(api: httpx.Client) -> None:
    create_prompt(api, "in-default")
    create_prompt(api, "in-research", space="research")
    listed = api.get("/v2/prompts", params={"space_name": "SEARCH"}).json()["prompts"]
    assert [p["name"] for p in listed] == ["in-research"]
    assert api.get("/v2/prompts", params={"space_name": "nowhere"}).json()["prompts"] == []
    assert len(api.get("/v2/prompts").json()["prompts"]) == 2


def test_a_cursor_is_refused_by_another_list(api: httpx.Client) -> None:
    for name in ("a", "b"):
        create_prompt(api, name)
        create_dataset(api, name)
    cursor = api.get("/v2/prompts", params={"limit": 1}).json()["pagination"]["next_cursor"]
    assert_problem(api.get("/v2/datasets", params={"limit": 1, "cursor": cursor}), 400)
    assert api.get("/v2/prompts", params={"limit": 1, "cursor": cursor}).status_code == 200


def test_a_cursor_is_refused_by_another_prompts_versions(api: httpx.Client) -> None:
    first, second = create_prompt(api, "first"), create_prompt(api, "second")
    for prompt in (first, second):
        for i in range(2):
            r = api.post(f"/v2/prompts/{prompt['id']}/versions", json=version_body(commit_message=f"v{i}"))
            assert r.status_code == 201, r.text
    cursor = api.get(f"/v2/prompts/{first['id']}/versions", params={"limit": 1}).json()["pagination"]["next_cursor"]
    assert_problem(api.get(f"/v2/prompts/{second['id']}/versions", params={"limit": 1, "cursor": cursor}), 400)


def test_an_examples_cursor_does_not_carry_over_to_a_new_latest_version(api: httpx.Client) -> None:
    dataset = create_dataset(api, "paged", examples=[{"q": i} for i in range(4)])
    first = api.get(f"/v2/datasets/{dataset['id']}/examples", params={"limit": 2}).json()
    assert [e["q"] for e in first["examples"]] == [0, 1]
    r = api.patch(f"/v2/datasets/{dataset['id']}/examples", json={"examples": [], "new_version": "v2"})
    assert r.status_code == 200, r.text
    again = api.get(f"/v2/datasets/{dataset['id']}/examples",
                    params={"limit": 2, "cursor": first["pagination"]["next_cursor"]})
    assert_problem(again, 400)  # the cursor paged the old latest version; never repeat or skip silently


def test_a_label_holding_a_slash_can_be_removed(api: httpx.Client) -> None:
    version = create_prompt(api, "labelled")["version"]
    assert api.put(f"/v2/prompt-versions/{version['id']}/labels", json={"labels": ["team/prod"]}).status_code == 200
    assert api.delete(f"/v2/prompt-versions/{version['id']}/labels/team%2Fprod").status_code == 204
    assert api.get(f"/v2/prompts/{version['prompt_id']}").json()["version"]["labels"] == []


def test_a_status_without_a_problem_type_in_the_spec_gets_none(api: httpx.Client) -> None:
    body = assert_problem(api.patch("/v2/prompts/x/versions", json={}), 405)
    assert set(body) <= {"title", "status", "detail", "instance"}
