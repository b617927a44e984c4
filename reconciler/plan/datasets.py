"""Datasets: create with its examples in one POST. Examples are matched by ``key`` (or by content
when there is no key) and changed with at most one update, one append and one delete call (batched
to the API's limits). Any change of examples makes exactly one new dataset version: the update call
goes first with ``new_version`` (an empty update just snapshots), so the version past experiments used
stays intact; append and delete then act on the new version.

Experiment retention: an experiment of the dataset is deleted when it is older than
``older_than_days`` and not among the ``keep_last`` newest; each rule alone applies alone.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import MISSING

from reconciler.essence import same_example, user_fields
from reconciler.manifests.models import Retention
from reconciler.model import DesiredResource, ExperimentObject, LiveDataset, LiveState
from reconciler.plan.changes import nested_changes
from reconciler.plan.context import KindPlan, PlanInput, Planning, canonical, change, dataset_doc
from reconciler.plan.liveview import ExamplesEdit, ResourceDiff, found_in_space
from reconciler.plan.model import APPLY_TIME, Change, ref
from reconciler.plan.steps import KindSteps

DELETE_BATCH = 1000  # DELETE /v2/datasets/{id}/examples accepts 1-1000 ids
WRITE_BATCH = 1000  # examples per append/update call


def plan_datasets(desired: list[DesiredResource], inputs: PlanInput) -> KindPlan:
    ctx = Planning(inputs)
    for r in desired:
        space_id = ctx.space_id(r)
        if space_id is None:
            continue
        doc = dataset_doc(r)
        live = ctx.live.datasets.get((space_id, r.name))
        ctx.pin(r, ["Dataset", space_id, r.name])
        if live is None:
            if doc.examples is not MISSING:
                ctx.op(r, "create", "POST", "/v2/datasets", action="create",
                       body={"name": r.name, "space_id": space_id, "examples": list(doc.examples)},
                       changes=[change(r, "examples", None, f"{len(doc.examples)} examples")])
            continue
        if live.dataset.name != r.name:  # renamed from an alias: the id (and every version) kept
            ctx.op(r, "rename", "PATCH", f"/v2/datasets/{live.id}", body={"name": r.name},
                   changes=[change(r, "name", live.dataset.name, r.name)], note="rename")
        if doc.examples is not MISSING and live.examples is not None:
            _plan_examples(r, ctx, live)
        if doc.experiment_retention not in (None, MISSING) and live.experiments is not None:
            _plan_retention(r, ctx, live)
    return ctx



@dataclass
class _Matched:
    """What the examples need, and the changes each call carries."""

    updates: list[dict[str, Any]] = field(default_factory=list)  # [{id, ...fields}]
    appends: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)  # example ids
    updated: list[Change] = field(default_factory=list)
    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)


def _match(r: DesiredResource, live: list[dict[str, Any]], matched: set[Any] | None = None) -> _Matched:
    """``matched``: the keys of live examples already found equal to their declared one while
    reading (``client.live.read_examples``), which ``live`` does not hold: nothing to do for them."""
    doc = dataset_doc(r)
    want: list[dict[str, Any]] = [] if doc.examples is MISSING else doc.examples
    key = None if doc.key is MISSING else doc.key
    out = _Matched()
    if key and not live and matched is not None and len(matched) == len(want):
        return out  # every declared example was found equal while reading (their keys are unique)
    if key:
        by_key = {e.get(key): e for e in live if key in e}
        keep: set[str] = set()
        for i, e in enumerate(want):
            match = by_key.get(e.get(key))
            if match is None and matched and e.get(key) in matched:
                continue
            if match is None:
                out.appends.append(e)
                out.added.append(Change(f"examples[{key}={e.get(key)}]", None, e, _src(r, i)))
                continue
            keep.add(str(match["id"]))
            if not same_example(match, e):
                out.updates.append({"id": match["id"], **e})  # the fields that differ, each its own change
                out.updated.extend(nested_changes(user_fields(match), e, f"examples[{key}={e.get(key)}]",
                                                  _src(r, i)))
        for e in live:
            if str(e["id"]) not in keep:
                out.deletes.append(str(e["id"]))
                out.removed.append(Change(f"examples[{key}={e.get(key)}]", user_fields(e), None, _src(r)))
        return out
    missing, pool = match_by_content(live, want)
    for i in missing:
        out.appends.append(want[i])
        out.added.append(Change("examples[+]", None, want[i], _src(r, i)))
    for bucket in pool.values():
        for e in bucket:
            out.deletes.append(str(e["id"]))
            out.removed.append(Change("examples[-]", user_fields(e), None, _src(r)))
    return out


def _src(r: DesiredResource, index: int | None = None) -> str | None:
    """Where an example is written (its line in the examples file, or inline); for an example
    that only live has, where the manifest gives its examples."""
    s = r.source("examples" if index is None else f"examples.{index}")
    return str(s) if s else None


def _plan_examples(r: DesiredResource, ctx: Planning, live: LiveDataset) -> None:
    m = _match(r, live.examples or [], live.matched)
    updates, appends, deletes = m.updates, m.appends, m.deletes
    if not (updates or appends or deletes):
        return
    path = f"/v2/datasets/{live.id}/examples"
    version_name = ctx.options.version_name or APPLY_TIME
    first_updates, more_updates = updates[:WRITE_BATCH], updates[WRITE_BATCH:]
    snapshot = ctx.op(r, "examples-version", "PATCH", path,
                      body={"examples": first_updates, "new_version": version_name},
                      changes=m.updated,
                      note=f"new dataset version; {len(updates)} updated, {len(appends)} added, {len(deletes)} removed")
    last = snapshot.id
    for i in range(0, len(more_updates), WRITE_BATCH):
        last = ctx.op(r, f"examples-update-{i // WRITE_BATCH + 2}", "PATCH", path,
                      body={"examples": more_updates[i:i + WRITE_BATCH]}, depends_on=[last]).id
    for i in range(0, len(appends), WRITE_BATCH):
        last = ctx.op(r, "examples-append" + (f"-{i // WRITE_BATCH + 1}" if i else ""), "POST", path,
                      body={"examples": appends[i:i + WRITE_BATCH]}, depends_on=[last],
                      changes=m.added if i == 0 else []).id
    for i in range(0, len(deletes), DELETE_BATCH):
        last = ctx.op(r, "examples-delete" + (f"-{i // DELETE_BATCH + 1}" if i else ""), "DELETE", path,
                      body={"dataset_version_id": ref(snapshot.id, "dataset_version_id"),
                            "example_ids": deletes[i:i + DELETE_BATCH]},
                      changes=m.removed if i == 0 else [], depends_on=[last]).id


def _parse_time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def experiments_to_delete(experiments: list[ExperimentObject], rule: Retention,
                          now: datetime) -> list[ExperimentObject]:
    """Retention: delete when older than ``older_than_days`` and not among the ``keep_last`` newest
    (each rule alone applies alone). Experiments without a readable ``created_at`` are kept."""
    dated = [(t, e) for e in experiments if (t := _parse_time(e.created_at)) is not None]
    dated.sort(key=lambda te: (te[0], te[1].id), reverse=True)
    keep_last = None if rule.keep_last is MISSING else rule.keep_last
    older = None if rule.older_than_days is MISSING else rule.older_than_days
    out: list[ExperimentObject] = []
    for index, (created, e) in enumerate(dated):
        protected_by_rank = keep_last is not None and index < int(keep_last)
        old_enough = older is None or created < now - timedelta(days=int(older))
        if not protected_by_rank and old_enough:
            out.append(e)
    return out


def retention_reason(e: ExperimentObject, rule: Retention) -> str:
    """Why retention deletes an experiment, in the rule's words."""
    created = (e.created_at or "?")[:10]
    why = [f"older than {rule.older_than_days} days"] if rule.older_than_days is not MISSING else []
    if rule.keep_last is not MISSING:
        why.append(f"not among the {rule.keep_last} newest")
    return f"experiment {e.name} (created {created}): {' and '.join(why)}"


