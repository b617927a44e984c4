"""Emulator routes: datasets, their versions and their examples.

Store kinds: "dataset" ``{id, name, space_id, created_at, updated_at}``, "dataset_version" (parent:
the dataset id) ``{id, name, dataset_id, created_at, updated_at}`` and "example" (parent: the
dataset version id). An example is stored as ``{"id": "<version id>/<example id>", "example":
{id, created_at, updated_at, ...user fields}}``: the store id is per version because one example
keeps its id in every version it is copied to, and the user's fields never mix with storage keys.
Bulk writes use ``Store.insert_many`` in one transaction, so a dataset of 500 examples is a
handful of statements.

Decisions where docs/api.md is silent:

- A dataset name is unique within its space (exact match); a clash on create or rename is 409.
- ``space_id`` naming no space is 404, on create and as a list filter.
- Missing required properties, wrong JSON types, unknown body properties and examples that are
  not objects are 400. Failed value rules are 422: an empty ``name`` or ``new_version``, an empty
  ``examples`` list (allowed only on PATCH with ``new_version``, which then just snapshots), an
  example carrying ``id``, ``created_at`` or ``updated_at`` (an update item carries ``id`` and
  must not carry the timestamps), ``example_ids`` outside 1-1000 items.
- The first version is named after the dataset's creation timestamp. Version names need not be
  unique.
- Examples keep their ids across versions: PATCH with ``new_version`` copies the latest
  version's examples (same ids, same ``created_at``, same order) into the new version and applies
  the updates there; earlier versions are never touched by it.
- An update REPLACES an example's user fields with the given ones (``id`` and ``created_at``
  stay, ``updated_at`` moves). Unknown ids are ignored; ``updated_example_ids`` lists the ids that
  were updated, each once.
- DELETE examples requires ``dataset_version_id`` (any version of the dataset; another dataset's
  version or an unknown one is 404) and deletes in place; ids not in that version are reported in
  ``not_deleted_example_ids``. ``completed`` is always true.
- The examples list defaults to 50 items per page (maximum 500), oldest first. Without
  ``dataset_version_id`` each page reads the version that is latest at that moment, so a client
  that pages while versions are being made should pass the version id it got from the first read.
- Dataset lists are newest first; ``versions`` on GET are newest first.
- Deleting a dataset deletes its versions, their examples and the dataset's experiments.
- Every examples write moves the dataset's and the touched version's ``updated_at``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from reconciler.emulator.core import (
    Emulator,
    Problem,
    Store,
    check_keys,
    check_type,
    json_response,
    no_content,
    now,
    page,
    page_json,
    query_filters,
    read_json_object,
    require_write,
)
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
    SPACE_FILTER,
    SPACE_NAME_FILTER,
    by_method,
    require_field,
    require_space,
)

RESERVED_EXAMPLE_KEYS = ("id", "created_at", "updated_at")
EXAMPLES_PAGE_MAX = 500
DELETE_IDS_MAX = 1000
DATASET_FIELDS = ("id", "name", "space_id", "created_at", "updated_at")


def dataset_or_404(emu: Emulator, dataset_id: str) -> dict[str, Any]:
    dataset = emu.store.get("dataset", dataset_id)
    if dataset is None:
        raise Problem(404, f"dataset {dataset_id} not found")
    return dataset


def latest_version(store: Store, dataset_id: str) -> dict[str, Any]:
    rows = store.scan("dataset_version", parent=dataset_id, newest_first=True, limit=1)
    if not rows:
        raise Problem(404, f"dataset {dataset_id} has no version")
    return rows[0][1]


def version_of(store: Store, dataset_id: str, version_id: str) -> dict[str, Any]:
    """A version of this dataset; another dataset's version is as unknown as a missing one."""
    version = store.get("dataset_version", version_id)
    if version is None or version["dataset_id"] != dataset_id:
        raise Problem(404, f"dataset version {version_id} not found in dataset {dataset_id}")
    return version


def version_example_ids(store: Store, version_id: str) -> set[str]:
    return {doc["example"]["id"] for _, doc in store.scan("example", parent=version_id)}


def _store_id(version_id: str, example_id: str) -> str:
    return f"{version_id}/{example_id}"


