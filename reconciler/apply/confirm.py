"""After apply: re-read exactly what apply touched and fold it into the live state the plan was made
from, so that a new plan can confirm convergence without reading the whole account again.

Per touched resource: an integration is one GET; a prompt one GET (it comes back with its latest
version and that version's labels); an evaluator one GET (with its latest version); a dataset its
examples (paged at 500) and, when retention deleted experiments, its experiments; any change to a
restriction re-lists the restrictions; a deleted resource is checked with a GET that must answer 404.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Callable
from typing import Any

from reconciler.client.http import ApiClient
from reconciler.client.live import (
    read_evaluator,
    read_examples,
    read_experiments,
    read_prompt,
    wanted_examples,
)
from reconciler.errors import ProblemError
from reconciler.kinds import DATASET, EVALUATOR, EXPERIMENT, INTEGRATION, PROMPT, RESTRICTION
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
_lock = threading.Lock()


def _gone(client: ApiClient, path: str) -> bool:
    try:
        client.get(path)
    except ProblemError as exc:
        if exc.status == 404:
            return True
        raise
    return False


def reread_touched(plan: Plan, live: LiveState, responses: dict[str, Any], client: ApiClient,
                   desired: ManifestSet | None = None) -> LiveState:
    """A copy of ``live`` with every resource the applied plan touched read again (examples
    compared with ``desired``'s as they arrive, as ``read_live`` does)."""
    fresh = copy.copy(live)
    fresh.integrations = dict(live.integrations)
    fresh.prompts = dict(live.prompts)
    fresh.datasets = dict(live.datasets)
    fresh.evaluators = dict(live.evaluators)
    fresh.restrictions = dict(live.restrictions)
    jobs: list[Callable[[], None]] = []
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

    client.map(lambda job: job(), jobs)
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


def _relist_integrations(fresh: LiveState, itype: str, client: ApiClient) -> Callable[[], None]:
    def run() -> None:
        items = client.paginate("/v2/integrations", "integrations", {"type": itype}, limit=LIST_LIMIT)
        with _lock:  # other jobs write this dict concurrently
            for k in [k for k in fresh.integrations if k[0] == itype]:
                del fresh.integrations[k]
            parsed = [LiveIntegration.read({"type": itype, **i}, "/v2/integrations") for i in items]
            fresh.integrations.update({(itype, i.name): i for i in parsed})

    return run


def _relist_restrictions(fresh: LiveState, client: ApiClient) -> Callable[[], None]:
    def run() -> None:
        listed = client.paginate("/v2/resource-restrictions", "resource_restrictions", limit=LIST_LIMIT)
        fresh.restrictions = {(r.resource_type, r.resource_id): r
                              for r in (RestrictionObject.read(item, "/v2/resource-restrictions") for item in listed)}

    return run


def _check_deleted(fresh: LiveState, op: Operation, client: ApiClient) -> Callable[[], None]:
    def run() -> None:
        if op.kind == RESTRICTION.name or not _gone(client, op.path):
            return
        resource_id = op.path.rsplit("/", 1)[1]
        tables: tuple[dict[tuple[str, str], Any], ...] = (fresh.integrations, fresh.prompts, fresh.datasets,
                                                          fresh.evaluators)
        for table in tables:
            with _lock:
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


def _reread(fresh: LiveState, key: list[str], ops: list[Operation], responses: dict[str, Any],
            client: ApiClient, wanted: dict[tuple[str, str], tuple[str, list[Any]]]) -> Callable[[], None]:
    kind = key[0]
    existing = fresh.integrations.get((key[1], key[2])) if kind == INTEGRATION.name else None
    created_obj = _created(ops, responses)
    created = str(created_obj["id"]) if created_obj and created_obj.get("id") else None

    def run() -> None:
        if kind == INTEGRATION.name:
            obj_id = created or (existing.id if existing is not None else None)
            if obj_id:
                got = LiveIntegration.read(client.get(f"/v2/integrations/{obj_id}"), f"/v2/integrations/{obj_id}")
                with _lock:
                    fresh.integrations[(key[1], key[2])] = got
                if created:  # a replacement removed the other type's object of that name
                    for t in ("LLM", "AGENT"):
                        if t != key[1] and (t, key[2]) in fresh.integrations and any(
                                op.action == "replace" for op in ops):
                            with _lock:
                                fresh.integrations.pop((t, key[2]), None)
        elif kind == PROMPT.name:
            current = fresh.prompts.get((key[1], key[2]))
            prompt_id = created or (current.id if current else None)
            if prompt_id:
                fresh.prompts[(key[1], key[2])] = read_prompt(client, prompt_id)
        elif kind == DATASET.name:
            current_d = fresh.datasets.get((key[1], key[2]))
            if current_d is None and created_obj and created:
                current_d = LiveDataset(dataset=DatasetObject.read(
                    {"name": key[2], "space_id": key[1], **created_obj}))
            if current_d is None:
                return
            dataset_id = current_d.id
            dataset = current_d.dataset
            if any(op.note == "rename" for op in ops):
                got = client.get(f"/v2/datasets/{dataset_id}")
                dataset = DatasetObject.read({k: v for k, v in got.items() if k != "versions"}, f"/v2/datasets/{dataset_id}")
            updated = LiveDataset(dataset=dataset, examples=current_d.examples, experiments=current_d.experiments,
                                  matched=current_d.matched, examples_digest=current_d.examples_digest)
            if any(op.kind != EXPERIMENT for op in ops):  # examples were written (or created)
                read_examples(client, updated, wanted.get((key[1], key[2])))
            if any(op.kind == EXPERIMENT for op in ops):
                updated.experiments = read_experiments(client, dataset_id)
            fresh.datasets[(key[1], key[2])] = updated
        elif kind == EVALUATOR.name:
            current_e = fresh.evaluators.get((key[1], key[2]))
            evaluator_id = created or (current_e.id if current_e else None)
            if evaluator_id:
                fresh.evaluators[(key[1], key[2])] = read_evaluator(client, evaluator_id)

    return run