def _plan_retention(r: DesiredResource, ctx: Planning, live: LiveDataset) -> None:
    rule = dataset_doc(r).experiment_retention
    if rule is None or rule is MISSING:
        return
    for e in experiments_to_delete(live.experiments or [], rule, ctx.inputs.now):
        ctx.op(r, f"retention-{e.id}", "DELETE", f"/v2/experiments/{e.id}", action="delete",
               kind="Experiment", name=str(e.name), note="experiment retention",
               changes=[change(r, "experiment_retention", retention_reason(e, rule), None)])


def match_by_content(live: list[dict[str, Any]], want: list[Any]
                     ) -> tuple[list[int], dict[str, list[dict[str, Any]]]]:
    """Examples without a key, matched by content as a multiset: the indices of ``want`` that no
    live example equals, and the live examples left over (by content). The planner appends the
    first and deletes the second; ``liveview`` (pull) does the reverse."""
    pool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in live:
        pool[canonical(user_fields(e))].append(e)
    missing: list[int] = []
    for i, e in enumerate(want):
        bucket = pool.get(canonical(e))
        if bucket:
            bucket.pop()
        else:
            missing.append(i)
    return missing, pool


def _compare(r: DesiredResource, live: LiveState, out: ResourceDiff) -> None:
    """How live differs from a declared dataset's examples (``KindSteps.compare``)."""
    obj: LiveDataset | None = found_in_space(r, live, out)
    if obj is None:
        return
    doc = dataset_doc(r)
    want = doc.examples
    if want is MISSING or obj.examples is None:
        return
    key = None if doc.key is MISSING else doc.key
    edit = ExamplesEdit()
    if key:
        matched = obj.matched or set()
        by_key = {e.get(key): e for e in obj.examples if key in e}
        declared: set[Any] = set()
        for i, e in enumerate(want):
            declared.add(canonical(e.get(key)))
            m = by_key.get(e.get(key))
            if m is None:
                if e.get(key) not in matched:
                    edit.delete.append(i)
            elif not same_example(m, e):
                edit.replace[i] = user_fields(m)
        edit.append = [user_fields(e) for e in obj.examples if canonical(e.get(key)) not in declared]
    else:
        missing, pool = match_by_content(obj.examples, want)
        edit.delete.extend(missing)
        left = {id(e) for bucket in pool.values() for e in bucket}
        edit.append = [user_fields(e) for e in obj.examples if id(e) in left]
    if edit:
        out.examples = edit


def _pin(d: LiveDataset, live: LiveState) -> list[Any]:
    experiments = sorted(e.id for e in d.experiments or [])
    digest = d.examples_digest if d.examples_digest is not None else examples_digest(d.examples)
    return [d.id, d.dataset.name, digest, experiments]


def examples_digest(examples: list[dict[str, Any]] | None) -> str | None:
    """Examples change their ``updated_at`` when they change: ids and stamps identify the set,
    and hashing them is far cheaper than hashing every example's fields. (``read_examples``
    computes the same digest as the pages arrive: ``LiveDataset.examples_digest``.)"""
    if examples is None:
        return None
    joined = "\n".join(f"{e.get('id')}|{e.get('updated_at')}" for e in examples)
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


STEPS = KindSteps(plan=plan_datasets, pin=_pin, compare=_compare)
