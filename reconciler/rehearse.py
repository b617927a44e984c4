"""Rehearsal (README.md, "Rehearsal"): prove a plan against a replica of the account before it
touches the real one.

After the live read, an in-process emulator is seeded with the live state the plan was made from
(``client.replica``: same ids, names, fields, versions, labels, examples, restrictions, spaces and
organizations), the plan is executed there by the real executor, what it touched is read again
and planned again, as ``apply`` confirms convergence. Nothing is sent to the real API and no
secret is read: every secret the plan sends is a placeholder (the replica takes any value).

The report (``Rehearsal``): the calls the replica accepted, every refusal (status, the API's
detail in names, the call, and the manifest ``file:line`` that causes it), the calls not tried
because they depend on a refused one, whether the replica converged (and what still differs),
and what a replica cannot know. It is shown under a text plan, at the top of a Markdown plan
and as ``rehearsal`` in a JSON plan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from reconciler.apply.confirm import reread_touched
from reconciler.apply.executor import APPLIED, FAILED, SKIPPED, causes, execute
from reconciler.apply.naming import Namer
from reconciler.apply.resolve import _with_pointer
from reconciler.client.replica import account_of, open_replica
from reconciler.client.settings import DEFAULT_PARALLELISM
from reconciler.emulator.integrations import PLACEHOLDER
from reconciler.errors import ReconcilerError
from reconciler.kinds import DATASET
from reconciler.model import LiveState, ManifestSet
from reconciler.plan.model import Plan
from reconciler.plan.planner import make_plan


@dataclass(frozen=True)
class Refusal:
    """One call the replica refused."""

    call: str  # "ADDRESS METHOD PATH" (the path as sent)
    address: str
    status: int | None
    detail: str  # the API's answer, objects named by name
    sources: tuple[str, ...]  # "FIELD at FILE:LINE": the manifest values that cause it

    def line(self) -> str:
        return f"{self.call}: {self.detail}" + (f" -> {', '.join(self.sources)}" if self.sources else "")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # the sources' tuple is a JSON list


@dataclass(frozen=True)
class Rehearsal:
    calls: int
    accepted: int
    refusals: tuple[Refusal, ...] = ()
    skipped: tuple[str, ...] = ()  # calls not tried: they depend on a refused one
    converged: bool | None = True  # None: not checked (a saved plan whose manifests are not here)
    remaining: tuple[str, ...] = ()  # "ADDRESS: FIELD" still differing on the replica after its apply
    unknown: tuple[str, ...] = ()  # what a replica cannot know

    @property
    def ok(self) -> bool:
        return not self.refusals and not self.skipped and self.converged is not False

    def headline(self) -> str:
        if not self.calls:
            return "Rehearsal: nothing to rehearse (the plan is empty)."
        verdict = "passed" if self.ok else "FAILED"
        parts = [f"{self.accepted} of {self.calls} call{'s' if self.calls != 1 else ''} accepted by a replica of "
                 "the account"]
        if self.refusals:
            parts.append(f"{len(self.refusals)} refused")
        if self.skipped:
            parts.append(f"{len(self.skipped)} not tried (after a refusal)")
        parts.append({True: "the replica converged (its re-plan is empty)",
                      False: "the replica did NOT converge",
                      None: "convergence not checked (the plan's manifests are not here)"}[self.converged])
        return f"Rehearsal: {verdict}: " + ", ".join(parts) + "."

    def findings(self) -> list[str]:
        """Each refusal, skipped call and remaining difference, as the text and Markdown reports list them."""
        return ([f"refused: {r.line()}" for r in self.refusals] + [f"not tried: {s}" for s in self.skipped]
                + [f"still differs after the replica's apply: {r}" for r in self.remaining])

    def lines(self) -> list[str]:
        """The text report: the headline, then each refusal, skipped call, remaining difference and
        what the replica cannot know."""
        out = [self.headline(), *(f"  {line}" for line in self.findings())]
        if self.calls and self.unknown:
            out.append("  A replica cannot know: " + "; ".join(self.unknown) + ".")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "calls": self.calls, "accepted": self.accepted,
                "refused": [r.to_json() for r in self.refusals], "skipped": list(self.skipped),
                "converged": self.converged, "remaining": list(self.remaining), "unknown": list(self.unknown)}

    def error(self, *, applying: bool = False) -> ReconcilerError:
        """The error a failed rehearsal ends the command with (exit 1)."""
        return ReconcilerError("the rehearsal failed" + (", so nothing was applied" if applying else "") + ": "
                               + self.headline().split(": ", 2)[-1])

    def rendered(self, text: str, fmt: str) -> str:
        """A rendered plan (``plan.render.render``) with the rehearsal: under a text plan, as the line
        after the heading of a Markdown plan, as ``rehearsal`` in a JSON plan."""
        if fmt == "json":
            data: Mapping[str, Any] = json.loads(text)
            return json.dumps({**data, "rehearsal": self.to_json()}, indent=2, ensure_ascii=False) + "\n"
        if fmt == "markdown":
            head, _, rest = text.partition("\n")
            block = [f"**{self.headline()}**", *(f"- {_md(line)}" for line in self.findings())]
            if self.calls and self.unknown:
                block.append("<details><summary>What a replica cannot know</summary>\n\n"
                             + "\n".join(f"- {_md(u)}" for u in self.unknown) + "\n\n</details>")
            return "\n".join([head, "", *block, rest])
        return text + "\n".join(self.lines()) + "\n"


def with_placeholders(plan: Plan) -> Plan:
    """The plan with every secret it sends replaced by ``PLACEHOLDER`` in the body (and no secret
    reference left to resolve): the replica needs no secret."""
    ops = []
    for op in plan.operations:
        body = op.body
        for pointer in sorted(op.secrets):
            body = _with_pointer(body, pointer, PLACEHOLDER)
        ops.append(replace(op, body=body, secrets={}) if op.secrets else op)
    return replace(plan, operations=tuple(ops))


def rehearse(plan: Plan, live: LiveState, manifests: ManifestSet | None, *,
             parallelism: int = DEFAULT_PARALLELISM) -> Rehearsal:
    """Execute ``plan`` on a replica of ``live`` and plan again there (module docstring)."""
    if plan.empty:
        return Rehearsal(calls=0, accepted=0)
    touched = {(key[1], key[2]) for key in (plan.pins.get(op.address) for op in plan.operations)
               if key and key[0] == DATASET.name}
    replica = account_of(live, manifests, examples_of=touched)
    with open_replica(replica, parallelism=parallelism) as client:
        report = client.run(execute(with_placeholders(plan), client, parallelism=parallelism,
                                    explain=Namer(live).name))
        converged: bool | None = None
        remaining: list[str] = []
        if manifests is not None:
            fresh = client.run(reread_touched(plan, live, report.responses, client, manifests))
            again = make_plan(manifests, fresh, replace(plan.options, rotate_secrets=False, rotate=(), resend=()))
            converged = again.empty
            remaining = _differences(again)
    refusals = tuple(Refusal(call=o.describe(), address=o.op.address, status=o.http_status,
                             detail=o.detail or "", sources=tuple(f"{c.path} at {c.source}" for c in causes(o)))
                     for o in report.of(FAILED))
    sent = sum(len(op.secrets) for op in plan.operations)
    unknown = ([f"{sent} secret value{'s' if sent != 1 else ''} the plan sends {'are' if sent != 1 else 'is'} a "
                "placeholder (never read): the replica takes any value"] if sent else []) + replica.unknown
    return Rehearsal(calls=len(report.outcomes), accepted=len(report.of(APPLIED)), refusals=refusals,
                     skipped=tuple(f"{o.describe()}: {o.detail}" for o in report.of(SKIPPED)),
                     converged=converged, remaining=tuple(remaining), unknown=tuple(unknown))


def _differences(again: Plan) -> list[str]:
    """``ADDRESS: FIELD, FIELD, FIELD (+N more)`` for each resource the re-plan still changes."""
    fields: dict[str, list[str]] = {}
    for op in again.operations:
        paths = fields.setdefault(op.subject, [])
        paths += [c.path for c in op.changes if c.path] or [f"{op.method} {op.path}"]
    out = []
    for address, paths in fields.items():
        unique = list(dict.fromkeys(paths))
        more = f" (+{len(unique) - 3} more)" if len(unique) > 3 else ""
        out.append(f"{address}: {', '.join(unique[:3])}{more}")
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")
