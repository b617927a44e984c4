"""Seeding an emulator with an account given as plain API objects (a replica of a live account).

``seed(store, account)`` empties the store and fills it so that the emulator then answers every
read with the objects given: same ids, names, fields, versions, labels, examples, restrictions,
spaces and organizations. ``account`` is plain data in the API's read shapes (what
``ApiObject.raw()`` gives), so that this package needs nothing of the client or the planner::

    {
      "organizations": [{id, name, created_at?}],
      "spaces": [{id, name, organization_id, description?, created_at?}],
      "integrations": [an integration as GET /v2/integrations answers it],
      "prompts": [{id, name, description?, space_id, ..., "versions": [versions, newest first]}],
      "datasets": [{id, name, space_id, ..., "versions": [{id, name?, ...}, newest first]?,
                    "examples": [the latest version's examples: id, created_at, updated_at, fields]}],
      "evaluators": [{id, name, description?, space_id, ..., "versions": [versions, newest first]}],
      "experiments": [{id, name, dataset_id, space_id?, dataset_version_id?, created_at, updated_at?}],
      "restrictions": [{resource_type, resource_id, created_at?, space_id?}],
    }

What a read never shows is filled in where the emulator needs it: a write-only secret read as
present (``has_api_key: true``) is stored as ``PLACEHOLDER``, header names as headers whose
values are ``PLACEHOLDER`` (``has_headers: true`` as one placeholder header), a dataset without
``versions`` gets one version, a restriction's space is its prompt's (else the first space).
Missing timestamps read back as the seeding time. The id counters are moved past every seeded id
shaped like the emulator's own (``Kind:number:suffix`` in base64), so an object the replica
creates never takes a seeded id.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.emulator.core import Store, now
from reconciler.providers import AGENT_FIELDS, PROVIDERS, ConfigField

#: The value every write-only secret of a replica holds: a replica never sees a real one.
PLACEHOLDER = "(placeholder: a replica holds no secret)"
#: The header a replica stores for an AGENT whose headers read back only as ``has_headers: true``.
PLACEHOLDER_HEADER = "x-replica-placeholder"

Account = Mapping[str, Sequence[Mapping[str, Any]]]


def seed(store: Store, account: Account) -> None:
    """Empty ``store`` and fill it with ``account`` (module docstring), in one transaction."""
    stamp = now()
    with store.transaction():
        store.clear()
        spaces = [dict(s) for s in account.get("spaces", ())]
        for org in account.get("organizations", ()):
            store.insert("organization", {"id": org["id"], "name": org.get("name"),
                                          "created_at": org.get("created_at") or stamp})
        for space in spaces:
            store.insert("space", {"id": space["id"], "name": space["name"],
                                   "organization_id": space.get("organization_id"),
                                   "description": space.get("description"),
                                   "created_at": space.get("created_at") or stamp})
        # lists are newest first by insertion order: the oldest object goes in first
        for item in reversed(account.get("integrations", ())):
            doc = integration_doc(item, stamp)
            store.insert("integration", doc, parent=doc["type"])
        for item in reversed(account.get("prompts", ())):
            _seed_prompt(store, item, stamp)
        for item in reversed(account.get("datasets", ())):
            _seed_dataset(store, item, stamp)
        for item in reversed(account.get("evaluators", ())):
            _seed_evaluator(store, item, stamp)
        for item in reversed(account.get("experiments", ())):
            _seed_experiment(store, item, stamp)
        first_space = spaces[0]["id"] if spaces else None
        for item in account.get("restrictions", ()):  # this list is oldest first
            prompt = store.get("prompt", item["resource_id"])
            space_id = item.get("space_id") or (prompt["space_id"] if prompt else first_space)
            store.insert("restriction", {"id": item["resource_id"], "resource_type": item["resource_type"],
                                         "resource_id": item["resource_id"],
                                         "created_at": item.get("created_at") or stamp, "space_id": space_id})
        _move_counters(store)


# ---------------------------------------------------------------- integrations: read shape -> stored shape


def integration_doc(item: Mapping[str, Any], stamp: str) -> dict[str, Any]:
    """The stored document of an integration given in its read shape."""
    read_config = item.get("config") or {}
    if item["type"] == "AGENT":
        fields: Mapping[str, ConfigField] = AGENT_FIELDS
        config: dict[str, Any] = {}
    else:
        provider = PROVIDERS.get(str(read_config.get("provider")))
        fields = provider.fields if provider is not None else {}
        config = {"provider": read_config.get("provider")}
    for f in fields.values():
        config[f.name] = f.behaviour.stored(f, read_config, PLACEHOLDER, PLACEHOLDER_HEADER)
    doc: dict[str, Any] = {
        "id": item["id"], "type": item["type"], "name": item["name"],
        "scopings": [{"organization_id": s.get("organization_id"), "space_id": s.get("space_id")}
                     for s in item.get("scopings") or []],
        "config": config,
        "created_at": item.get("created_at") or stamp, "updated_at": item.get("updated_at") or stamp,
        "created_by_user_id": item.get("created_by_user_id"),
    }
    if item["type"] == "AGENT":
        doc["description"] = item.get("description")
    return doc


# ---------------------------------------------------------------- spaced kinds


def _seed_prompt(store: Store, item: Mapping[str, Any], stamp: str) -> None:
    prompt = {k: v for k, v in item.items() if k not in ("versions", "version")}
    prompt.setdefault("description", None)
    prompt.setdefault("created_at", stamp)
    prompt.setdefault("updated_at", prompt["created_at"])
    store.insert("prompt", prompt, parent=prompt.get("space_id"))
    for version in reversed(item.get("versions") or []):
        doc = {"prompt_id": prompt["id"], "model": None, "input_variable_format": "f_string",
               "invocation_params": {}, "provider_params": {}, "created_at": stamp, **copy.deepcopy(dict(version))}
        doc["labels"] = [label.get("name") if isinstance(label, Mapping) else label for label in doc.get("labels") or []]
        store.insert("prompt_version", doc, parent=prompt["id"])


def _seed_dataset(store: Store, item: Mapping[str, Any], stamp: str) -> None:
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


def _seed_evaluator(store: Store, item: Mapping[str, Any], stamp: str) -> None:
    evaluator = {k: v for k, v in item.items() if k not in ("versions", "version")}
    evaluator.setdefault("description", None)
    evaluator.setdefault("type", "template")
    evaluator.setdefault("created_at", stamp)
    evaluator.setdefault("updated_at", evaluator["created_at"])
    store.insert("evaluator", evaluator, parent=evaluator.get("space_id"))
    for version in reversed(item.get("versions") or []):
        doc = {"evaluator_id": evaluator["id"], "created_at": stamp, **copy.deepcopy(dict(version))}
        store.insert("evaluator_version", doc, parent=evaluator["id"])


def _seed_experiment(store: Store, item: Mapping[str, Any], stamp: str) -> None:
    dataset = store.get("dataset", item["dataset_id"]) or {}
    doc = {"space_id": dataset.get("space_id"), "dataset_version_id": None, "created_at": stamp,
           "run_count": 0, **dict(item)}
    doc.setdefault("updated_at", doc["created_at"])
    store.insert("experiment", doc, parent=item["dataset_id"])


# ---------------------------------------------------------------- ids


def _number_of(object_id: str) -> tuple[str, int] | None:
    """(Kind, number) of an id shaped like the emulator's own, else None."""
    try:
        kind, number, _ = base64.b64decode(object_id, validate=True).decode("ascii").split(":")
        return kind, int(number)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _move_counters(store: Store) -> None:
    highest: dict[str, int] = {}
    presets = [p["id"] for _, doc in store.scan("integration", parent="AGENT")
               for p in doc["config"].get("request_presets") or [] if isinstance(p, Mapping) and "id" in p]
    for object_id in [*store.ids(), *presets]:
        for part in object_id.split("/"):  # an example's store id is "<version id>/<example id>"
            found = _number_of(part)
            if found is not None:
                highest[found[0]] = max(highest.get(found[0], 0), found[1])
    for kind, number in highest.items():
        store.reserve(kind, number)
