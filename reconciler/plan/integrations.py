"""Integrations: one POST to create, one PATCH carrying only what differs (docs/api.md), or a
replacement (DELETE then POST) when ``type`` or ``provider`` changes.

Merge rules followed: scalars only when changed; ``scopings`` (compared as a set), ``model_names``,
``headers`` and ``request_presets`` (compared by name) whole when, and only when, they differ;
CLOUD_D ``auth`` whole when any of it differs. Write-only secrets compare by presence and header names
and are sent only when missing live, when names differ, or with ``--rotate-secrets``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import MISSING

from reconciler.essence import integration_essence
from reconciler.fieldkinds import Verdict
from reconciler.manifests.models import AgentIntegration, LlmIntegration
from reconciler.model import DesiredResource, LiveIntegration, LiveState
from reconciler.plan.changes import nested_changes, source_in
from reconciler.plan.context import (
    KindPlan,
    PlanInput,
    Planning,
    change,
    creation_changes,
    integration_doc,
    is_sensitive,
    plain,
    shown,
    to_body,
)
from reconciler.plan.liveview import _integration
from reconciler.plan.model import SENSITIVE, Change, Operation
from reconciler.plan.steps import KindSteps
from reconciler.providers import AGENT_FIELDS, PROVIDERS, ConfigField

COLLECTION = "/v2/integrations"


def plan_integrations(desired: list[DesiredResource], inputs: PlanInput) -> KindPlan:
    ctx = Planning(inputs)
    declared = {r.identity[1:] for r in desired}
    for r in desired:
        doc = integration_doc(r)
        itype, name = doc.type, r.name
        live = ctx.live.integrations.get((itype, name))
        ctx.pin(r, ["Integration", itype, name])
        if live is None:
            other = next((t for t in ("LLM", "AGENT") if t != itype and (t, name) in ctx.live.integrations
                          and (t, name) not in declared), None)
            if other is not None:
                _replace(r, ctx, ctx.live.integrations[(other, name)], f"type {other} -> {itype}")
            else:
                _create(r, ctx)
            continue
        have_provider = (live.config or {}).get("provider")
        if isinstance(doc, LlmIntegration) and (want_provider := doc.config.provider) != have_provider:
            _replace(r, ctx, live, f"provider {have_provider} -> {want_provider}")
            continue
        _update(r, ctx, live)
    return ctx



def _written(doc: LlmIntegration | AgentIntegration) -> dict[str, Any]:
    """What a create sends besides type and name, as the manifest writes it."""
    return {k: v for k, v in plain(doc).items() if k in ("description", "scopings", "config")}


def create_body(r: DesiredResource, secrets: dict[str, str], scopings: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The POST body; ``scopings`` as resolved (``{space: NAME}`` is the API's ids)."""
    doc = integration_doc(r)
    return {"type": doc.type, "name": r.name, **{k: scopings if k == "scopings" else to_body(v, f"/{k}", secrets)
                                                 for k, v in _written(doc).items()}}


def resolve_scopings(r: DesiredResource, ctx: Planning) -> list[dict[str, Any]] | None:
    """The manifest's scopings as the API takes them: ``{space: NAME}`` becomes the space's
    ``{organization_id, space_id}`` (GET /v2/spaces); a ``space_id`` that names no space is an error
    (with a hint when it is a space's name). None when a scoping cannot be resolved (error recorded)."""
    out: list[dict[str, Any]] = []
    ok = True
    spaces = ctx.live.spaces
    scopings = integration_doc(r).scopings
    for i, s in enumerate([] if scopings is MISSING else scopings):
        if s.space is not MISSING:
            space = next((x for x in spaces if x.name == s.space), None)
            if space is None:
                ctx.error(r, f"scopings.{i}.space", f"no space named {s.space!r}; the spaces are: "
                          + _closest_first(s.space, [x.name for x in spaces]))
                ok = False
                continue
            out.append({"organization_id": space.organization_id, "space_id": space.id})
            continue
        sid = None if s.space_id is MISSING else s.space_id
        if sid is not None and spaces and not any(x.id == sid for x in spaces):
            named = next((x for x in spaces if x.name == sid), None)
            hint = (f"{sid!r} is a space's name, not its id: write {{space: {sid}}}" if named is not None else
                    f"no space has the id {sid!r}; the spaces are: "
                    + _closest_first(str(sid), [x.name for x in spaces]))
            ctx.error(r, f"scopings.{i}.space_id", hint)
            ok = False
            continue
        out.append({"organization_id": None if s.organization_id is MISSING else s.organization_id,
                    "space_id": sid})
    return out if ok else None


def _closest_first(word: str, names: list[str]) -> str:
    import difflib

    def score(name: str) -> float:
        return -difflib.SequenceMatcher(None, word.lower(), name.lower()).ratio()

    return ", ".join(sorted(names, key=lambda n: (score(n), n))) or "(none)"


def _create(r: DesiredResource, ctx: Planning, action: str = "create", depends: tuple[str, ...] = ()) -> Operation | None:
    secrets: dict[str, str] = {}
    doc = integration_doc(r)
    scopings = resolve_scopings(r, ctx) if doc.scopings is not MISSING else None
    if doc.scopings is not MISSING and scopings is None:
        return None
    op = ctx.op(r, "create", "POST", COLLECTION, action=action, body=create_body(r, secrets, scopings),
                changes=creation_changes(r, _written(doc)), depends_on=depends, secrets=secrets)
    ctx.creates[r.identity] = op.id
    return op


