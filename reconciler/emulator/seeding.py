"""Seeding an emulator with an account given as plain API objects (a replica of a live account).

``seed(store, account)`` empties the store and fills it so that the emulator then answers every
read with the objects given: same ids, names, fields, versions, labels, examples, restrictions,
spaces and organizations. ``account`` is plain data in the API's read shapes (what
``ApiObject.raw()`` gives), so that this package needs nothing of the client or the planner: the
organizations and spaces, then each resource kind's objects (``reconciler.kinds``) under its
``KindSpec.table``, as the kind's list answers them, a spaced kind's with their ``space_id``::

    {
      "organizations": [{id, name, created_at?}],
      "spaces": [{id, name, organization_id, description?, created_at?}],
      "integrations": [an integration as GET /v2/integrations answers it],
      "prompts": [{id, name, description?, space_id, ..., "versions": [versions, newest first]}],
      "datasets": [{id, name, space_id, ..., "versions": [{id, name?, ...}, newest first]?,
                    "examples": [the latest version's examples: id, created_at, updated_at, fields],
                    "experiments": [{id, name, dataset_id?, ..., created_at, updated_at?}, newest first]?}],
      "evaluators": [{id, name, description?, space_id, ..., "versions": [versions, newest first]}],
      "restrictions": [{resource_type, resource_id, created_at?, space_id?}],
      TABLE: [the objects of any other kind, as its list answers them],
    }

Each kind's objects are stored by its emulator module (``app.KIND_MODULES``, its ``seed``), in the
registry's order (a restriction after the prompt it names). What a read never shows is filled in
there, where the emulator needs it: a write-only secret read as present is stored as a placeholder
(``integrations.PLACEHOLDER``), a dataset without ``versions`` gets one version, a restriction's space
is its prompt's (else the first space); missing timestamps read back as the seeding time. The id
counters are moved past every seeded id shaped like the emulator's own (``Kind:number:suffix`` in
base64), so an object the replica creates never takes a seeded id.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.emulator.app import KIND_MODULES
from reconciler.emulator.core import Store, now
from reconciler.kinds import KIND_SPECS

Account = Mapping[str, Sequence[Mapping[str, Any]]]


def seed(store: Store, account: Account) -> None:
    """Empty ``store`` and fill it with ``account`` (module docstring), in one transaction."""
    stamp = now()
    with store.transaction():
        store.clear()
        for org in account.get("organizations", ()):
            store.insert("organization", {"id": org["id"], "name": org.get("name"),
                                          "created_at": org.get("created_at") or stamp})
        for space in account.get("spaces", ()):
            store.insert("space", {"id": space["id"], "name": space["name"],
                                   "organization_id": space.get("organization_id"),
                                   "description": space.get("description"),
                                   "created_at": space.get("created_at") or stamp})
        for spec in KIND_SPECS.values():
            KIND_MODULES[spec.name].seed(store, account.get(spec.table, ()), stamp)
        _move_counters(store)


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
