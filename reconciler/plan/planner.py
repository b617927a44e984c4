"""``make_plan``: desired resources + live state + options -> a Plan. Pure: no I/O."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from reconciler.errors import PlanError
from reconciler.kinds import DELETE_ORDER as DELETE_ORDER  # the executor orders deletes by it
from reconciler.kinds import INTEGRATION, KINDS
from reconciler.manifests.ignores import unmatched_warnings
from reconciler.model import DesiredResource, LiveState, ManifestSet
from reconciler.plan.context import KindPlan, PlanInput, error_line
from reconciler.plan.ignore import apply_ignores
from reconciler.plan.lifecycle import apply_renames, protect
from reconciler.plan.model import Operation, Plan, PlanOptions, Unmanaged
from reconciler.plan.pins import Fingerprints
from reconciler.plan.prune import plan_unmanaged
from reconciler.plan.registry import STEPS
from reconciler.plan.restrictions import restrictions_warning, unseen_restrictions
from reconciler.plan.select import select

#: Each registered kind's planner (``plan.registry``) runs in the registry's order: creates and updates
#: run in this kind order (an evaluator after the integration it names); deletes run after everything
#: else, in ``DELETE_ORDER``.
KIND_ORDER = KINDS


def make_plan(manifests: ManifestSet, live: LiveState, options: PlanOptions | None = None,
              now: datetime | None = None) -> Plan:
    options = options or PlanOptions()
    now = now or datetime.now(UTC)
    desired = list(manifests)
    warnings: list[str] = []
    if options.targets or options.excludes:
        desired = select(manifests, options.targets, options.excludes, live)
    if options.targets:
        warnings.append("--target limits this run to " + ", ".join(r.address for r in desired)
                        + "; the plan may be incomplete for everything else")
    selected = tuple(desired)
    desired, errors = _once_per_space(desired, live)
    view, renamed, rename_errors = apply_renames(desired, live)
    warnings.extend(unmatched_warnings(desired, manifests.ownership))  # the fields as declared, not as left live
    desired, ignored = apply_ignores(desired, view, manifests.ownership)
    unseen = unseen_restrictions(desired, view, options)
    if unseen or options.restrictions == "skip":
        options = replace(options, restrictions="skip")  # recorded: apply leaves them out too
        if unseen:
            warnings.append(restrictions_warning(unseen))
    planned = KindPlan(errors=[*errors, *rename_errors], warnings=warnings)
    for kind in KINDS:
        inputs = PlanInput(live=view, options=options, now=now, desired=selected,
                           renamed=renamed, restrictions_hidden=options.restrictions == "skip", earlier=planned)
        planned = planned.merge(STEPS[kind].plan([r for r in desired if r.kind == kind], inputs))
    unmanaged: list[Unmanaged] = []
    if not options.targets:  # a targeted plan is partial: nothing else is listed or pruned
        pruned, unmanaged = plan_unmanaged(desired, PlanInput(live=view, options=options, now=now, desired=selected),
                                           manifests.ownership)
        planned = planned.merge(pruned)
    ops, protect_errors, protect_warnings = protect(planned.ops, desired, manifests.ownership)
    if planned.errors or protect_errors:
        raise PlanError("cannot plan:\n" + "\n".join(f"  {e}" for e in [*planned.errors, *protect_errors]))
    return Plan(
        operations=tuple(order([op for op in ops if not changes_nothing(op)])),
        unverified_secrets=tuple(planned.unverified),
        warnings=(*planned.warnings, *protect_warnings),
        fingerprints=Fingerprints(planned.pins, live),
        pins=dict(planned.pins),
        scope=manifests.read_scope(),
        manifests=tuple(manifests.paths),
        options=options,
        unmanaged=tuple(unmanaged),
        owner=manifests.ownership.name if manifests.ownership else None,
        ignored=tuple(ignored),
    )


def changes_nothing(op: Operation) -> bool:
    """A call that would change nothing, never sent: examples calls that move no example and make no
    version, a PATCH carrying nothing but the integration's ``type`` (which the API needs beside any
    change). A dataset version made by a PATCH with ``new_version`` and no examples is a change."""
    body = op.body if isinstance(op.body, dict) else None
    if body is None:
        return False
    if op.path.endswith("/examples") and not body.get("new_version"):
        moved = body.get("examples") if op.method in ("POST", "PATCH") else body.get("example_ids")
        return isinstance(moved, list) and not moved
    return op.method == "PATCH" and op.kind == INTEGRATION.name and set(body) <= {"type"}


def _once_per_space(desired: list[DesiredResource], live: LiveState) -> tuple[list[DesiredResource], list[str]]:
    """A resource declared twice, its space written once by name and once by id: the validator
    cannot know they are one space, live state does. The second is an error (and not planned)."""
    seen: dict[tuple[str, str, str], DesiredResource] = {}
    out: list[DesiredResource] = []
    errors: list[str] = []
    for r in desired:
        space_id = live.space_id(str(r.space)) if r.space else None
        key = (r.kind, space_id, r.name) if space_id else None
        first = seen.get(key) if key else None
        if first is not None:
            where = first.source("space")
            errors.append(error_line(r, "space", f"declares {first.address} again (space {r.space!r} is space "
                                     f"{first.space!r}" + (f", declared at {where}" if where else "")
                                     + "); declare it once"))
            continue
        if key:
            seen[key] = r
        out.append(r)
    return out, errors


def order(ops: list[Operation]) -> list[Operation]:
    """Execution order: creates and updates first (kind order, then as planned), deletes last in
    reverse dependency order; then a stable topological pass so every op follows its depends_on."""
    def rank(op: Operation) -> tuple[int, int]:
        if op.action == "delete":
            return (1, DELETE_ORDER.index(op.kind) if op.kind in DELETE_ORDER else len(DELETE_ORDER))
        return (0, KIND_ORDER.index(op.kind) if op.kind in KIND_ORDER else len(KIND_ORDER))

    staged = sorted(enumerate(ops), key=lambda iop: (rank(iop[1]), iop[0]))
    pending = [op for _, op in staged]
    ids = {op.id for op in pending}
    done: set[str] = set()
    out: list[Operation] = []
    while pending:
        for i, op in enumerate(pending):
            if all(d in done or d not in ids for d in op.depends_on):
                out.append(op)
                done.add(op.id)
                del pending[i]
                break
        else:
            raise PlanError("dependency cycle among: " + ", ".join(op.id for op in pending))
    return out
