"""After apply: re-read exactly what apply touched and fold it into the live state the plan was made
from, so that a new plan can confirm convergence without reading the whole account again.

Per touched resource: an integration is one GET; a prompt one GET (it comes back with its latest
version and that version's labels); an evaluator one GET (with its latest version); a dataset its
examples (paged at 500) and, when retention deleted experiments, its experiments; any change to a
restriction re-lists the restrictions; an object of any other kind one GET; a deleted resource is
checked with a GET that must answer 404.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from reconciler.client.http import ApiClient
from reconciler.client.live import (
    Task,
    read_evaluator,
    read_examples,
    read_experiments,
    read_object,
    read_prompt,
    run_tasks,
    wanted_examples,
)
from reconciler.errors import ProblemError
from reconciler.kinds import EXPERIMENT, INTEGRATION, KIND_SPECS, RESTRICTION
from reconciler.model import (
    DatasetObject,
    LiveDataset,
    LiveIntegration,
    LiveState,
    ManifestSet,
    RestrictionObject,
)
from reconciler.plan.model import Operation, Plan

EXAMPLES_LIMIT = 500
LIST_LIMIT = 100


async def _gone(client: ApiClient, path: str) -> bool:
    try:
        await client.get(path)
    except ProblemError as exc:
        if exc.status == 404:
            return True
        raise
    return False


async def reread_touched(plan: Plan, live: LiveState, responses: dict[str, Any], client: ApiClient,
                   desired: ManifestSet | None = None) -> LiveState:
    """A copy of ``live`` with every resource the applied plan touched read again (examples
    compared with ``desired``'s as they arrive, as ``read_live`` does)."""
    fresh = live.copy()
    jobs: list[Task] = []
    by_address: dict[str, list[Operation]] = {}
    for op in plan.operations:
        by_address.setdefault(op.address, []).append(op)
    relist = _integration_types_to_relist(plan, by_address, live)
    jobs.extend(_relist_integrations(fresh, t, client) for t in sorted(relist))
    if any(op.path.startswith("/v2/resource-restrictions") for op in plan.operations):
        jobs.append(_relist_restrictions(fresh, client))

    wanted = wanted_examples(desired, fresh) if desired is not None else {}
    for address, ops in by_address.items():
        key = plan.pins.get(address)
        if key and key[0] == INTEGRATION.name and key[1] in relist:
            continue  # the list re-read covers it
        deletes = [op for op in ops if op.method == "DELETE" and op.action == "delete" and op.kind != EXPERIMENT]
        if deletes:  # pruned: it must be gone
            jobs.extend(_check_deleted(fresh, op, client) for op in deletes
                        if not (op.kind == INTEGRATION.name and _type_of(live, op.path) in relist))
            continue
        if key is None:
            continue
        jobs.append(_reread(fresh, key, ops, responses, client, wanted))

    await run_tasks(jobs)
    return fresh


def _type_of(live: LiveState, path: str) -> str | None:
    """The type of the live integration a path names (``/v2/integrations/{id}``)."""
    resource_id = path.rsplit("/", 1)[1]
    return next((t for (t, _), obj in live.integrations.items() if obj.id == resource_id), None)


def _pages(n: int) -> int:
    return max(1, math.ceil(n / LIST_LIMIT))


def _integration_types_to_relist(plan: Plan, by_address: dict[str, list[Operation]], live: LiveState) -> set[str]:
    """Integration types for which re-listing (one request a page) is cheaper than one GET per
    touched integration of that type. A replacement or prune touches both types: relist both."""
    touched: dict[str, int] = {}
    for address, ops in by_address.items():
        if ops[0].kind != INTEGRATION.name:
            continue
        key = plan.pins.get(address)
        types = ("LLM", "AGENT") if key is None or any(op.action in ("replace", "delete") for op in ops) else (key[1],)
        for t in types:
            touched[t] = touched.get(t, 0) + 1
    return {t for t, n in touched.items()
            if n > _pages(sum(1 for k in live.integrations if k[0] == t) + n)}


def _relist_integrations(fresh: LiveState, itype: str, client: ApiClient) -> Task:
    async def run() -> None:
        items = await client.paginate("/v2/integrations", "integrations", {"type": itype}, limit=LIST_LIMIT)
        for k in [k for k in fresh.integrations if k[0] == itype]:
            del fresh.integrations[k]
        parsed = [LiveIntegration.read({"type": itype, **i}, "/v2/integrations") for i in items]
        fresh.integrations.update({(itype, i.name): i for i in parsed})

    return run


def _relist_restrictions(fresh: LiveState, client: ApiClient) -> Task:
    async def run() -> None:
        listed = await client.paginate("/v2/resource-restrictions", "resource_restrictions", limit=LIST_LIMIT)
        fresh.restrictions = {(r.resource_type, r.resource_id): r
                              for r in (RestrictionObject.read(item, "/v2/resource-restrictions") for item in listed)}

    return run


def _check_deleted(fresh: LiveState, op: Operation, client: ApiClient) -> Task:
    async def run() -> None:
        if op.kind == RESTRICTION.name or not await _gone(client, op.path):
            return
        resource_id = op.path.rsplit("/", 1)[1]
        for table in (fresh.table(spec.name) for spec in KIND_SPECS.values() if spec is not RESTRICTION):
            for k in [k for k, v in table.items() if v.id == resource_id]:
                table.pop(k, None)

    return run


def _created(ops: list[Operation], responses: dict[str, Any]) -> dict[str, Any] | None:
    """The response of the resource's create, when the plan created it."""
    for op in ops:
        if op.method == "POST" and op.id.endswith("#create") and isinstance(responses.get(op.id), dict):
            found: dict[str, Any] = responses[op.id]
            return found
    return None


@dataclass(frozen=True)
class _Touched:
    """A resource the plan touched: its pin key, its operations, what its create answered."""

    fresh: LiveState
    key: list[str]
    ops: list[Operation]
    created_obj: dict[str, Any] | None
    client: ApiClient
    wanted: dict[tuple[str, str], tuple[str, list[Any]]]
    existing: Any  # the live object before any re-read ran (an integration's list may be re-read meanwhile)

    @property
    def created(self) -> str | None:
        return str(self.created_obj["id"]) if self.created_obj and self.created_obj.get("id") else None

    @property
    def live_key(self) -> tuple[str, str]:
        return (self.key[1], self.key[2])


def _reread(fresh: LiveState, key: list[str], ops: list[Operation], responses: dict[str, Any],
            client: ApiClient, wanted: dict[tuple[str, str], tuple[str, list[Any]]]) -> Task:
    existing = fresh.table(key[0]).get((key[1], key[2]))
    touched = _Touched(fresh, key, ops, _created(ops, responses), client, wanted, existing)
    return lambda: REREADS.get(key[0], _reread_object)(touched)


async def _reread_integration(t: _Touched) -> None:
    obj_id = t.created or (t.existing.id if t.existing is not None else None)
    if not obj_id:
        return
    got = LiveIntegration.read(await t.client.get(f"/v2/integrations/{obj_id}"), f"/v2/integrations/{obj_id}")
    t.fresh.integrations[t.live_key] = got
    if t.created and any(op.action == "replace" for op in t.ops):  # the other type's object of that name went
        for other in ("LLM", "AGENT"):
            if other != t.key[1] and (other, t.key[2]) in t.fresh.integrations:
                t.fresh.integrations.pop((other, t.key[2]), None)


def _reread_by_id(read: Callable[[ApiClient, str], Awaitable[Any]]) -> Callable[[_Touched], Awaitable[None]]:
    """A prompt or an evaluator: read again by id (its create's, else the live one's) with its latest version."""
    async def reread(t: _Touched) -> None:
        table = t.fresh.table(t.key[0])
        current = table.get(t.live_key)
        obj_id = t.created or (current.id if current else None)
        if obj_id:
            table[t.live_key] = await read(t.client, obj_id)
    return reread


async def _reread_object(t: _Touched) -> None:
    """A kind without a re-read of its own: its object read again by id (``GET collection/{id}``)."""
    await _reread_by_id(lambda client, object_id: read_object(client, t.key[0], object_id))(t)


async def _nothing(t: _Touched) -> None:
    """Restrictions are listed again as a whole (``_relist_restrictions``), not one by one."""


async def _reread_dataset(t: _Touched) -> None:
    current = t.fresh.datasets.get(t.live_key)
    if current is None and t.created_obj and t.created:
        current = LiveDataset(dataset=DatasetObject.read({"name": t.key[2], "space_id": t.key[1], **t.created_obj}))
    if current is None:
        return
    dataset = current.dataset
    if any(op.note == "rename" for op in t.ops):
        got = await t.client.get(f"/v2/datasets/{current.id}")
        dataset = DatasetObject.read({k: v for k, v in got.items() if k != "versions"}, f"/v2/datasets/{current.id}")
    updated = replace(current, dataset=dataset)
    if any(op.kind != EXPERIMENT for op in t.ops):  # examples were written (or created)
        await read_examples(t.client, updated, t.wanted.get(t.live_key))
    if any(op.kind == EXPERIMENT for op in t.ops):
        updated.experiments = await read_experiments(t.client, current.id)
    t.fresh.datasets[t.live_key] = updated


#: How a registered kind (``reconciler.kinds``) is read again after apply, when not as one object by
#: id (``_reread_object``); restrictions are listed again as a whole (``_relist_restrictions``)
#: whenever the plan touched one.
REREADS: Mapping[str, Callable[[_Touched], Awaitable[None]]] = {
    "Integration": _reread_integration, "Prompt": _reread_by_id(read_prompt), "Dataset": _reread_dataset,
    "Evaluator": _reread_by_id(read_evaluator), "ResourceRestriction": _nothing,
}
