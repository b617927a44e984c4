"""The emulator's datasets, dataset versions and examples, over a real socket."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest

pytestmark = pytest.mark.socket

EXAMPLES = [{"ticket_id": "t1", "question": "a?"}, {"ticket_id": "t2", "question": "b?"}]


def space_id(api: httpx.Client, name: str = "default") -> str:
    spaces = api.get("/v2/spaces", params={"name": name}).json()["spaces"]
    return str(next(s["id"] for s in spaces if s["name"] == name))


def create_dataset(api: httpx.Client, name: str = "golden", examples: list[dict[str, Any]] | None = None,
                   space: str = "default") -> Any:
    body = {"name": name, "space_id": space_id(api, space), "examples": EXAMPLES if examples is None else examples}
    response = api.post("/v2/datasets", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def examples_of(api: httpx.Client, dataset_id: str, **params: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    params = {"limit": 500, **params}
    while True:
        response = api.get(f"/v2/datasets/{dataset_id}/examples", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        out += page["examples"]
        if not page["pagination"]["has_more"]:
            return out
        params["cursor"] = page["pagination"]["next_cursor"]


def user_fields(example: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in example.items() if k not in ("id", "created_at", "updated_at")}


def delete_examples(api: httpx.Client, dataset_id: str, body: dict[str, Any]) -> httpx.Response:
    return api.request("DELETE", f"/v2/datasets/{dataset_id}/examples", json=body)


def test_create_is_201_with_a_first_version_and_stores_the_examples_in_order(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    assert dataset["name"] == "golden" and dataset["space_id"] == space_id(api)
    [version] = dataset["versions"]
    assert set(version) == {"id", "name", "dataset_id", "created_at", "updated_at"}
    assert version["dataset_id"] == dataset["id"]
    examples = examples_of(api, dataset["id"])
    assert [user_fields(e) for e in examples] == EXAMPLES
    assert all(e["id"] and e["created_at"] and e["updated_at"] for e in examples)


def test_create_rejects_bad_bodies_with_400_for_shape_and_422_for_rules(api: httpx.Client) -> None:
    sid = space_id(api)
    cases: list[tuple[dict[str, Any], int]] = [
        ({"space_id": sid, "examples": EXAMPLES}, 400),
        ({"name": "x", "examples": EXAMPLES}, 400),
        ({"name": "x", "space_id": sid}, 400),
        ({"name": "x", "space_id": sid, "examples": EXAMPLES, "versions": []}, 400),
        ({"name": "x", "space_id": sid, "examples": [1, 2]}, 400),
        ({"name": "x", "space_id": sid, "examples": {"a": 1}}, 400),
        ({"name": "x", "space_id": sid, "examples": []}, 422),
        ({"name": "", "space_id": sid, "examples": EXAMPLES}, 422),
        ({"name": "x", "space_id": sid, "examples": [{"id": "e1", "a": 1}]}, 422),
        ({"name": "x", "space_id": sid, "examples": [{"created_at": "2024-01-01T00:00:00Z"}]}, 422),
        ({"name": "x", "space_id": sid, "examples": [{"updated_at": "2024-01-01T00:00:00Z"}]}, 422),
        ({"name": "x", "space_id": "U3BhY2U6OTk5OmFi", "examples": EXAMPLES}, 404),
    ]
    for body, status in cases:
        response = api.post("/v2/datasets", json=body)
        assert response.status_code == status, (body, response.text)
    assert api.get("/v2/datasets").json()["datasets"] == []


def test_duplicate_name_in_a_space_is_409(api: httpx.Client) -> None:
    create_dataset(api, "dup")
    response = api.post("/v2/datasets", json={"name": "dup", "space_id": space_id(api), "examples": EXAMPLES})
    assert response.status_code == 409
    create_dataset(api, "dup", space="research")


def test_list_filters_by_space_and_name_and_omits_versions(api: httpx.Client) -> None:
    create_dataset(api, "Golden-Tickets")
    create_dataset(api, "other")
    create_dataset(api, "golden-research", space="research")
    page = api.get("/v2/datasets", params={"space_id": space_id(api), "name": "golden"}).json()
    assert [d["name"] for d in page["datasets"]] == ["Golden-Tickets"]
    assert "versions" not in page["datasets"][0]
    assert page["pagination"] == {"has_more": False}
    assert api.get("/v2/datasets", params={"space_id": "U3BhY2U6OTk5OmFi"}).status_code == 404


def test_get_lists_versions_newest_first_without_examples(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    api.patch(f"/v2/datasets/{dataset['id']}/examples", json={"examples": [], "new_version": "v2"})
    got = api.get(f"/v2/datasets/{dataset['id']}").json()
    assert [v["name"] for v in got["versions"]] == ["v2", dataset["versions"][0]["name"]]
    assert "examples" not in got
    assert api.get("/v2/datasets/RGF0YXNldDo5OTphYg").status_code == 404


def test_rename_changes_the_name_and_clashes_are_409(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    create_dataset(api, "taken")
    url = f"/v2/datasets/{dataset['id']}"
    assert api.patch(url, json={"name": "renamed"}).json()["name"] == "renamed"
    assert api.patch(url, json={"name": "renamed"}).status_code == 200
    assert api.patch(url, json={"name": "taken"}).status_code == 409
    assert api.patch(url, json={"name": "x", "space_id": "y"}).status_code == 400
    assert api.patch(url, json={}).status_code == 400
    assert api.patch(url, json={"name": ""}).status_code == 422
    assert api.patch("/v2/datasets/RGF0YXNldDo5OTphYg", json={"name": "z"}).status_code == 404


def test_delete_is_204_and_takes_versions_examples_and_experiments_along(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    example_id = examples_of(api, dataset["id"])[0]["id"]
    runs = [{"example_id": example_id, "output": "x"}]
    experiment = api.post("/v2/experiments", json={"name": "e", "dataset_id": dataset["id"],
                                                   "experiment_runs": runs}).json()
    assert api.delete(f"/v2/datasets/{dataset['id']}").status_code == 204
    assert api.get(f"/v2/datasets/{dataset['id']}").status_code == 404
    assert api.get(f"/v2/datasets/{dataset['id']}/examples").status_code == 404
    assert api.get(f"/v2/experiments/{experiment['id']}").status_code == 404
    assert api.delete(f"/v2/datasets/{dataset['id']}").status_code == 404


def test_examples_page_oldest_first_up_to_500_with_a_default_of_50(api: httpx.Client) -> None:
    examples = [{"n": i} for i in range(501)]
    dataset = create_dataset(api, examples=examples)
    url = f"/v2/datasets/{dataset['id']}/examples"
    first = api.get(url).json()
    assert len(first["examples"]) == 50 and first["pagination"]["has_more"] is True
    big = api.get(url, params={"limit": 500}).json()
    assert [e["n"] for e in big["examples"]] == list(range(500))
    rest = api.get(url, params={"limit": 500, "cursor": big["pagination"]["next_cursor"]}).json()
    assert [e["n"] for e in rest["examples"]] == [500]
    assert rest["pagination"] == {"has_more": False}
    assert api.get(url, params={"limit": 501}).status_code == 400
    assert api.get(url, params={"dataset_version_id": "RGF0YXNldFZlcnNpb246OTk6YWI"}).status_code == 404


def test_append_adds_to_the_latest_version_and_returns_the_new_ids(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    response = api.post(f"/v2/datasets/{dataset['id']}/examples", json={"examples": [{"ticket_id": "t3"}]})
    assert response.status_code == 201
    body = response.json()
    assert body["id"] == dataset["id"] and body["name"] == "golden"
    assert body["dataset_version_id"] == dataset["versions"][0]["id"]
    examples = examples_of(api, dataset["id"])
    assert [e["ticket_id"] for e in examples] == ["t1", "t2", "t3"]
    assert examples[2]["id"] == body["example_ids"][0]
    url = f"/v2/datasets/{dataset['id']}/examples"
    assert api.post(url, json={"examples": []}).status_code == 422
    assert api.post(url, json={"examples": [{"id": "x"}]}).status_code == 422
    assert api.post(url, json={"examples": ["x"]}).status_code == 400
    assert api.post(url, json={"examples": [{}], "new_version": "v"}).status_code == 400
    assert api.post("/v2/datasets/RGF0YXNldDo5OTphYg/examples", json={"examples": [{}]}).status_code == 404


def test_update_in_place_replaces_user_fields_and_ignores_unknown_ids(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    first, second = examples_of(api, dataset["id"])
    body = {"examples": [{"id": first["id"], "ticket_id": "t1", "answer": "yes"},
                         {"id": "RXhhbXBsZTo5OTk6YWI", "ticket_id": "ghost"}]}
    response = api.patch(f"/v2/datasets/{dataset['id']}/examples", json=body)
    assert response.status_code == 200
    result = response.json()
    assert result["updated_example_ids"] == [first["id"]]
    assert result["dataset_version_id"] == dataset["versions"][0]["id"]
    after = examples_of(api, dataset["id"])
    assert user_fields(after[0]) == {"ticket_id": "t1", "answer": "yes"}  # "question" is gone: replaced
    assert after[0]["id"] == first["id"] and after[0]["created_at"] == first["created_at"]
    assert after[1] == second
    assert len(api.get(f"/v2/datasets/{dataset['id']}").json()["versions"]) == 1


def test_update_with_new_version_copies_the_examples_keeping_ids_and_leaves_the_old_version(
        api: httpx.Client) -> None:
    dataset = create_dataset(api)
    old_version = dataset["versions"][0]["id"]
    first, second = examples_of(api, dataset["id"])
    body = {"examples": [{"id": second["id"], "ticket_id": "t2", "question": "changed?"}], "new_version": "v2"}
    result = api.patch(f"/v2/datasets/{dataset['id']}/examples", json=body).json()
    assert result["dataset_version_id"] != old_version
    assert result["updated_example_ids"] == [second["id"]]
    latest = examples_of(api, dataset["id"])
    assert [e["id"] for e in latest] == [first["id"], second["id"]]
    assert latest[1]["question"] == "changed?"
    assert examples_of(api, dataset["id"], dataset_version_id=result["dataset_version_id"]) == latest
    assert examples_of(api, dataset["id"], dataset_version_id=old_version) == [first, second]
    versions = api.get(f"/v2/datasets/{dataset['id']}").json()["versions"]
    assert [v["name"] for v in versions][0] == "v2"


def test_update_body_rules(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    url = f"/v2/datasets/{dataset['id']}/examples"
    eid = examples_of(api, dataset["id"])[0]["id"]
    cases: list[tuple[dict[str, Any], int]] = [
        ({"examples": []}, 422),
        ({"examples": [{"ticket_id": "no id"}]}, 400),
        ({"examples": [{"id": 5}]}, 400),
        ({"examples": [{"id": eid, "created_at": "2024-01-01T00:00:00Z"}]}, 422),
        ({"examples": [], "new_version": ""}, 422),
        ({"examples": [], "new_version": 3}, 400),
        ({"examples": [], "other": 1}, 400),
        ({"new_version": "v"}, 400),
    ]
    for body, status in cases:
        assert api.patch(url, json=body).status_code == status, body
    snapshot = api.patch(url, json={"examples": [], "new_version": "snapshot"})
    assert snapshot.status_code == 200 and snapshot.json()["updated_example_ids"] == []
    assert api.patch("/v2/datasets/RGF0YXNldDo5OTphYg/examples", json={"examples": [{"id": "x"}]}).status_code == 404


def test_delete_examples_reports_what_was_and_was_not_deleted(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    version_id = dataset["versions"][0]["id"]
    first, second = examples_of(api, dataset["id"])
    response = delete_examples(api, dataset["id"], {"dataset_version_id": version_id,
                                                    "example_ids": [first["id"], "RXhhbXBsZTo5OTk6YWI"]})
    assert response.status_code == 200
    assert response.json() == {"completed": True, "deleted_example_ids": [first["id"]],
                               "not_deleted_example_ids": ["RXhhbXBsZTo5OTk6YWI"]}
    assert examples_of(api, dataset["id"]) == [second]


def test_delete_examples_touches_only_the_named_version(api: httpx.Client) -> None:
    dataset = create_dataset(api)
    old_version = dataset["versions"][0]["id"]
    new_version = api.patch(f"/v2/datasets/{dataset['id']}/examples",
                            json={"examples": [], "new_version": "v2"}).json()["dataset_version_id"]
    first, _ = examples_of(api, dataset["id"])
    delete_examples(api, dataset["id"], {"dataset_version_id": new_version, "example_ids": [first["id"]]})
    assert len(examples_of(api, dataset["id"])) == 1
    assert len(examples_of(api, dataset["id"], dataset_version_id=old_version)) == 2


def test_delete_examples_body_rules(api: httpx.Client) -> None:
    dataset, other = create_dataset(api), create_dataset(api, "other")
    vid = dataset["versions"][0]["id"]
    cases: list[tuple[dict[str, Any], int]] = [
        ({"example_ids": ["x"]}, 400),
        ({"dataset_version_id": vid}, 400),
        ({"dataset_version_id": vid, "example_ids": "x"}, 400),
        ({"dataset_version_id": vid, "example_ids": [1]}, 400),
        ({"dataset_version_id": vid, "example_ids": []}, 422),
        ({"dataset_version_id": vid, "example_ids": [f"e{i}" for i in range(1001)]}, 422),
        ({"dataset_version_id": other["versions"][0]["id"], "example_ids": ["x"]}, 404),
    ]
    for body, status in cases:
        assert delete_examples(api, dataset["id"], body).status_code == status, body
    thousand = delete_examples(api, dataset["id"], {"dataset_version_id": vid,
                                                    "example_ids": [f"e{i}" for i in range(1000)]})
    assert thousand.status_code == 200 and len(thousand.json()["not_deleted_example_ids"]) == 1000


def test_reader_may_read_but_not_write(api: httpx.Client, reader: httpx.Client) -> None:
    dataset = create_dataset(api)
    url = f"/v2/datasets/{dataset['id']}"
    assert reader.get(url).status_code == 200
    assert reader.get(f"{url}/examples").status_code == 200
    assert reader.post("/v2/datasets", json={"name": "r", "space_id": dataset["space_id"],
                                             "examples": EXAMPLES}).status_code == 403
    assert reader.patch(url, json={"name": "r"}).status_code == 403
    assert reader.post(f"{url}/examples", json={"examples": [{}]}).status_code == 403
    assert reader.delete(url).status_code == 403


def test_responses_match_the_published_openapi_schemas(api: httpx.Client) -> None:
    document = api.get("/v2/openapi.json").json()

    def check(name: str, instance: Any) -> None:
        jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"}).validate(instance)

    dataset = create_dataset(api)
    check("Dataset", dataset)
    check("Dataset", api.get(f"/v2/datasets/{dataset['id']}").json())
    check("Dataset", api.patch(f"/v2/datasets/{dataset['id']}", json={"name": "n"}).json())
    url = f"/v2/datasets/{dataset['id']}/examples"
    appended = api.post(url, json={"examples": [{"x": 1}]}).json()
    check("DatasetExamplesAppended", appended)
    check("DatasetExamplesUpdated", api.patch(url, json={"examples": [], "new_version": "v2"}).json())
    for example in examples_of(api, dataset["id"]):
        check("DatasetExample", example)
    deleted = delete_examples(api, dataset["id"], {"dataset_version_id": appended["dataset_version_id"],
                                                   "example_ids": appended["example_ids"]})
    check("DatasetExamplesDeleted", deleted.json())
    for item in api.get("/v2/datasets").json()["datasets"]:
        check("Dataset", item)
