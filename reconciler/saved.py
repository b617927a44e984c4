"""``apply PLANFILE``: a saved plan bound to the files it was made from, and checked against what
its operations really do before any write (docs/security.md, "Plan files").

A plan file is input from elsewhere (a pull-request job's artifact). ``plan.planfile`` checks its
form before any request; this module binds it to its tree and to live state:

- ``sources_of``: ``plan --out`` records the digest (SHA-256) of every manifest, var file and
  policy file it loaded (``Plan.sources``). ``bound_sources`` refuses, before any request, a file
  that differs, is missing, was added (a directory that now holds another file), or lies outside
  the working tree (the current directory, symlinks followed): the plan cannot choose its own
  manifests, variables or policies. ``--var`` values, written in the file itself, are taken only
  from a signed plan.
- ``sign``/``check_signature``: with ``RECONCILER_PLAN_KEY`` set, ``plan --out`` writes
  ``PLANFILE.sig`` (HMAC-SHA256 over the file's bytes) and ``apply`` refuses a plan file without
  it or that does not match it.
- ``checked_against_live``: apply plans again from the bound manifests against live state, with
  the plan's options, under the same guards (``protect``, the integration guard, every policy);
  each operation of the file must be one of that plan, call for call (method, path, body,
  secrets, labels): an operation that does something else, or is labelled as something else, is
  refused, and a stale file too. What is applied is that plan: its labels and changes are what
  the policies judge and the output shows.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.client.http import ApiClient
from reconciler.errors import ConfigError, PlanError
from reconciler.model import LiveState, ManifestSet
from reconciler.plan.model import Operation, Plan, adapter

PLAN_KEY_ENV = "RECONCILER_PLAN_KEY"
SIGNATURE_SUFFIX = ".sig"
_SCHEME = "hmac-sha256:"
_DIGEST = "sha256:"


# ---------------------------------------------------------------------- signing


def plan_key() -> bytes | None:
    """The signing key of ``RECONCILER_PLAN_KEY`` (None when unset). Never shown."""
    raw = os.environ.get(PLAN_KEY_ENV)
    if raw is None:
        return None
    if not raw.strip():
        raise ConfigError(f"{PLAN_KEY_ENV} is set but empty: set it to the shared signing key, or unset it")
    return raw.strip().encode("utf-8")


def signature_path(planfile: str | Path) -> Path:
    return Path(f"{planfile}{SIGNATURE_SUFFIX}")


def signature(data: bytes, key: bytes) -> str:
    return _SCHEME + hmac.new(key, data, hashlib.sha256).hexdigest()


def check_signature(planfile: str, data: bytes) -> None:
    """With ``RECONCILER_PLAN_KEY`` set: the plan file's bytes must carry the signature of
    ``PLANFILE.sig``. Raises ``PlanError`` (before any request) for an unsigned or altered file."""
    key = plan_key()
    if key is None:
        return
    sig = signature_path(planfile)
    try:
        given = sig.read_text(encoding="ascii", errors="replace")[:200].strip()
    except OSError:
        raise PlanError(f"{planfile}: refused before any request: {PLAN_KEY_ENV} is set and the plan file is not "
                        f"signed ({sig.name} not found next to it): make and save the plan with the same key "
                        "(plan --out)") from None
    if not hmac.compare_digest(given.encode("ascii", "replace"), signature(data, key).encode("ascii")):
        raise PlanError(f"{planfile}: refused before any request: the plan file does not match its signature "
                        f"({sig.name}): it was altered after it was saved, or signed with another key")


# ---------------------------------------------------------------------- the files a plan was made from


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return _DIGEST + h.hexdigest()


def _files(given: str, found_at: str) -> dict[str, str]:
    """The files loading ``found_at`` reads (a file, or a directory's manifests), each keyed by the
    name it has under ``given`` (the path as the plan records it)."""
    from reconciler.manifests.loader import manifest_files

    out: dict[str, str] = {}
    for f in manifest_files([found_at], []):  # each starts with found_at (a file as given, or below it)
        out[os.path.normpath(given + f[len(found_at):])] = f
    return out


def _given(plan: Plan) -> list[str]:
    return [*plan.manifests, *plan.options.var_files, *plan.options.policies]


def sources_of(plan: Plan) -> dict[str, str]:
    """Every file the plan was made from (manifests, var files, policies) -> its digest, keyed by
    the path the plan records (``plan --out``)."""
    return {name: _digest(f) for given in _given(plan) if given != "-" for name, f in _files(given, given).items()
            if os.path.isfile(f)}


def from_workdir(plan: Plan, path: str) -> str:
    """A relative path of a saved plan, from where the plan was made when it is there."""
    if plan.workdir and not Path(path).is_absolute() and (Path(plan.workdir) / path).exists():
        return str(Path(plan.workdir) / path)
    return path


@dataclass(frozen=True)
class Bound:
    """Where the plan's manifests, var files and policies are found here (each checked)."""

    manifests: tuple[str, ...]
    var_files: tuple[str, ...]
    policies: tuple[str, ...]


def bound_sources(plan: Plan, planfile: str, tree: str | None = None) -> Bound:
    """The plan's files, found (from where it was made, else here), each inside the working tree
    ``tree`` (default: the current directory) and with the digest the plan recorded; else a
    ``PlanError`` listing every file that differs, is missing, was added or lies outside."""
    root = os.path.realpath(tree or os.getcwd())
    refused = f"{planfile}: refused before any request: "
    if not plan.manifests or "-" in plan.manifests:
        raise PlanError(refused + "the plan file names no manifest files it can be checked against (made from "
                        "standard input?): plan and apply from the manifests")
    if not plan.sources:
        raise PlanError(refused + "the plan file records no digests of its manifests, var files and policies "
                        "(made by an older reconciler, or edited): make the plan again")
    if plan.options.variables and plan_key() is None:  # a value written in the file itself
        raise PlanError(refused + "the plan file sets variables (--var " + ", --var ".join(
            v.partition("=")[0] for v in plan.options.variables) + "): an unsigned plan file cannot choose "
            f"values the manifests use; put them in a var file (bound by its digest), or sign plans ({PLAN_KEY_ENV})")
    problems: list[str] = []
    found: dict[str, str] = {}
    for given in _given(plan):
        at = from_workdir(plan, given)
        if os.path.exists(at):  # else each of its files is missing, below
            found |= _files(given, at)
    for name, f in sorted(found.items()):
        real = os.path.realpath(f)
        if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
            problems.append(f"{name}: lies outside the working tree ({root})")
        elif name not in plan.sources:
            problems.append(f"{name}: not among the files the plan was made from (added since?)")
        elif _digest(f) != plan.sources[name]:
            problems.append(f"{name}: differs from the file the plan was made from")
    problems += [f"{name}: missing" for name in sorted(set(plan.sources) - set(found))]
    if problems:
        raise PlanError(refused + "the plan is bound to the files it was made from, and these are not "
                        "them (make the plan again from this tree):\n" + "\n".join(f"  {p}" for p in problems))
    return Bound(tuple(from_workdir(plan, p) for p in plan.manifests),
                 tuple(from_workdir(plan, p) for p in plan.options.var_files),
                 tuple(from_workdir(plan, p) for p in plan.options.policies))


# ---------------------------------------------------------------------- what the operations really do


_COMPARED = ("action", "kind", "name", "space", "address", "method", "path", "body", "secrets", "depends_on", "note")


def _json_ops(plan: Plan) -> dict[str, dict[str, Any]]:
    ops: list[dict[str, Any]] = json.loads(json.dumps(adapter().dump_python(plan)["operations"]))
    out = {}
    for op in ops:
        shown = {k: op.get(k) for k in _COMPARED}
        shown["changes"] = [{k: c.get(k) for k in ("path", "before", "after")} for c in op.get("changes", [])]
        out[op["id"]] = shown
    return out


def _names(live: LiveState) -> dict[str, str]:
    """id -> ``KIND/[SPACE/]NAME`` of the live objects (what a path's id stands for)."""
    from reconciler.kinds import DATASET, EVALUATOR, INTEGRATION, PROMPT

    spaces = {s.id: s.name for s in live.spaces}
    out = {i.id: f"{INTEGRATION.name}/{i.name}" for i in live.integrations.values()}
    for spec, table in ((PROMPT, live.prompts), (DATASET, live.datasets), (EVALUATOR, live.evaluators)):
        for (space_id, name), obj in table.items():
            out[obj.id] = f"{spec.name}/{spaces.get(space_id, space_id)}/{name}"
    return out


def _does(op: Operation, names: Mapping[str, str]) -> str:
    """What the call does, derived from its method and path (and the live object its id names)."""
    parts = op.path.split("/")
    target = names.get(parts[3]) if len(parts) > 3 else None
    return f"{op.method} {op.path}" + (f" (on {target})" if target else "")


def unplanned(saved: Plan, fresh: Plan, live: LiveState) -> list[str]:
    """How the saved plan's operations differ from the plan made again: an operation the manifests
    do not plan, one that differs from theirs (the fields named, never their values), one they plan
    that the file lacks."""
    mine, theirs = _json_ops(saved), _json_ops(fresh)
    names = _names(live)
    problems: list[str] = []
    for op in saved:
        twin = theirs.get(op.id)
        if twin is None:
            problems.append(f"operation {op.id!r}: {_does(op, names)}, labelled {op.action} {op.address}: the "
                            "manifests plan no such call against live state")
            continue
        differ = [k for k in (*_COMPARED, "changes") if mine[op.id][k] != twin[k]]
        if differ:
            problems.append(f"operation {op.id!r}: {_does(op, names)}: its {', '.join(differ)} differ from the "
                            "call the manifests plan")
    problems += [f"operation {op_id!r}: planned against live state now, not in the plan file"
                 for op_id in theirs if op_id not in mine]
    return problems


def checked_against_live(saved: Plan, manifests: ManifestSet, client: ApiClient, planfile: str
                         ) -> tuple[Plan, LiveState]:
    """The plan to apply for a saved plan: made again from its (bound) manifests against live
    state, with its options, under every guard (``workflow.plan_against``: ``protect``, the
    integration guard, the policies); the saved plan must be that plan, call for call. Raises
    ``PlanError`` when live state moved (stale) or an operation is not what the manifests plan."""
    from reconciler.plan.pins import pin_fingerprint
    from reconciler.workflow import plan_against

    live, fresh = plan_against(manifests, client, saved.options)
    stale = [address for address, key in sorted(saved.pins.items())
             if pin_fingerprint(key, live) != saved.fingerprints.get(address)]
    if stale:
        raise PlanError(f"the plan file {planfile} is stale: live state changed since it was made for "
                        + ", ".join(stale) + ". Make a new plan.")
    problems = unplanned(saved, fresh, live)
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise PlanError(f"{planfile}: refused before any write: its operations are not what its manifests plan "
                        "against live state (the file was edited, or live state moved since: make the plan "
                        "again):\n" + "\n".join(f"  {p}" for p in shown))
    return fresh, live


def with_sources(plan: Plan, workdir: str) -> Plan:
    """The plan as ``plan --out`` saves it: where it was made and the digest of each file it read."""
    from dataclasses import replace

    made = replace(plan, workdir=workdir)
    return replace(made, sources=sources_of(made))


def signed_files(text: str) -> Sequence[tuple[str, str]]:
    """The signature file's text for a plan file's text (empty without ``RECONCILER_PLAN_KEY``)."""
    key = plan_key()
    return () if key is None else ((SIGNATURE_SUFFIX, signature(text.encode("utf-8"), key) + "\n"),)