def _check_examples(value: Any, where: str, *, allow_empty: bool = False, updates: bool = False) -> list[Any]:
    check_type(value, "array", where)
    if not value and not allow_empty:
        raise Problem(422, f"{where} must hold at least one example")
    reserved = RESERVED_EXAMPLE_KEYS[1:] if updates else RESERVED_EXAMPLE_KEYS
    for i, example in enumerate(value):
        check_type(example, "object", f"{where}[{i}]")
        if updates:
            require_field(example, "id", "string", f"{where}[{i}]")
        bad = [k for k in reserved if k in example]
        if bad:
            raise Problem(422, f"{where}[{i}] must not carry {', '.join(bad)}")
    return list(value)


def _check_name(name: str, where: str) -> None:
    if not name.strip():
        raise Problem(422, f"{where} must not be empty")


def _name_taken(store: Store, space_id: str, name: str, except_id: str | None = None) -> bool:
    return bool(store.scan("dataset", parent=space_id, name=name, limit=1, where=lambda d: d["id"] != except_id))


def _new_version(store: Store, dataset_id: str, name: str, stamp: str) -> dict[str, Any]:
    version = {"id": store.new_id("DatasetVersion"), "name": name, "dataset_id": dataset_id,
               "created_at": stamp, "updated_at": stamp}
    return store.insert("dataset_version", version, parent=dataset_id)


def _append(store: Store, version_id: str, examples: Iterable[dict[str, Any]], stamp: str) -> list[str]:
    docs: list[dict[str, Any]] = []
    examples = list(examples)
    for fields, example_id in zip(examples, store.new_ids("Example", len(examples)), strict=True):
        example = {"id": example_id, "created_at": stamp, "updated_at": stamp, **fields}
        docs.append({"id": _store_id(version_id, example_id), "example": example})
    store.insert_many("example", docs, parent=version_id)
    return [d["example"]["id"] for d in docs]


def _touch(store: Store, dataset: dict[str, Any], version: dict[str, Any], stamp: str) -> None:
    dataset["updated_at"] = stamp
    version["updated_at"] = stamp
    store.put("dataset", dataset)
    store.put("dataset_version", version)


def _public(dataset: dict[str, Any]) -> dict[str, Any]:
    return {k: dataset[k] for k in DATASET_FIELDS}


