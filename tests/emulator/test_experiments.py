"""The emulator's experiments, over a real socket."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema
import pytest

pytestmark = pytest.mark.socket

BACKDATE = {"X-Emulator-Backdate": "1"}
UNKNOWN_EXPERIMENT = "RXhwZXJpbWVudDo5OTk6YWI"


def space_id(api: httpx.Client, name: str = "default") -> str:
    spaces = api.get("/v2/spaces", params={"name": name}).json()["spaces"]
    return str(next(s["id"] for s in spaces if s["name"] == name))


def dataset_with_examples(api: httpx.Client, name: str = "golden", space: str = "default") -> tuple[Any, list[str]]:
    dataset = api.post("/v2/datasets", json={"name": name, "space_id": space_id(api, space),
                                             "examples": [{"q": "a"}, {"q": "b"}]}).json()
    examples = api.get(f"/v2/datasets/{dataset['id']}/examples").json()["examples"]
    return dataset, [e["id"] for e in examples]


def create_experiment(api: httpx.Client, dataset_id: str, example_ids: list[str], name: str = "run-1",
                      **extra: Any) -> httpx.Response:
    runs = [{"example_id": eid, "output": {"answer": eid}} for eid in example_ids]
    return api.post("/v2/experiments", json={"name": name, "dataset_id": dataset_id, "experiment_runs": runs},
                    **extra)


def test_create_is_201_on_the_latest_dataset_version(api: httpx.Client) -> None:
    dataset, ids = dataset_with_examples(api)
    response = create_experiment(api, dataset["id"], ids)
    assert response.status_code == 201, response.text
    experiment = response.json()
    assert set(experiment) == {"id", "name", "space_id", "dataset_id", "dataset_version_id", "created_at",
                               "updated_at"}
    assert experiment["space_id"] == dataset["space_id"] and experiment["dataset_id"] == dataset["id"]
    assert experiment["dataset_version_id"] == dataset["versions"][0]["id"]
    assert api.get(f"/v2/experiments/{experiment['id']}").json() == experiment


def test_create_rejects_bad_bodies(api: httpx.Client) -> None:
    dataset, ids = dataset_with_examples(api)
    other, other_ids = dataset_with_examples(api, "other")
    run = {"example_id": ids[0], "output": "x"}
    cases: list[tuple[dict[str, Any], int]] = [
        ({"dataset_id": dataset["id"], "experiment_runs": [run]}, 400),
        ({"name": "e", "experiment_runs": [run]}, 400),
        ({"name": "e", "dataset_id": dataset["id"]}, 400),
        ({"name": "e", "dataset_id": dataset["id"], "experiment_runs": [run], "x": 1}, 400),
        ({"name": "e", "dataset_id": dataset["id"], "experiment_runs": [{"example_id": ids[0]}]}, 400),
        ({"name": "e", "dataset_id": dataset["id"], "experiment_runs": [{**run, "score": 1}]}, 400),
        ({"name": "e", "dataset_id": dataset["id"], "experiment_runs": ["x"]}, 400),
        ({"name": "e", "dataset_id": dataset["id"], "experiment_runs": [run],
          "created_at": "2020-01-01T00:00:00Z"}, 400),
        ({"name": "e", "dataset_id": dataset["id"], "experiment_runs": []}, 422),
        ({"name": "e", "dataset_id": dataset["id"], "experiment_runs": [run] * 1001}, 422),
        ({"name": "e", "dataset_id": dataset["id"],
          "experiment_runs": [{"example_id": other_ids[0], "output": "x"}]}, 422),
        ({"name": "", "dataset_id": dataset["id"], "experiment_runs": [run]}, 422),
        ({"name": "e", "dataset_id": "RGF0YXNldDo5OTphYg", "experiment_runs": [run]}, 404),
    ]
    for body, status in cases:
        response = api.post("/v2/experiments", json=body)
        assert response.status_code == status, (body, response.text)
    assert api.post("/v2/experiments", json={"name": "e", "dataset_id": dataset["id"],
                                             "experiment_runs": [run] * 1000}).status_code == 201


def test_duplicate_name_on_the_same_dataset_is_409(api: httpx.Client) -> None:
    dataset, ids = dataset_with_examples(api)
    other, other_ids = dataset_with_examples(api, "other")
    assert create_experiment(api, dataset["id"], ids, "same").status_code == 201
    assert create_experiment(api, dataset["id"], ids, "same").status_code == 409
    assert create_experiment(api, other["id"], other_ids, "same").status_code == 201


def test_backdating_needs_the_emulator_header(api: httpx.Client) -> None:
    dataset, ids = dataset_with_examples(api)
    old = create_experiment(api, dataset["id"], ids, "old", headers=BACKDATE)
    assert old.status_code == 201  # the header alone changes nothing
    runs = [{"example_id": ids[0], "output": "x"}]
    body = {"name": "older", "dataset_id": dataset["id"], "experiment_runs": runs,
            "created_at": "2020-01-02T03:04:05Z"}
    backdated = api.post("/v2/experiments", json=body, headers=BACKDATE)
    assert backdated.status_code == 201
    assert backdated.json()["created_at"] == backdated.json()["updated_at"] == "2020-01-02T03:04:05Z"
    for bad, status in [("yesterday", 422), ("2020-01-02T03:04:05", 422), (5, 400)]:
        response = api.post("/v2/experiments", json={**body, "name": f"n{bad}", "created_at": bad}, headers=BACKDATE)
        assert response.status_code == status, bad


def test_list_needs_exactly_one_of_dataset_id_or_space_id(api: httpx.Client) -> None:
    dataset, ids = dataset_with_examples(api)
    assert api.get("/v2/experiments").status_code == 400
    assert api.get("/v2/experiments", params={"dataset_id": dataset["id"],
                                              "space_id": dataset["space_id"]}).status_code == 400
    assert api.get("/v2/experiments", params={"dataset_id": "RGF0YXNldDo5OTphYg"}).status_code == 404
    assert api.get("/v2/experiments", params={"space_id": "U3BhY2U6OTk5OmFi"}).status_code == 404


def test_list_by_dataset_or_space_newest_first_with_a_name_filter(api: httpx.Client) -> None:
    dataset, ids = dataset_with_examples(api)
    other, other_ids = dataset_with_examples(api, "other", space="research")
    for name in ("Baseline", "tuned", "tuned-again"):
        create_experiment(api, dataset["id"], ids, name)
    create_experiment(api, other["id"], other_ids, "tuned")
    by_dataset = api.get("/v2/experiments", params={"dataset_id": dataset["id"]}).json()
    assert [e["name"] for e in by_dataset["experiments"]] == ["tuned-again", "tuned", "Baseline"]
    assert by_dataset["pagination"] == {"has_more": False}
    by_space = api.get("/v2/experiments", params={"space_id": dataset["space_id"], "name": "TUNED"}).json()
    assert [e["name"] for e in by_space["experiments"]] == ["tuned-again", "tuned"]
    paged = api.get("/v2/experiments", params={"dataset_id": dataset["id"], "limit": 2}).json()
    assert len(paged["experiments"]) == 2 and paged["pagination"]["has_more"] is True
    rest = api.get("/v2/experiments", params={"dataset_id": dataset["id"], "limit": 2,
                                              "cursor": paged["pagination"]["next_cursor"]}).json()
    assert [e["name"] for e in rest["experiments"]] == ["Baseline"]


def test_delete_is_204_and_unknown_is_404(api: httpx.Client, reader: httpx.Client) -> None:
    dataset, ids = dataset_with_examples(api)
    experiment = create_experiment(api, dataset["id"], ids).json()
    assert reader.delete(f"/v2/experiments/{experiment['id']}").status_code == 403
    assert reader.get(f"/v2/experiments/{experiment['id']}").status_code == 200
    assert api.delete(f"/v2/experiments/{experiment['id']}").status_code == 204
    assert api.get(f"/v2/experiments/{experiment['id']}").status_code == 404
    assert api.delete(f"/v2/experiments/{experiment['id']}").status_code == 404
    missing = api.delete(f"/v2/experiments/{UNKNOWN_EXPERIMENT}")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/problem+json")
    assert api.get("/v2/experiments", params={"dataset_id": dataset["id"]}).json()["experiments"] == []


def test_responses_match_the_published_openapi_schemas(api: httpx.Client) -> None:
    document = api.get("/v2/openapi.json").json()
    validator = jsonschema.Draft202012Validator({**document, "$ref": "#/components/schemas/Experiment"})
    dataset, ids = dataset_with_examples(api)
    experiment = create_experiment(api, dataset["id"], ids).json()
    validator.validate(experiment)
    validator.validate(api.get(f"/v2/experiments/{experiment['id']}").json())
    for item in api.get("/v2/experiments", params={"dataset_id": dataset["id"]}).json()["experiments"]:
        validator.validate(item)
