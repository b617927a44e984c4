"""Views of a Plan: text (Terraform-like), JSON (the plan file format) and Markdown (a PR comment).
References known only after apply show as "(known after apply)"; secrets as "(sensitive)"."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from typing import Any

from reconciler import shown
from reconciler.plan.model import KNOWN_AFTER_APPLY, REF_RE, Change, Operation, Plan
from reconciler.plan.review import (
    kind_table_markdown,
    kind_table_text,
    verdict_lines_markdown,
    verdict_lines_text,
)

SYMBOLS = {"create": "+", "update": "~", "delete": "-", "replace": "-/+"}
COLOURS = {"create": "green", "update": "yellow", "delete": "red", "replace": "magenta"}


def _mask_refs(value: Any) -> Any:
    if isinstance(value, str):
        return REF_RE.sub(KNOWN_AFTER_APPLY, value)
    if isinstance(value, dict):
        return {k: _mask_refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_refs(v) for v in value]
    return value


#: A changed string longer than this (or spanning lines) is shown as a unified diff, not before -> after.
TEXT_DIFF_MIN = 80
#: A value whose one-line JSON is longer than this is shown as a diff of its indented JSON, never cut.
ONE_LINE_MAX = 160


def _fmt(value: Any, limit: int = ONE_LINE_MAX) -> str:
    value = _mask_refs(value)
    text = value if isinstance(value, str) and value == KNOWN_AFTER_APPLY else json.dumps(value, ensure_ascii=False,
                                                                                         sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _groups(plan: Plan) -> Iterator[tuple[str, str, list[Operation]]]:
    """Operations grouped by the object they act on (``Operation.subject``), in execution order of
    first appearance."""
    seen: dict[str, list[Operation]] = {}
    for op in plan.operations:
        seen.setdefault(op.subject, []).append(op)
    for address, ops in seen.items():
        actions = {op.action for op in ops}
        action = next(a for a in ("replace", "delete", "create", "update") if a in actions)
        yield address, action, ops


def summary_line(plan: Plan) -> str:
    """The contract's summary line. A replacement is a delete and a create, so it counts in both
    (as Terraform counts it); the line before it names the replacements."""
    s = plan.summary()
    extra = [f"{s[k]} {k}" for k in ("unmanaged", "ignored") if s.get(k)]
    text = (f"Plan: {s['create'] + s['replace']} to create, {s['update']} to update, "
            f"{s['delete'] + s['replace']} to delete" + (f"; {', '.join(extra)}." if extra else "."))
    if s["replace"]:
        consent = "" if plan.options.allow_replace else "; needs --allow-replace"
        text = f"{s['replace']} to replace (delete, then create{consent}).\n" + text
    return text


def in_sync_line(plan: Plan) -> str:
    """The whole output of a plan with nothing to do: one line (``-v`` lists the secrets)."""
    n = len(plan.unverified_secrets)
    if not n:
        return "No changes. Live state matches the manifests."
    return (f"No changes. Live state matches the manifests ({n} write-only secret{'s' if n != 1 else ''} cannot be "
            "compared: --rotate KIND/NAME or --since REF sends them; -v lists them).")


def text_diff(c: Change) -> list[str] | None:
    """A change too long for one ``before -> after`` line, as unified diff lines (``-old``/``+new``,
    one line of context, no file headers): a long or multi-line text (a prompt message) line by
    line, any other long value as indented JSON. None when one line shows it whole."""
    before, after = _mask_refs(c.before), _mask_refs(c.after)
    if all(v is None or isinstance(v, str) for v in (before, after)):
        text = (before or "") + (after or "")
        if max(len(before or ""), len(after or "")) <= TEXT_DIFF_MIN and "\n" not in text:
            return None
        old, new = (before or "").splitlines(), (after or "").splitlines()
    else:
        if max(len(_one_line(before)), len(_one_line(after))) <= ONE_LINE_MAX:
            return None
        old, new = _indented(before), _indented(after)
    lines = difflib.unified_diff(old, new, lineterm="", n=1)
    return [line for line in lines if not line.startswith(("---", "+++"))]


def _one_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _indented(value: Any) -> list[str]:
    return [] if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2).splitlines()


#: Map entries a plan names in words when one is added or removed ("preset cold removed").
NAMED_ITEMS = {"config.request_presets": "preset", "config.headers": "header", "config.auth.headers": "header"}
NAMED_ITEM = re.compile(r"(config\.request_presets|config\.headers|config\.auth\.headers)\.([^.]+)")


def _change_line(c: Change, diff: list[str] | None) -> str:
    """One change's line; ``diff`` is its ``text_diff`` (shown below the line when there is one)."""
    src = f"   # {c.source}" if c.source else ""
    path = c.path or "(resource)"
    if diff is not None:
        what = "added" if c.before is None else "removed" if c.after is None else "changed"
        return f"{path}: ({what}, see below){src}"
    if c.after is None and path == "experiment_retention" and isinstance(c.before, str):
        return f"{c.before}{src}"  # why retention deletes it, in the rule's words
    if (m := NAMED_ITEM.fullmatch(path)) is not None and c.after is None and c.before is not None:
        return f"{NAMED_ITEMS[m.group(1)]} {m.group(2)} removed{src}"
    if c.before is None:
        return f"{path} = {_fmt(c.after)}{src}"
    if c.after is None:
        return f"{path} = {_fmt(c.before)} -> null{src}"
    return f"{path}: {_fmt(c.before)} -> {_fmt(c.after)}{src}"


