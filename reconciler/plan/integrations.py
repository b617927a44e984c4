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
from reconciler.providers import AGENT_FIELDS, AUTH_MODES, PROVIDERS, ConfigField, FieldKind

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
    doc = integration_doc(r)
    fields = config_fields(doc)
    out: dict[str, Any] = {}
    for name, want in plain(doc.config).items():
        f = fields.get(name)
        if f is None:
            continue  # provider (checked above) or a field the validator already refused
        path = f"config.{name}"
        if f.kind is FieldKind.SECRET:
            send, before = _secret_decision(r, ctx, path, want, bool(lcfg.get(f.read_name)))
            if send:
                out[name] = to_body(want, f"/config/{name}", secrets)
                changes.append(change(r, path, before, shown(want)))
        elif f.kind is FieldKind.HEADERS:
            if _headers_differ(r, ctx, path, want, lcfg, f):
                out[name] = to_body(want, f"/config/{name}", secrets) if want else None
                changes.append(change(r, path, _live_headers(lcfg, f), shown(want) if want else None))
        elif f.kind is FieldKind.AUTH:
            if _auth_differs(r, ctx, want, lcfg.get("auth") or {}):
                out[name] = to_body(want, f"/config/{name}", secrets)
                changes.extend(nested_changes(_auth_view(lcfg.get("auth") or {}), shown(want), path,
                                              source_in(r)))
        elif f.kind is FieldKind.PRESETS:
            merged = _presets_patch(want or [], lcfg.get("request_presets") or [])
            if merged is not None:
                out[name] = merged
                by_name = {p.get("name"): _preset_view(p) for p in lcfg.get("request_presets") or []}
                changes.extend(nested_changes(by_name, {p["name"]: _preset_view(p) for p in merged}, path,
                                              source_in(r, _preset_index(want or []))))
        else:
            have = lcfg.get(f.read_name)
            if (f.kind is FieldKind.STRING_LIST and isinstance(want, list) and isinstance(have, list)
                    and sorted(map(str, want)) == sorted(map(str, have))):
                continue  # model_names: a set of models; an order the service returns is no change
            if want != have:
                out[name] = want
                if isinstance(want, dict) and isinstance(have, dict):
                    changes.extend(nested_changes(have, want, path, source_in(r)))
                else:
                    changes.append(change(r, path, have, want))
    return out


def _preset_index(presets: list[Any]) -> Callable[[str], str]:
    """Plan paths name a preset (``config.request_presets.cold.config``); the manifest numbers them."""
    index = {p.get("name"): i for i, p in enumerate(presets) if isinstance(p, dict)}

    def rename(path: str) -> str:
        head, _, rest = path.partition("config.request_presets.")
        if head or not rest:
            return path
        name, dot, tail = rest.partition(".")
        i = index.get(name)
        return path if i is None else f"config.request_presets.{i}{dot}{tail}"
    return rename


def _secret_decision(r: DesiredResource, ctx: Planning, path: str, want: Any, live_has: bool) -> tuple[bool, Any]:
    """(send it?, what the plan shows as before)."""
    before = SENSITIVE if live_has else None
    if want is None:
        return live_has, before
    if not live_has or ctx.options.rotates(r.address) or ctx.options.resends(r.address, path):
        return True, before
    ctx.unverified.append(f"{r.address}: {path}")
    return False, before


def _live_headers(lcfg: Mapping[str, Any], f: ConfigField) -> Any:
    if f.read_name == "has_headers":
        return SENSITIVE if lcfg.get("has_headers") else None
    names = lcfg.get(f.read_name) or []
    return {n: SENSITIVE for n in sorted(names)} or None


def _headers_differ(r: DesiredResource, ctx: Planning, path: str, want: Any, lcfg: Mapping[str, Any],
                    f: ConfigField) -> bool:
    if f.read_name == "has_headers":  # AGENT: only presence is visible
        have_any = bool(lcfg.get("has_headers"))
        if not want:
            return have_any
        if not have_any or ctx.options.rotates(r.address) or ctx.options.resends(r.address, path):
            return True
        ctx.unverified.append(f"{r.address}: {path} (values; only presence is visible)")
        return False
    have_names = sorted(lcfg.get(f.read_name) or [])
    want_names = sorted((want or {}).keys())
    if want_names != have_names:
        return True
    if want_names and (ctx.options.rotates(r.address) or ctx.options.resends(r.address, path)):
        return True
    if want_names:
        ctx.unverified.append(f"{r.address}: {path} (values)")
    return False


def _auth_view(auth: Mapping[str, Any]) -> dict[str, Any]:
    """The live auth as the plan shows it: write-side names, secrets masked."""
    out: dict[str, Any] = {}
    for k, v in auth.items():
        if k == "has_api_key":
            out["api_key"] = SENSITIVE if v else None
        elif k == "header_names":
            out["headers"] = {n: SENSITIVE for n in v or []}
        else:
            out[k] = v
    return out


def _auth_differs(r: DesiredResource, ctx: Planning, want: Mapping[str, Any], have: Mapping[str, Any]) -> bool:
    mode = AUTH_MODES.get(str(want.get("auth_type")))
    if mode is None or have.get("auth_type") != want.get("auth_type"):
        return True
    has_secret = False
    for name, f in mode.fields.items():
        value = want.get(name)
        if f.kind is FieldKind.SECRET:
            if not have.get("has_api_key"):
                return True
            has_secret = True
        elif f.kind is FieldKind.HEADERS:
            if sorted((value or {}).keys()) != sorted(have.get("header_names") or []):
                return True
            has_secret = has_secret or bool(value)
        elif value != have.get(name):
            return True  # omitted fields of auth are cleared by the API, so omitted compares as null
    if has_secret:
        if ctx.options.rotates(r.address) or ctx.options.resends(r.address, "config.auth"):
            return True
        ctx.unverified.append(f"{r.address}: config.auth (secret values)")
    return False


def _preset_view(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"description": p.get("description"), "config": p.get("config")}


def _presets_patch(want: list[Mapping[str, Any]], have: list[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The full preset list to send, or None when live already matches. Presets compare by name;
    a description the manifest omits is unmanaged, so the live one is sent back unchanged."""
    live_by_name = {p.get("name"): p for p in have}
    out: list[dict[str, Any]] = []
    differs = {p.get("name") for p in want} != set(live_by_name)
    for p in want:
        live = live_by_name.get(p["name"])
        item: dict[str, Any] = {"name": p["name"]}
        if "description" in p:
            item["description"] = p["description"]
        elif live is not None and live.get("description") is not None:
            item["description"] = live.get("description")
        item["config"] = p.get("config", {})
        if live is None or item.get("description") != live.get("description") or item["config"] != live.get("config"):
            differs = True
        out.append(item)
    return out if differs else None


def _pin(obj: LiveIntegration, live: LiveState) -> list[Any]:
    return [obj.id, integration_essence(obj)]


#: The integration's comparison for pull (``liveview._integration``) stays in ``plan.liveview``, with
#: its helpers.
STEPS = KindSteps(plan=plan_integrations, pin=_pin, compare=_integration)
