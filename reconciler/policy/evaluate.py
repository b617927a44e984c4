"""Policy rules evaluated on a plan (README.md, "Guardrails"): which fire, and what that allows.

A rule is evaluated once per resource the plan touches (the block a plan shows: all the calls of
one object), with ``op`` (its action, kind, name, space, address and changes), ``before`` and
``after`` (its managed fields, live and desired, manifest-shaped, secrets as ``(sensitive)``; null
when absent) and ``plan`` (``summary`` counts). A rule with no ``match`` whose condition reads only
``plan`` is evaluated once for the plan.

``before`` is what the plan read live, in the manifest's shape: the desired fields with each change's
``before`` put back (a field that does not differ is the same live; an example the plan adds, removes
or changes is taken out, put back or changed in ``examples``). A deleted resource has only its
``kind``, ``name`` and ``space``. A field the API does not store (``KindSpec.unstored``: experiment
retention) has no live value: ``before`` has it only as the tree declared it at ``--since REF``
(``earlier``), and a resource whose such field changed since REF is judged even when the plan has no
call for it (an ``update`` whose ``op.changes`` are those fields). A condition that cannot be
evaluated on a resource (it selects a field that resource does not have, e.g. ``before`` on a
create) is false there: write ``has(...)`` or match ``actions`` to say what applies where.

Values are converted to CEL only when a rule that matched needs them, so ten rules over a plan of
thousands of resources cost little (``benchmarks/policy_bench.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from reconciler.errors import PlanError
from reconciler.kinds import KIND_SPECS
from reconciler.manifests import policy_fields as F
from reconciler.manifests.policies import CompiledRule
from reconciler.model import DesiredResource, ManifestSet, SecretRef
from reconciler.plan.changes import nested_changes
from reconciler.plan.model import SENSITIVE, Change, Operation, Plan, Verdict

_ORDER = ("replace", "delete", "create", "update")


@dataclass
class Subject:
    """One object the plan touches: all its calls, their changes, the dominant action; ``extra``:
    the changes of fields the API does not store, which no call carries."""

    address: str
    action: str
    kind: str
    name: str
    space: str | None
    ops: list[Operation] = field(default_factory=list)
    extra: list[Change] = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        return [c for op in self.ops for c in op.changes] + self.extra


def subjects(plan: Plan, unstored: Mapping[str, tuple[DesiredResource, list[Change]]] | None = None
             ) -> list[Subject]:
    """The plan's operations grouped by the object they act on, in order of first appearance; then
    each resource of ``unstored`` (address -> the resource, its changes of unstored fields) the plan
    has no call for, as an update. A resource the plan acts on takes those changes too."""
    found: dict[str, list[Operation]] = {}
    for op in plan.operations:
        found.setdefault(op.subject, []).append(op)
    out = [Subject(address, next(a for a in _ORDER if any(op.action == a for op in ops)), ops[0].kind, ops[0].name,
                   ops[0].space, ops) for address, ops in found.items()]
    extra = dict(unstored or {})
    for s in out:
        if s.address in extra:
            s.extra = extra.pop(s.address)[1]
    out += [Subject(address, "update", r.kind, r.name, r.space, [], changes) for address, (r, changes) in extra.items()]
    return out


def unstored_changes(manifests: ManifestSet, earlier: Mapping[str, Mapping[str, Any]]
                     ) -> dict[str, tuple[DesiredResource, list[Change]]]:
    """Address -> (resource, changes) of every declared resource whose fields the API does not store
    differ from ``earlier`` (their values in the tree at ``--since REF``: ``history.unstored_at``)."""
    out: dict[str, tuple[DesiredResource, list[Change]]] = {}
    for r in manifests:
        was = earlier.get(r.address, {})
        changes = [c for f in KIND_SPECS[r.kind].unstored for c in nested_changes(_plain(was.get(f)), _plain(r.spec.get(f)), f)]
        if changes:
            out[r.address] = (r, changes)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, SecretRef):
        return SENSITIVE
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def manifest_shape(r: DesiredResource, keys: frozenset[str] | None = None) -> dict[str, Any]:
    """The resource as its manifest writes it (secrets as ``(sensitive)``); only ``keys`` when given."""
    head: dict[str, Any] = {"kind": r.kind, "name": r.name}
    if r.space is not None:
        head["space"] = r.space
    wanted = r.spec if keys is None else {k: r.spec[k] for k in keys if k in r.spec}
    spec: dict[str, Any] = _plain(wanted)
    return head | spec


def _item(items: list[Any], selector: str) -> int | None:
    """The index in a list of the item a change path's segment names: a position, or ``KEY=VALUE``
    (a keyed example, its key's value as the plan writes it)."""
    if selector.isdigit():
        return int(selector) if int(selector) < len(items) else None
    key, sep, value = selector.partition("=")
    if not sep:
        return None
    return next((i for i, e in enumerate(items) if isinstance(e, Mapping) and key in e and str(e[key]) == value),
                None)


def _put(doc: Any, segments: list[str], before: Any, after: Any) -> None:
    """Put a change's ``before`` back at its path in ``doc`` (the desired fields, becoming the live
    ones): a field set, or removed when it was absent; a list item by position or key, taken out when
    the plan adds it, put back when the plan removes it; ``[+]``/``[-]`` (examples without a key, by
    content): one item equal to ``after`` taken out, ``before`` put back."""
    *parents, last = segments
    for part in parents:
        if isinstance(doc, dict):
            doc = doc.setdefault(part, {})
        elif isinstance(doc, list) and (at := _item(doc, part)) is not None:
            doc = doc[at]
        else:
            return
    if isinstance(doc, dict):
        if before is None:
            doc.pop(last, None)
        else:
            doc[last] = before
    elif isinstance(doc, list):
        at = next((i for i, e in enumerate(doc) if e == after), None) if last == "+" else _item(doc, last)
        if at is not None and before is None:
            del doc[at]
        elif at is not None and last != "+":
            doc[at] = before
        elif before is not None and (last == "-" or "=" in last):
            doc.append(before)


class _Activation:
    """The CEL values of one subject, each converted on first use, and only the fields a rule
    selects (``CompiledRule.selects``)."""

    def __init__(self, subject: Subject, desired: DesiredResource | None, plan_value: Any) -> None:
        self.subject = subject
        self.desired = desired
        self.plan_value = plan_value
        self._cache: dict[tuple[str, frozenset[str] | None], Any] = {}

    def _after(self, keys: frozenset[str] | None) -> Any:
        if self.subject.action == "delete" or self.desired is None:
            return None
        return manifest_shape(self.desired, keys)

    def _before(self, keys: frozenset[str] | None) -> Any:
        s = self.subject
        if s.action == "create":
            return None
        if s.action == "delete" or self.desired is None:
            head = {"kind": s.kind, "name": s.name}
            return head | ({"space": s.space} if s.space else {})
        doc = manifest_shape(self.desired, keys)  # new containers: _plain copies them
        for name in KIND_SPECS[self.desired.kind].unstored:
            doc.pop(name, None)  # not stored live: only what the tree said at --since REF (s.extra)
        for c in s.changes:
            segments = F.path_segments(c.path)
            if segments and (keys is None or segments[0] in keys):
                _put(doc, segments, c.before, c.after)
        return doc

    def _op(self, keys: frozenset[str] | None) -> Any:
        s = self.subject
        out: dict[str, Any] = {"action": s.action, "kind": s.kind, "name": s.name, "space": s.space,
                               "address": s.address}
        if keys is None or "changes" in keys:
            out["changes"] = [{"path": c.path, "before": c.before, "after": c.after} for c in s.changes]
        return out

    def get(self, name: str, keys: frozenset[str] | None) -> Any:
        from celpy.adapter import json_to_cel

        if name == "plan":
            return self.plan_value
        found = self._cache.get((name, keys), self)
        if found is self:
            build = {"op": self._op, "before": self._before, "after": self._after}[name]
            found = self._cache[(name, keys)] = json_to_cel(build(keys))
        return found


def _true(rule: CompiledRule, values: Mapping[str, Any]) -> bool:
    from celpy.celtypes import BoolType
    from celpy.evaluation import CELEvalError

    try:
        result = rule.program.evaluate(dict(values))
    except (CELEvalError, TypeError, ValueError, KeyError, ZeroDivisionError):
        return False
    return isinstance(result, BoolType | bool) and bool(result)  # an error value, or a non-boolean: false


def _matches(rule: CompiledRule, s: Subject) -> bool:
    if rule.actions and s.action not in rule.actions:
        return False
    if rule.kinds and s.kind not in rule.kinds:
        return False
    if rule.addresses and not any(fnmatchcase(s.address, g) for g in rule.addresses):
        return False
    return not rule.fields or any(F.touches(g, c.path) for g in rule.fields for c in s.changes)


def _verdict(rule: CompiledRule, address: str | None) -> Verdict:
    said = {"deny": "denied", "require_approval": "requires approval", "warn": "warning"}[rule.effect]
    message = rule.message or f"{said} by policy {rule.policy}"
    return Verdict(rule=rule.name, effect=rule.effect, address=address, message=message, source=rule.source)


def evaluate(plan: Plan, rules: Sequence[CompiledRule], manifests: ManifestSet | None = None,
             earlier: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[Verdict, ...]:
    """The verdicts of ``rules`` on ``plan``: plan-wide ones first, then by resource in plan order.
    ``earlier``: the fields the API does not store as the tree declared them at ``--since REF``
    (``history.unstored_at``; None without ``--since``)."""
    if not rules:
        return ()
    from celpy.adapter import json_to_cel

    plan_value = json_to_cel({"summary": plan.summary()})
    verdicts = [_verdict(r, None) for r in rules if r.plan_only and r.program is not None
                and _true(r, {"plan": plan_value})]
    per_op = [r for r in rules if not r.plan_only]
    unstored = unstored_changes(manifests, earlier) if manifests is not None and earlier is not None else {}
    if not per_op or (plan.empty and not unstored):
        return tuple(verdicts)
    desired = {r.address: r for r in manifests} if manifests is not None else {}
    for s in subjects(plan, unstored):
        values: _Activation | None = None
        for rule in per_op:
            if not _matches(rule, s):
                continue
            if rule.condition is not None:
                if rule.program is None:
                    continue
                values = values or _Activation(s, desired.get(s.address), plan_value)
                if not _true(rule, {name: values.get(name, rule.selects.get(name)) for name in rule.uses}):
                    continue
            verdicts.append(_verdict(rule, s.address))
    return tuple(verdicts)


def with_verdicts(plan: Plan, manifests: ManifestSet | None, rules: Sequence[CompiledRule] | None = None) -> Plan:
    """The plan carrying the verdicts of the manifests' policies (or of ``rules``). With the plan's
    ``--since REF``, the fields the API does not store are read from the tree at REF (git)."""
    chosen = tuple(rules) if rules is not None else tuple(manifests.policies) if manifests is not None else ()
    if not (chosen or plan.policy):
        return plan
    earlier = None
    if plan.options.since and manifests is not None and any(not r.plan_only for r in chosen):
        from reconciler.manifests.history import unstored_at

        earlier = unstored_at(plan.options.since, manifests.paths, plan.options.variables, plan.options.var_files)
    return replace(plan, policy=evaluate(plan, chosen, manifests, earlier))


def unapproved(verdicts: Iterable[Verdict], approvals: Iterable[str]) -> list[Verdict]:
    approved = set(approvals)
    return [v for v in verdicts if v.effect == "require_approval" and v.rule not in approved]


def blocking(verdicts: Iterable[Verdict], approvals: Iterable[str]) -> list[Verdict]:
    """What stops an apply: every deny, and every approval not given."""
    verdicts = list(verdicts)
    return [v for v in verdicts if v.effect == "deny"] + unapproved(verdicts, approvals)


def describe(v: Verdict) -> str:
    where = v.address or "the plan"
    return f"{v.rule} ({v.source}) on {where}: {v.message}"


def check_allowed(plan: Plan, approvals: Iterable[str]) -> None:
    """Raise (exit 1) when a rule denies the plan or an approval is missing; before any write."""
    denied = [v for v in plan.policy if v.effect == "deny"]
    missing = unapproved(plan.policy, approvals)
    lines = [f"  denied by {describe(v)}" for v in denied]
    lines += [f"  needs --approve {v.rule}: {describe(v)}" for v in missing]
    if lines:
        raise PlanError("refusing to apply: the policies do not allow this plan:\n" + "\n".join(lines))


def check_approvals_known(approvals: Iterable[str], rules: Iterable[CompiledRule]) -> None:
    """An ``--approve`` naming no rule of the policies is a typo: refused before any request."""
    import difflib

    names = sorted({r.name for r in rules})
    for name in approvals:
        if name not in names:
            hint = difflib.get_close_matches(name, names, n=1)
            raise PlanError(f"--approve {name}: no policy rule of that name"
                            + (f"; did you mean {hint[0]}?" if hint else
                               f" (the rules: {', '.join(names)})" if names else " (no policy is loaded)"))


def check_not_denied(plan: Plan) -> None:
    denied = [v for v in plan.policy if v.effect == "deny"]
    if denied:
        raise PlanError("the policies deny this plan:\n" + "\n".join(f"  {describe(v)}" for v in denied))


def without_blocked(plan: Plan, approvals: Iterable[str]) -> tuple[Plan, list[Verdict]]:
    """For ``watch``: the plan less every operation denied or unapproved (and what depends on one);
    a plan-wide verdict holds back the whole plan. Returns the plan left and the verdicts that held
    something back."""
    held = blocking(plan.policy, approvals)
    if not held:
        return plan, []
    if any(v.address is None for v in held):
        return replace(plan, operations=()), held
    blocked = {v.address for v in held}
    dropped = {op.id for op in plan.operations if op.subject in blocked}
    changed = True
    while changed:
        changed = False
        for op in plan.operations:
            if op.id not in dropped and any(d in dropped for d in op.depends_on):
                dropped.add(op.id)
                changed = True
    return replace(plan, operations=tuple(op for op in plan.operations if op.id not in dropped)), held