def empty_headline(plan: Plan, unmanaged_drift: bool = False) -> str:
    """The first line of a plan with no operation but something to list: one headline that says
    what is true. Unmanaged resources are drift for ``drift --prune`` (``unmanaged_drift``)."""
    n = len(plan.unmanaged)
    if not n:
        return "No changes. Live state matches the manifests."
    things = f"{n} unmanaged resource{'s' if n != 1 else ''}"
    if unmanaged_drift:
        return f"Drift: {things} (listed below); the declared resources match live state."
    return f"No changes. The declared resources match live state; {things} listed below."


def unmanaged_heading(plan: Plan) -> str:
    owner = f"the ownership of {plan.owner}" if plan.owner else "the spaces and kinds the manifests name"
    return f"Unmanaged: {len(plan.unmanaged)} not declared, inside {owner} (--prune deletes them):"


def ignored_heading(plan: Plan) -> str:
    return f"Ignored: {len(plan.ignored)} difference{'s' if len(plan.ignored) != 1 else ''} left as live (ignore_changes):"


def ignored_lines(plan: Plan) -> list[str]:
    return [f"  ~ {i.address}: {i.path}: {_fmt(i.before)} (live) vs {_fmt(i.after)} (declared)"
            + (f"  [{i.source}]" if i.source else "") for i in plan.ignored]


def unverified_line(plan: Plan) -> str:
    """The one line about write-only secrets a plan could not compare (``-v`` lists them)."""
    n = len(plan.unverified_secrets)
    return (f"Note: {n} write-only secret{'s' if n != 1 else ''} exist{'s' if n == 1 else ''} live and cannot be "
            f"compared; send {'it' if n == 1 else 'them'} with --rotate KIND/NAME (or --rotate-secrets), or with --since REF when their "
            "declaration changed.")


def render_text(plan: Plan, colour: bool = False, verbose: bool = False, unmanaged_drift: bool = False) -> str:
    def paint(line: str, action: str) -> str:  # the line escaped first: only our own codes reach the terminal
        if not colour:
            return shown.text(line)
        codes = {"green": "32", "yellow": "33", "red": "31", "magenta": "35"}
        return f"\x1b[{codes[COLOURS[action]]}m{shown.text(line)}\x1b[0m"

    if plan.empty and not plan.unmanaged and not plan.warnings and not plan.ignored and not verbose \
            and not plan.policy:
        return in_sync_line(plan) + "\n"
    lines: list[str] = kind_table_text(plan)
    if plan.empty and (plan.unmanaged or not plan.ignored):  # ignored: the summary line says it all
        lines.append(empty_headline(plan, unmanaged_drift))
    for address, action, ops in _groups(plan):
        lines.append(paint(f"{SYMBOLS[action]} {address}", action))
        for op in ops:
            note = f"  ({op.note})" if op.note else ""
            lines.append(f"    {op.method} {_mask_refs(op.path)}{note}")
            for c in op.changes:
                diff = text_diff(c)
                lines.append(f"      {_change_line(c, diff)}")
                lines.extend(f"        {line}" for line in diff or ())
        lines.append("")
    if plan.unmanaged:
        lines.append(unmanaged_heading(plan))
        lines.extend(f"  ? {u.address}  ({u.path})" for u in plan.unmanaged)
        lines.append("")
    if plan.ignored and verbose:
        lines.append(ignored_heading(plan))
        lines.extend(ignored_lines(plan))
        lines.append("")
    for w in plan.warnings:
        lines.append(f"Warning: {w}")
    if plan.unverified_secrets:
        lines.append(unverified_line(plan))
        if verbose:
            lines.extend(f"  {s}" for s in plan.unverified_secrets)
    lines.extend(verdict_lines_text(plan))
    if not plan.empty or plan.unmanaged or plan.ignored:  # else "No changes." above says it: one, not both
        lines.append(summary_line(plan))
    painted = {i for i, line in enumerate(lines) if "\x1b[0m" in line} if colour else set()
    # every line one line, no control character from a name or value (docs/security.md); the
    # summary's two lines stay two
    return "\n".join(line if i in painted else "\n".join(map(shown.text, line.split("\n")))
                     for i, line in enumerate(lines)) + "\n"