def routes(emu: Emulator) -> list[Route]:
    store = emu.store

    async def list_datasets(request: Request) -> Response:
        emu.principal(request)
        params = request.query_params
        space_id = params.get("space_id")
        if space_id is not None:
            require_space(emu, space_id)
        return json_response(page(
            store, "dataset", params, plural="datasets", newest_first=True, render=_public, parent=space_id,
            where=query_filters(emu, params),
        ))

    async def create_dataset(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"name", "space_id", "examples"}, "body")
        name = require_field(body, "name", "string", "body")
        space_id = require_field(body, "space_id", "string", "body")
        examples = _check_examples(require_field(body, "examples", "array", "body"), "body.examples")
        _check_name(name, "body.name")
        with store.transaction():
            require_space(emu, space_id)
            if _name_taken(store, space_id, name):
                raise Problem(409, f"a dataset named {name!r} already exists in space {space_id}")
            stamp = now()
            dataset = {"id": store.new_id("Dataset"), "name": name, "space_id": space_id,
                       "created_at": stamp, "updated_at": stamp}
            store.insert("dataset", dataset, parent=space_id)
            version = _new_version(store, dataset["id"], stamp, stamp)
            _append(store, version["id"], examples, stamp)
        return json_response({**dataset, "versions": [version]}, 201)

    async def get_dataset(request: Request) -> Response:
        emu.principal(request)
        dataset = dataset_or_404(emu, request.path_params["dataset_id"])
        versions = [v for _, v in store.scan("dataset_version", parent=dataset["id"], newest_first=True)]
        return json_response({**_public(dataset), "versions": versions})

    async def rename_dataset(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"name"}, "body")
        name = require_field(body, "name", "string", "body")
        _check_name(name, "body.name")
        with store.transaction():
            dataset = dataset_or_404(emu, request.path_params["dataset_id"])
            if _name_taken(store, dataset["space_id"], name, except_id=dataset["id"]):
                raise Problem(409, f"a dataset named {name!r} already exists in space {dataset['space_id']}")
            dataset.update(name=name, updated_at=now())
            store.put("dataset", dataset)
        return json_response(_public(dataset))

    async def delete_dataset(request: Request) -> Response:
        require_write(emu.principal(request))
        dataset_id = request.path_params["dataset_id"]
        with store.transaction():
            dataset_or_404(emu, dataset_id)
            for _, version in store.scan("dataset_version", parent=dataset_id):
                store.delete_children("example", version["id"])
            store.delete_children("dataset_version", dataset_id)
            for _, experiment in store.scan("experiment", parent=dataset_id):
                store.delete("experiment", experiment["id"])
            store.delete("dataset", dataset_id)
        return no_content()

    async def list_examples(request: Request) -> Response:
        emu.principal(request)
        dataset = dataset_or_404(emu, request.path_params["dataset_id"])
        params = request.query_params
        version_id = params.get("dataset_version_id")
        version = (latest_version(store, dataset["id"]) if version_id is None
                   else version_of(store, dataset["id"], version_id))
        return page_json(store, "example", params, plural="examples", parent=version["id"], member="example",
                         maximum=EXAMPLES_PAGE_MAX)

    async def append_examples(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"examples"}, "body")
        examples = _check_examples(require_field(body, "examples", "array", "body"), "body.examples")
        with store.transaction():
            dataset = dataset_or_404(emu, request.path_params["dataset_id"])
            version = latest_version(store, dataset["id"])
            stamp = now()
            ids = _append(store, version["id"], examples, stamp)
            _touch(store, dataset, version, stamp)
        return json_response({**_public(dataset), "dataset_version_id": version["id"], "example_ids": ids}, 201)

    async def update_examples(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"examples", "new_version"}, "body")
        new_version = body.get("new_version")
        if "new_version" in body:
            check_type(new_version, "string", "body.new_version")
            _check_name(str(new_version), "body.new_version")
        items = _check_examples(require_field(body, "examples", "array", "body"), "body.examples",
                                allow_empty=new_version is not None, updates=True)
        updates = {item["id"]: {k: v for k, v in item.items() if k != "id"} for item in items}
        with store.transaction():
            dataset = dataset_or_404(emu, request.path_params["dataset_id"])
            latest = latest_version(store, dataset["id"])
            stamp = now()
            if new_version is None:
                version, updated = latest, _update_in_place(store, latest["id"], updates, stamp)
            else:
                version = _new_version(store, dataset["id"], new_version, stamp)
                updated = _copy_with_updates(store, latest["id"], version["id"], updates, stamp)
            _touch(store, dataset, version, stamp)
        return json_response({**_public(dataset), "dataset_version_id": version["id"],
                              "updated_example_ids": updated})

    async def delete_examples(request: Request) -> Response:
        require_write(emu.principal(request))
        body = await read_json_object(request)
        check_keys(body, {"dataset_version_id", "example_ids"}, "body")
        version_id = require_field(body, "dataset_version_id", "string", "body")
        ids = require_field(body, "example_ids", "array", "body")
        for i, example_id in enumerate(ids):
            check_type(example_id, "string", f"body.example_ids[{i}]")
        if not 1 <= len(ids) <= DELETE_IDS_MAX:
            raise Problem(422, f"body.example_ids must hold 1 to {DELETE_IDS_MAX} ids")
        deleted: list[str] = []
        missing: list[str] = []
        with store.transaction():
            dataset = dataset_or_404(emu, request.path_params["dataset_id"])
            version = version_of(store, dataset["id"], version_id)
            for example_id in dict.fromkeys(ids):
                gone = store.delete("example", _store_id(version["id"], example_id))
                (deleted if gone else missing).append(example_id)
            if deleted:
                _touch(store, dataset, version, now())
        return json_response({"completed": True, "deleted_example_ids": deleted,
                              "not_deleted_example_ids": missing})

    return [
        by_method("/v2/datasets", get=list_datasets, post=create_dataset),
        by_method("/v2/datasets/{dataset_id}", get=get_dataset, patch=rename_dataset, delete=delete_dataset),
        by_method("/v2/datasets/{dataset_id}/examples",
                  get=list_examples, post=append_examples, patch=update_examples, delete=delete_examples),
    ]


def _update_in_place(store: Store, version_id: str, updates: dict[str, dict[str, Any]], stamp: str) -> list[str]:
    updated = []
    for example_id, fields in updates.items():
        doc = store.get("example", _store_id(version_id, example_id))
        if doc is None:
            continue
        old = doc["example"]
        doc["example"] = {"id": example_id, "created_at": old["created_at"], "updated_at": stamp, **fields}
        store.put("example", doc)
        updated.append(example_id)
    return updated


