"""Emulator routes: experiments on a dataset.

Store kind "experiment": ``{id, name, space_id, dataset_id, dataset_version_id, created_at,
updated_at}`` plus the private ``run_count``. The runs' outputs are validated and counted, not
kept: nothing in the emulated API reads them back.

Decisions where docs/api.md is silent:

- The list needs exactly one of ``dataset_id`` or ``space_id`` (none or both: 400); either naming
  nothing is 404. It is ordered newest first by creation order (not by ``created_at``, which a
  backdated experiment sets freely; clients that care about age sort by ``created_at``).
- An experiment runs on the dataset's latest version; its ``space_id`` is the dataset's.
- An experiment name is unique within its dataset (exact match): 409.
- ``experiment_runs`` holds 1-1000 runs (422 outside), each exactly ``{example_id, output}``
  (400 for other properties or a missing one); ``example_id`` is a string naming an example of the
  version the experiment runs on (422 otherwise); ``output`` is any JSON value.
- Backdating, for retention tests and benchmarks: with the request header ``X-Emulator-Backdate:
  1`` the body may carry ``created_at`` (an ISO 8601 date-time with a timezone; 422 when it is
  not one), which becomes both ``created_at`` and ``updated_at``. Without the header
  ``created_at`` is an unknown property (400), as it is for the service.
- DELETE of an unknown id is 404. The service documents a 400 for DELETE too; the emulator has no
  case that yields it (every id is looked up).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from reconciler.emulator.core import (
    Emulator,
    Problem,
    check_keys,
    check_type,
    json_response,
    no_content,
    now,
    page,
    query_filters,
    read_json_object,
    require_write,
)
from reconciler.emulator.datasets import dataset_or_404, latest_version, version_example_ids
from reconciler.emulator.openapi import (
    json_body,
    list_envelope,
    list_parameters,
    ok,
    path_param,
    problems,
    query_param,
    ref,
)
from reconciler.emulator.prompts import (
    DATE_TIME,
    NAME_FILTER,
    NO_CONTENT,
    SPACE_NAME_FILTER,
    by_method,
    require_field,
    require_space,
)

BACKDATE_HEADER = "X-Emulator-Backdate"
RUNS_MAX = 1000
EXPERIMENT_FIELDS = ("id", "name", "space_id", "dataset_id", "dataset_version_id", "created_at", "updated_at")


def render(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: doc[k] for k in EXPERIMENT_FIELDS}


def experiment_or_404(emu: Emulator, experiment_id: str) -> dict[str, Any]:
    experiment = emu.store.get("experiment", experiment_id)
    if experiment is None:
        raise Problem(404, f"experiment {experiment_id} not found")
    return experiment


def _backdate(value: Any) -> str:
    check_type(value, "string", "body.created_at")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise Problem(422, "body.created_at must be an ISO 8601 date-time") from None
    if parsed.tzinfo is None:
        raise Problem(422, "body.created_at must carry a timezone")
    return str(value)


def _check_runs(runs: list[Any]) -> list[str]:
    if not 1 <= len(runs) <= RUNS_MAX:
        raise Problem(422, f"body.experiment_runs must hold 1 to {RUNS_MAX} runs")
    example_ids = []
    for i, run in enumerate(runs):
        at = f"body.experiment_runs[{i}]"
        check_type(run, "object", at)
        check_keys(run, {"example_id", "output"}, at)
        example_ids.append(require_field(run, "example_id", "string", at))
        if "output" not in run:
            raise Problem(400, f"{at}.output is required")
    return example_ids


def routes(emu: Emulator) -> list[Route]:
    store = emu.store

    async def list_experiments(request: Request) -> Response:
        emu.principal(request)
        params = request.query_params
        dataset_id, space_id = params.get("dataset_id"), params.get("space_id")
        if (dataset_id is None) == (space_id is None):
            raise Problem(400, "give exactly one of dataset_id or space_id")
        matches = query_filters(emu, params)
        if dataset_id is not None:
            dataset_or_404(emu, dataset_id)
            return json_response(page(store, "experiment", params, plural="experiments", newest_first=True,
                                      parent=dataset_id, where=matches, render=render))
        require_space(emu, str(space_id))
        return json_response(page(store, "experiment", params, plural="experiments", newest_first=True,
                                  where=lambda d: d["space_id"] == space_id and matches(d), render=render))

    async def get_experiment(request: Request) -> Response:
        emu.principal(request)
        return json_response(render(experiment_or_404(emu, request.path_params["experiment_id"])))

    async def create_experiment(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        backdating = request.headers.get(BACKDATE_HEADER) == "1"
        check_keys(body, {"name", "dataset_id", "experiment_runs", *(["created_at"] if backdating else [])}, "body")
        name = require_field(body, "name", "string", "body")
        dataset_id = require_field(body, "dataset_id", "string", "body")
        example_ids = _check_runs(require_field(body, "experiment_runs", "array", "body"))
        stamp = _backdate(body["created_at"]) if "created_at" in body else None
        if not name.strip():
            raise Problem(422, "body.name must not be empty")
        with store.transaction():
            dataset = dataset_or_404(emu, dataset_id)
            version = latest_version(store, dataset_id)
            unknown = sorted(set(example_ids) - version_example_ids(store, version["id"]))
            if unknown:
                raise Problem(422, f"example ids not in dataset version {version['id']}: {', '.join(unknown[:5])}")
            taken = store.scan("experiment", parent=dataset_id, name=name, limit=1)
            if taken:
                raise Problem(409, f"an experiment named {name!r} already exists on dataset {dataset_id}")
            stamp = stamp or now()
            experiment = {
                "id": store.new_id("Experiment"),
                "name": name,
                "space_id": dataset["space_id"],
                "dataset_id": dataset_id,
                "dataset_version_id": version["id"],
                "created_at": stamp,
                "updated_at": stamp,
                "run_count": len(example_ids),
            }
            store.insert("experiment", experiment, parent=dataset_id)
        return json_response(render(experiment), 201)

    async def delete_experiment(request: Request) -> Response:
        require_write(emu.principal(request))
        experiment_id = request.path_params["experiment_id"]
        if not store.delete("experiment", experiment_id):
            raise Problem(404, f"experiment {experiment_id} not found")
        return no_content()

    return [
        by_method("/v2/experiments", get=list_experiments, post=create_experiment),
        by_method("/v2/experiments/{experiment_id}", get=get_experiment, delete=delete_experiment),
    ]


# ---------------------------------------------------------------- OpenAPI

OPENAPI_SCHEMAS: dict[str, Any] = {
    "Experiment": {
        "type": "object",
        "required": list(EXPERIMENT_FIELDS),
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string"},
            "space_id": {"type": "string"},
            "dataset_id": {"type": "string"},
            "dataset_version_id": {"type": "string"},
            "created_at": DATE_TIME,
            "updated_at": DATE_TIME,
        },
    },
    "ExperimentCreate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "dataset_id", "experiment_runs"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "pattern": r"\S"},
            "dataset_id": {"type": "string"},
            "experiment_runs": {
                "type": "array",
                "minItems": 1,
                "maxItems": RUNS_MAX,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["example_id", "output"],
                    "properties": {"example_id": {"type": "string"}, "output": {}},
                },
            },
        },
        "description": f"With the header {BACKDATE_HEADER}: 1 (emulator only), created_at (date-time) is "
                       "also accepted.",
    },
}

OPENAPI_PATHS: dict[str, Any] = {
    "/v2/experiments": {
        "get": {
            "summary": "List the experiments of one dataset or one space, newest first",
            "parameters": list_parameters(
                query_param("dataset_id", "The dataset's experiments (exactly one of dataset_id, space_id)."),
                query_param("space_id", "The space's experiments (exactly one of dataset_id, space_id)."),
                NAME_FILTER,
                SPACE_NAME_FILTER,
            ),
            "responses": {**ok("A page of experiments", list_envelope("experiments", ref("Experiment"))),
                          **problems(400, 404)},
        },
        "post": {
            "summary": "Create an experiment on the dataset's latest version",
            "parameters": [{"name": BACKDATE_HEADER, "in": "header", "required": False,
                            "description": "Emulator only: 1 allows created_at in the body.",
                            "schema": {"type": "string", "enum": ["1"]}}],
            "requestBody": json_body(ref("ExperimentCreate")),
            "responses": {**ok("The experiment", ref("Experiment"), 201), **problems(400, 404, 409, 422)},
        },
    },
    "/v2/experiments/{experiment_id}": {
        "parameters": [path_param("experiment_id")],
        "get": {
            "summary": "Get an experiment",
            "responses": {**ok("The experiment", ref("Experiment")), **problems(404)},
        },
        "delete": {
            "summary": "Delete an experiment",
            "responses": {**NO_CONTENT, **problems(404)},
        },
    },
}