def render_json(plan: Plan) -> str:
    return plan.dumps()




def render_markdown(plan: Plan, unmanaged_drift: bool = False) -> str:
    """Every name and value from elsewhere escaped by ``reconciler.shown`` for where it stands (a
    code span, an HTML element, prose, a diff block): none can add a line, a tag or a comment."""
    s = plan.summary()
    lines = ["### reconciler plan", "", *verdict_lines_markdown(plan), *kind_table_markdown(plan),
             "| create | update | delete | replace | unmanaged |",
             "|---:|---:|---:|---:|---:|",
             f"| {s['create']} | {s['update']} | {s['delete']} | {s['replace']} | {s['unmanaged']} |", ""]
    if plan.empty:
        lines.append(shown.md_text(empty_headline(plan, unmanaged_drift)))
    for address, action, ops in _groups(plan):
        lines.append(f"<details><summary><code>{SYMBOLS[action]} {shown.md_html(address)}</code> ({action}, "
                     f"{len(ops)} call{'s' if len(ops) != 1 else ''})</summary>")
        lines.append("")
        lines.append("| call | field | before | after | source |")
        lines.append("|---|---|---|---|---|")
        diffs: list[tuple[str, list[str]]] = []
        for op in ops:
            call = shown.md_code(f"{op.method} {_mask_refs(op.path)}") + (
                f" ({shown.md_text(op.note)})" if op.note else "")
            if not op.changes:
                lines.append(f"| {call} | | | | |")
            for c in op.changes:
                diff = text_diff(c)
                if diff is not None:
                    diffs.append((c.path, diff))
                    before, after = "(text, see the diff below)", "(text, see the diff below)"
                else:
                    before, after = shown.md_code(_fmt(c.before)), shown.md_code(_fmt(c.after))
                lines.append(f"| {call} | {shown.md_code(c.path or '(resource)')} | {before} | {after} | "
                             f"{shown.md_text(c.source or '')} |")
        for path, diff in diffs:  # a fence longer than any run of backticks inside (a prompt may hold ```)
            body = [shown.text(line) for line in diff]
            fence = "`" * max(3, 1 + max((len(run) for line in body for run in re.findall(r"`+", line)), default=0))
            lines.extend(["", f"{shown.md_code(path)}:", "", fence + "diff", *body, fence])
        lines.extend(["", "</details>", ""])
    for heading, items in ((unmanaged_heading(plan), [f"- {shown.md_code(u.address)} ({shown.md_code(u.path)})"
                                                      for u in plan.unmanaged]),
                           (ignored_heading(plan), [f"- {shown.md_text(line.strip())}" for line in ignored_lines(plan)])):
        if items:
            lines.extend([f"<details><summary>{shown.md_html(heading)}</summary>", "", *items, "", "</details>", ""])
    for w in plan.warnings:
        lines.append(f"> **Warning:** {shown.md_text(w)}")
    if plan.unverified_secrets:
        lines.append("")
        lines.append(unverified_line(plan))
    lines.append("")
    lines.extend(f"**{line}**" for line in summary_line(plan).splitlines())
    return "\n".join(lines) + "\n"


def render(plan: Plan, fmt: str, colour: bool = False, verbose: bool = False, unmanaged_drift: bool = False) -> str:
    if fmt == "json":
        return render_json(plan)
    if fmt == "markdown":
        return render_markdown(plan, unmanaged_drift)
    return render_text(plan, colour, verbose, unmanaged_drift)
