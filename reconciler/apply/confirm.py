"""After apply: re-read exactly what apply touched and fold it into the live state the plan was made
from, so that a new plan can confirm convergence without reading the whole account again.

Per touched resource: an integration is one GET; a prompt one GET (it comes back with its latest
version and that version's labels); an evaluator one GET (with its latest version); a dataset its
examples (paged at 500) and, when retention deleted experiments, its experiments; any change to a
restriction re-lists the restrictions; a deleted resource is checked with a GET that must answer 404.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from reconciler.client.http import ApiClient
from reconciler.client.live import labels_of
from reconciler.errors import ProblemError
from reconciler.model import LiveDataset, LiveEvaluator, LivePrompt, LiveState
from reconciler.plan.model import Operation, Plan
from reconciler.plan.pins import pin_value

EXAMPLES_LIMIT = 500
LIST_LIMIT = 100


def _gone(client: ApiClient, path: str) -> bool:
    try:
        client.get(path)
    except ProblemError as exc:
        if exc.status == 404:
            return True
        raise
    return False


def reread_touched(plan: Plan, live: LiveState, responses: dict[str, Any], client: ApiClient) -> LiveState:
    """A copy of ``live`` with every resource the applied plan touched read again."""
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
    relist_restrictions = any(op.path.startswith("/v2/resource-restrictions") for op in plan.operations)

    for address, ops in by_address.items():
        key = plan.pins.get(address)
        deletes = [op for op in ops if op.method == "DELETE" and op.action == "delete" and op.kind != "Experiment"]
        if deletes:  # pruned: it must be gone
            jobs.extend(_check_deleted(fresh, op, client) for op in deletes)
            continue
        if key is None:
            continue
        jobs.append(_reread(fresh, key, ops, responses, client))

    client.map(lambda job: job(), jobs)
    if relist_restrictions:
        fresh.restrictions = {
            (str(r.get("resource_type")), str(r.get("resource_id"))): r
            for r in client.paginate("/v2/resource-restrictions", "resource_restrictions", limit=LIST_LIMIT)
        }
    return fresh


def _check_deleted(fresh: LiveState, op: Operation, client: ApiClient) -> Callable[[], None]:
    def run() -> None:
        if op.kind == "ResourceRestriction" or not _gone(client, op.path):
            return
        resource_id = op.path.rsplit("/", 1)[1]
        for table in (fresh.integrations, fresh.prompts, fresh.datasets, fresh.evaluators):
            for k, v in list(table.items()):
                obj = v if isinstance(v, dict) else getattr(v, op.kind.lower(), {})
                if isinstance(obj, dict) and obj.get("id") == resource_id:
                    del table[k]

    return run


def _created(ops: list[Operation], responses: dict[str, Any]) -> dict[str, Any] | None:
    """The response of the resource's create, when the plan created it."""
    for op in ops:
        if op.method == "POST" and op.id.endswith("#create") and isinstance(responses.get(op.id), dict):
            found: dict[str, Any] = responses[op.id]
            return found
    return None


def _reread(fresh: LiveState, key: list[str], ops: list[Operation], responses: dict[str, Any],
            client: ApiClient) -> Callable[[], None]:
    kind = key[0]
    existing = pin_value(key, fresh)
    created_obj = _created(ops, responses)
    created = str(created_obj["id"]) if created_obj and created_obj.get("id") else None

    def run() -> None:
        if kind == "Integration":
            obj_id = created or (existing or {}).get("id")
            if obj_id:
                fresh.integrations[(key[1], key[2])] = client.get(f"/v2/integrations/{obj_id}")
                if created:  # a replacement removed the other type's object of that name
                    for t in ("LLM", "AGENT"):
                        if t != key[1] and (t, key[2]) in fresh.integrations and any(
                                op.action == "replace" for op in ops):
                            del fresh.integrations[(t, key[2])]
        elif kind == "Prompt":
            current = fresh.prompts.get((key[1], key[2]))
            prompt_id = created or (current.prompt.get("id") if current else None)
            if prompt_id:
                got = client.get(f"/v2/prompts/{prompt_id}")
                version = got.pop("version", None)
                fresh.prompts[(key[1], key[2])] = LivePrompt(prompt=got, latest=version,
                                                             labels=labels_of([version] if version else []))
        elif kind == "Dataset":
            current_d = fresh.datasets.get((key[1], key[2]))
            if current_d is None and created_obj and created:
                current_d = LiveDataset(dataset={"name": key[2], "space_id": key[1], **created_obj})
            if current_d is None:
                return
            dataset_id = current_d.dataset["id"]
            updated = LiveDataset(dataset=current_d.dataset, experiments=current_d.experiments)
            updated.examples = client.paginate(f"/v2/datasets/{dataset_id}/examples", "examples",
                                               limit=EXAMPLES_LIMIT)
            if any(op.kind == "Experiment" for op in ops):
                updated.experiments = client.paginate("/v2/experiments", "experiments", {"dataset_id": dataset_id},
                                                      limit=LIST_LIMIT)
            fresh.datasets[(key[1], key[2])] = updated
        elif kind == "Evaluator":
            current_e = fresh.evaluators.get((key[1], key[2]))
            evaluator_id = created or (current_e.evaluator.get("id") if current_e else None)
            if evaluator_id:
                got = client.get(f"/v2/evaluators/{evaluator_id}")
                version = got.pop("version", None)
                fresh.evaluators[(key[1], key[2])] = LiveEvaluator(evaluator=got, latest=version)

    return run