def _copy_with_updates(store: Store, source_id: str, target_id: str, updates: dict[str, dict[str, Any]],
                       stamp: str) -> list[str]:
    docs, updated = [], []
    for _, doc in store.scan("example", parent=source_id):
        example = doc["example"]
        if example["id"] in updates:
            example = {"id": example["id"], "created_at": example["created_at"], "updated_at": stamp,
                       **updates[example["id"]]}
            updated.append(example["id"])
        docs.append({"id": _store_id(target_id, example["id"]), "example": example})
    store.insert_many("example", docs, parent=target_id)
    return updated


# ---------------------------------------------------------------- a replica's datasets (seeding)


def seed(store: Store, items: Sequence[Mapping[str, Any]], stamp: str) -> None:
    """A replica's datasets, as their lists answer them (newest first), stored (``core.Seed``), each
    with its ``versions`` (newest first; none given: one), the ``examples`` of its latest version and
    its ``experiments`` (newest first)."""
    for item in reversed(items):
        dataset = {k: item.get(k) for k in ("id", "name", "space_id", "created_at", "updated_at")}
        dataset["created_at"] = dataset["created_at"] or stamp
        dataset["updated_at"] = dataset["updated_at"] or dataset["created_at"]
        store.insert("dataset", dataset, parent=dataset["space_id"])
        versions = list(item.get("versions") or []) or [{"id": f"{dataset['id']}/replica-version",
                                                         "name": dataset["created_at"]}]
        for version in reversed(versions):
            store.insert("dataset_version", {"name": None, "created_at": dataset["created_at"],
                                             "updated_at": dataset["updated_at"], **dict(version),
                                             "dataset_id": dataset["id"]}, parent=dataset["id"])
        latest = versions[0]["id"]
        store.insert_many("example", [{"id": f"{latest}/{e['id']}", "example": dict(e)}
                                      for e in item.get("examples") or []], parent=latest)
        for experiment in reversed(item.get("experiments") or []):
            doc = {"space_id": dataset["space_id"], "dataset_version_id": None, "created_at": stamp,
                   "run_count": 0, **dict(experiment)}
            doc.setdefault("dataset_id", dataset["id"])
            doc.setdefault("updated_at", doc["created_at"])
            store.insert("experiment", doc, parent=dataset["id"])


# ---------------------------------------------------------------- OpenAPI

_DATASET_FIELDS: dict[str, Any] = {
    "id": {"type": "string"},
    "name": {"type": "string"},
    "space_id": {"type": "string"},
    "created_at": DATE_TIME,
    "updated_at": DATE_TIME,
}
_NEW_EXAMPLE = {
    "type": "object",
    "description": "free-form user fields; id, created_at and updated_at are rejected (422)",
    "additionalProperties": True,
}
_EXAMPLE_UPDATE = {
    "type": "object",
    "description": "the example id plus its new user fields, which replace the old ones",
    "required": ["id"],
    "properties": {"id": {"type": "string"}},
    "additionalProperties": True,
}
_STRING_ARRAY = {"type": "array", "items": {"type": "string"}}

