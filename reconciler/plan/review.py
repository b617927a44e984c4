"""What a reviewer reads first (README.md, "Guardrails"): the table of kinds by action at the top of a
plan that touches more than one resource (deletes and replacements first), and the policy verdicts."""

from __future__ import annotations

from reconciler import shown
from reconciler.plan.model import Plan, Verdict

#: Columns of the table: what destroys first.
COLUMNS = ("delete", "replace", "create", "update")
_DOMINANT = ("replace", "delete", "create", "update")
EFFECT_WORDS = {"deny": "DENIED", "require_approval": "NEEDS APPROVAL", "warn": "WARNING"}


def kind_counts(plan: Plan) -> dict[str, dict[str, int]]:
    """Objects by kind and action, counted as the summary counts them (one per object); rows with
    deletes or replacements first, then by name."""
    actions: dict[str, set[str]] = {}
    kinds: dict[str, str] = {}
    for op in plan.operations:
        actions.setdefault(op.subject, set()).add(op.action)
        kinds.setdefault(op.subject, op.kind)
    table: dict[str, dict[str, int]] = {}
    for subject, found in actions.items():
        action = next(a for a in _DOMINANT if a in found)
        row = table.setdefault(kinds[subject], dict.fromkeys(COLUMNS, 0))
        row[action] += 1
    return dict(sorted(table.items(), key=lambda kv: (-(kv[1]["delete"] + kv[1]["replace"]), kv[0])))


def touches_several(plan: Plan) -> bool:
    return len({op.subject for op in plan.operations}) > 1


def kind_table_text(plan: Plan) -> list[str]:
    if not touches_several(plan):
        return []
    counts = kind_counts(plan)
    width = max(len("kind"), *(len(k) for k in counts))
    lines = ["  " + "kind".ljust(width) + "".join(f"  {c:>7}" for c in COLUMNS)]
    lines += ["  " + kind.ljust(width) + "".join(f"  {row[c]:>7}" for c in COLUMNS) for kind, row in counts.items()]
    return ["Changes by kind:", *lines, ""]


def kind_table_markdown(plan: Plan) -> list[str]:
    if not touches_several(plan):
        return []
    lines = ["| kind | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    lines += [f"| {kind} | " + " | ".join(str(row[c]) for c in COLUMNS) + " |"
              for kind, row in kind_counts(plan).items()]
    return [*lines, ""]


def verdict_line(v: Verdict) -> str:
    where = v.address or "the plan"
    return f"Policy {EFFECT_WORDS.get(v.effect, v.effect)}: {v.rule} on {where}: {v.message}   # {v.source}"


def verdict_lines_text(plan: Plan) -> list[str]:
    return [verdict_line(v) for v in plan.policy]


def verdict_lines_markdown(plan: Plan) -> list[str]:
    if not plan.policy:
        return []
    out = ["| policy | rule | on | message | source |", "|---|---|---|---|---|"]
    out += [f"| **{EFFECT_WORDS.get(v.effect, v.effect)}** | {shown.md_code(v.rule)} | "
            f"{shown.md_code(v.address or 'the plan')} | {shown.md_text(v.message)} | {shown.md_text(v.source)} |"
            for v in plan.policy]
    return [*out, ""]