def _replace(r: DesiredResource, ctx: Planning, live: LiveIntegration, why: str) -> None:
    if not ctx.options.allow_replace:
        ctx.warnings.append(f"{r.address}: {why} cannot be patched; the replacement (delete, then create) "
                            "runs only with --allow-replace")
    delete = ctx.op(r, "delete", "DELETE", f"{COLLECTION}/{live.id}", action="replace",
                    changes=[Change("", f"{live.type} {live.name}", None)], note=f"replace: {why}")
    _create(r, ctx, action="replace", depends=(delete.id,))


def _update(r: DesiredResource, ctx: Planning, live: LiveIntegration) -> None:
    body: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    changes: list[Change] = []
    doc = integration_doc(r)
    if live.name != r.name:  # renamed from an alias: the id is kept
        body["name"] = r.name
        changes.append(change(r, "name", live.name, r.name))
    if isinstance(doc, AgentIntegration) and doc.description is not MISSING \
            and doc.description != live.description:
        body["description"] = doc.description
        changes.append(change(r, "description", live.description, doc.description))
    if doc.scopings is not MISSING:
        want = resolve_scopings(r, ctx)
        if want is None:
            return
        have = [_scoping(s) for s in live.scopings or []]
        if _scoping_set(want) != _scoping_set(have):
            body["scopings"] = want
            changes.append(change(r, "scopings", have, want))
    config = _config_patch(r, ctx, live.config or {}, secrets, changes)
    if config:
        body["config"] = config
    if not body:
        return
    ctx.op(r, "update", "PATCH", f"{COLLECTION}/{live.id}", body={"type": live.type, **body}, changes=changes,
           secrets=secrets, note=_write_only_reason(r, ctx, changes))


def _write_only_reason(r: DesiredResource, ctx: Planning, changes: list[Change]) -> str | None:
    """Why a write-only field that exists live is sent: ``--rotate`` or a declaration changed since REF."""
    resent = sorted({c.path for c in changes if ctx.options.resends(r.address, c.path)}
                    | {"config.auth" for c in changes if c.path.startswith("config.auth.")
                       and ctx.options.resends(r.address, "config.auth")})
    if resent:
        return f"write-only {', '.join(resent)}: declaration changed since {ctx.options.since}"
    if ctx.options.rotate_secrets:
        return None
    if r.address in ctx.options.rotate and any(is_sensitive(c.after) or c.path.endswith("headers") for c in changes):
        return "secrets sent: --rotate"
    return None


def _scoping(s: Mapping[str, Any]) -> dict[str, Any]:
    return {"organization_id": s.get("organization_id"), "space_id": s.get("space_id")}


def _scoping_set(items: list[dict[str, Any]]) -> frozenset[tuple[Any, Any]]:
    return frozenset((s["organization_id"], s["space_id"]) for s in items)


def config_fields(doc: LlmIntegration | AgentIntegration) -> Mapping[str, ConfigField]:
    """The table's fields of the integration's config (its provider's, or the AGENT fields)."""
    return AGENT_FIELDS if isinstance(doc, AgentIntegration) else PROVIDERS[doc.config.provider].fields


def _config_patch(r: DesiredResource, ctx: Planning, lcfg: Mapping[str, Any], secrets: dict[str, str],
                  changes: list[Change]) -> dict[str, Any]:
    """What the PATCH's config carries: each declared field its kind's ``compare`` finds differing,
    or (write-only, present live: it cannot be compared) one ``--rotate``/``--since`` resends;
    the others are recorded as unverified."""
    doc = integration_doc(r)
    fields = config_fields(doc)
    out: dict[str, Any] = {}
    for name, want in plain(doc.config).items():
        f = fields.get(name)
        if f is None:
            continue  # provider (checked above) or a field the validator already refused
        path = f"config.{name}"
        kind = f.behaviour
        verdict = kind.compare(f, want, lcfg)
        if verdict is Verdict.SAME:
            continue
        if verdict is Verdict.HIDDEN and not (ctx.options.rotates(r.address) or ctx.options.resends(r.address, path)):
            what = kind.hidden(f)
            ctx.unverified.append(f"{r.address}: {path}" + (f" ({what})" if what else ""))
            continue
        sent = kind.body(f, want, lcfg)
        out[name] = to_body(sent, f"/config/{name}", secrets)
        before, after = kind.before(f, lcfg, SENSITIVE), kind.view(shown(sent))
        if kind.write_only or not (isinstance(before, dict) and isinstance(after, dict)):
            changes.append(change(r, path, before, after))
        else:
            changes.extend(nested_changes(before, after, path, source_in(r, _by_index(path, kind.indexes(want)))))
    return out


def _by_index(field: str, index: Mapping[Any, int]) -> Callable[[str], str]:
    """Plan paths name a preset (``config.request_presets.cold.config``); the manifest numbers them."""
    def rename(path: str) -> str:
        head, _, rest = path.partition(field + ".")
        if head or not rest:
            return path
        name, dot, tail = rest.partition(".")
        i = index.get(name)
        return path if i is None else f"{field}.{i}{dot}{tail}"
    return rename


def _pin(obj: LiveIntegration, live: LiveState) -> list[Any]:
    return [obj.id, integration_essence(obj)]


#: The integration's comparison for pull (``liveview._integration``) stays in ``plan.liveview``, with
#: its helpers.
STEPS = KindSteps(plan=plan_integrations, pin=_pin, compare=_integration)
