"""Policy rules evaluated on a plan (README.md, "Guardrails"): which fire, and what that allows.

A rule is evaluated once per resource the plan touches (the block a plan shows: all the calls of
one object), with ``op`` (its action, kind, name, space, address and changes), ``before`` and
``after`` (its managed fields, live and desired, manifest-shaped, secrets as ``(sensitive)``; null
when absent) and ``plan`` (``summary`` counts). A rule with no ``match`` whose condition reads only
``plan`` is evaluated once for the plan.

``before`` is what the plan read live, in the manifest's shape: the desired fields with each change's
``before`` put back (a field that does not differ is the same live). A deleted resource has only its
``kind``, ``name`` and ``space``. A condition that cannot be evaluated on a resource (it selects a
field that resource does not have, e.g. ``before`` on a create) is false there: write ``has(...)``
or match ``actions`` to say what applies where.

Values are converted to CEL only when a rule that matched needs them, so ten rules over a plan of
thousands of resources cost little (``benchmarks/policy_bench.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any

from reconciler.errors import PlanError
from reconciler.model import DesiredResource, ManifestSet, SecretRef
from reconciler.plan.model import SENSITIVE, Change, Operation, Plan, Verdict
from reconciler.policy import fields as F
from reconciler.policy.rules import CompiledRule

_ORDER = ("replace", "delete", "create", "update")


@dataclass
class Subject:
    """One object the plan touches: all its calls, their changes, the dominant action."""

    address: str
    action: str
    ops: list[Operation]

    @property
    def first(self) -> Operation:
        return self.ops[0]

    @property
    def changes(self) -> list[Change]:
        return [c for op in self.ops for c in op.changes]


def subjects(plan: Plan) -> list[Subject]:
    """The plan's operations grouped by the object they act on, in order of first appearance."""
    found: dict[str, list[Operation]] = {}
    for op in plan.operations:
        found.setdefault(op.subject, []).append(op)
    return [Subject(address, next(a for a in _ORDER if any(op.action == a for op in ops)), ops)
            for address, ops in found.items()]


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


def _put(doc: Any, path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        if isinstance(doc, dict):
            doc = doc.setdefault(part, {})
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return
    last = parts[-1]
    if isinstance(doc, dict):
        if value is None:
            doc.pop(last, None)
        else:
            doc[last] = value
    elif isinstance(doc, list) and last.isdigit() and int(last) < len(doc) and value is not None:
        doc[int(last)] = value


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
            op = s.first
            head = {"kind": op.kind, "name": op.name}
            return head | ({"space": op.space} if op.space else {})
        doc = copy.deepcopy(manifest_shape(self.desired, keys))
        for c in s.changes:
            if c.path and (keys is None or c.path.split(".", 1)[0] in keys):
                _put(doc, c.path, c.before)
        return doc

    def _op(self, keys: frozenset[str] | None) -> Any:
        s, op = self.subject, self.subject.first
        out: dict[str, Any] = {"action": s.action, "kind": op.kind, "name": op.name, "space": op.space,
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
    if rule.kinds and s.first.kind not in rule.kinds:
        return False
    if rule.addresses and not any(fnmatchcase(s.address, g) for g in rule.addresses):
        return False
    return not rule.fields or any(F.touches(g, c.path) for g in rule.fields for c in s.changes)


def _verdict(rule: CompiledRule, address: str | None) -> Verdict:
    said = {"deny": "denied", "require_approval": "requires approval", "warn": "warning"}[rule.effect]
    message = rule.message or f"{said} by policy {rule.policy}"
    return Verdict(rule=rule.name, effect=rule.effect, address=address, message=message, source=rule.source)


def evaluate(plan: Plan, rules: Sequence[CompiledRule], manifests: ManifestSet | None = None) -> tuple[Verdict, ...]:
    """The verdicts of ``rules`` on ``plan``: plan-wide ones first, then by resource in plan order."""
    if not rules:
        return ()
    from celpy.adapter import json_to_cel

    plan_value = json_to_cel({"summary": plan.summary()})
    verdicts = [_verdict(r, None) for r in rules if r.plan_only and r.program is not None
                and _true(r, {"plan": plan_value})]
    per_op = [r for r in rules if not r.plan_only]
    if not per_op or plan.empty:
        return tuple(verdicts)
    desired = {r.address: r for r in manifests} if manifests is not None else {}
    for s in subjects(plan):
        values: _Activation | None = None
        for rule in per_op:
            if not _matches(rule, s):
                continue
            if rule.condition is not None:
                if rule.program is None:
                    continue
                values = values or _Activation(s, desired.get(s.first.address), plan_value)
                if not _true(rule, {name: values.get(name, rule.selects.get(name)) for name in rule.uses}):
                    continue
            verdicts.append(_verdict(rule, s.address))
    return tuple(verdicts)


def with_verdicts(plan: Plan, manifests: ManifestSet | None, rules: Sequence[CompiledRule] | None = None) -> Plan:
    """The plan carrying the verdicts of the manifests' policies (or of ``rules``)."""
    chosen = tuple(rules) if rules is not None else tuple(manifests.policies) if manifests is not None else ()
    return replace(plan, policy=evaluate(plan, chosen, manifests)) if chosen or plan.policy else plan


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