OPENAPI_SCHEMAS: dict[str, Any] = {
    "DatasetVersion": {
        "type": "object",
        "required": ["id", "name", "dataset_id", "created_at", "updated_at"],
        "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "dataset_id": {"type": "string"},
                       "created_at": DATE_TIME, "updated_at": DATE_TIME},
    },
    "Dataset": {
        "type": "object",
        "required": list(_DATASET_FIELDS),
        "properties": {**_DATASET_FIELDS, "versions": {"type": "array", "items": ref("DatasetVersion")}},
    },
    "DatasetCreate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "space_id", "examples"],
        "properties": {"name": {"type": "string", "minLength": 1, "pattern": r"\S"}, "space_id": {"type": "string"},
                       "examples": {"type": "array", "minItems": 1, "items": _NEW_EXAMPLE}},
    },
    "DatasetRename": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": {"type": "string", "minLength": 1, "pattern": r"\S"}},
    },
    "DatasetExample": {
        "type": "object",
        "required": ["id", "created_at", "updated_at"],
        "properties": {"id": {"type": "string"}, "created_at": DATE_TIME, "updated_at": DATE_TIME},
        "additionalProperties": True,
    },
    "DatasetExamplesAppend": {
        "type": "object",
        "additionalProperties": False,
        "required": ["examples"],
        "properties": {"examples": {"type": "array", "minItems": 1, "items": _NEW_EXAMPLE}},
    },
    "DatasetExamplesAppended": {
        "type": "object",
        "required": [*_DATASET_FIELDS, "dataset_version_id", "example_ids"],
        "properties": {**_DATASET_FIELDS, "dataset_version_id": {"type": "string"}, "example_ids": _STRING_ARRAY},
    },
    "DatasetExamplesUpdate": {
        "type": "object",
        "additionalProperties": False,
        "required": ["examples"],
        "anyOf": [{"required": ["new_version"]}, {"properties": {"examples": {"minItems": 1}}}],
        "properties": {
            "examples": {"type": "array", "items": _EXAMPLE_UPDATE,
                         "description": "may be empty only together with new_version"},
            "new_version": {"type": "string", "minLength": 1, "pattern": r"\S",
                            "description": "make a new version with this name from the latest one"},
        },
    },
    "DatasetExamplesUpdated": {
        "type": "object",
        "required": [*_DATASET_FIELDS, "dataset_version_id", "updated_example_ids"],
        "properties": {**_DATASET_FIELDS, "dataset_version_id": {"type": "string"},
                       "updated_example_ids": _STRING_ARRAY},
    },
    "DatasetExamplesDelete": {
        "type": "object",
        "additionalProperties": False,
        "required": ["dataset_version_id", "example_ids"],
        "properties": {
            "dataset_version_id": {"type": "string"},
            "example_ids": {"type": "array", "minItems": 1, "maxItems": DELETE_IDS_MAX,
                            "items": {"type": "string"}},
        },
    },
    "DatasetExamplesDeleted": {
        "type": "object",
        "required": ["completed", "deleted_example_ids", "not_deleted_example_ids"],
        "properties": {"completed": {"type": "boolean"}, "deleted_example_ids": _STRING_ARRAY,
                       "not_deleted_example_ids": _STRING_ARRAY},
    },
}

OPENAPI_PATHS: dict[str, Any] = {
    "/v2/datasets": {
        "get": {
            "summary": "List datasets (without versions), newest first",
            "parameters": list_parameters(SPACE_FILTER, SPACE_NAME_FILTER, NAME_FILTER),
            "responses": {**ok("A page of datasets", list_envelope("datasets", ref("Dataset"))),
                          **problems(400, 404)},
        },
        "post": {
            "summary": "Create a dataset and its first version",
            "requestBody": json_body(ref("DatasetCreate")),
            "responses": {**ok("The dataset with its first version", ref("Dataset"), 201),
                          **problems(400, 404, 409, 422)},
        },
    },
    "/v2/datasets/{dataset_id}": {
        "parameters": [path_param("dataset_id")],
        "get": {
            "summary": "Get a dataset with its versions (newest first), without examples",
            "responses": {**ok("The dataset", ref("Dataset")), **problems(404)},
        },
        "patch": {
            "summary": "Rename a dataset",
            "requestBody": json_body(ref("DatasetRename")),
            "responses": {**ok("The dataset", ref("Dataset")), **problems(400, 404, 409, 422)},
        },
        "delete": {
            "summary": "Delete a dataset with its versions, examples and experiments",
            "responses": {**NO_CONTENT, **problems(404)},
        },
    },
    "/v2/datasets/{dataset_id}/examples": {
        "parameters": [path_param("dataset_id")],
        "get": {
            "summary": "List a version's examples (default the latest version), oldest first",
            "parameters": list_parameters(
                query_param("dataset_version_id", "This version of the dataset (default the latest)."),
                maximum=EXAMPLES_PAGE_MAX),
            "responses": {**ok("A page of examples", list_envelope("examples", ref("DatasetExample"))),
                          **problems(400, 404)},
        },
        "post": {
            "summary": "Append examples to the latest version",
            "requestBody": json_body(ref("DatasetExamplesAppend")),
            "responses": {**ok("The new example ids", ref("DatasetExamplesAppended"), 201),
                          **problems(400, 404, 422)},
        },
        "patch": {
            "summary": "Update examples in place, or in a new version when new_version is given",
            "requestBody": json_body(ref("DatasetExamplesUpdate")),
            "responses": {**ok("The updated example ids", ref("DatasetExamplesUpdated")),
                          **problems(400, 404, 422)},
        },
        "delete": {
            "summary": "Delete examples from one version",
            "requestBody": json_body(ref("DatasetExamplesDelete")),
            "responses": {**ok("What was deleted", ref("DatasetExamplesDeleted")),
                          **problems(400, 404, 422)},
        },
    },
}
