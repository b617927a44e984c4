"""The steps the commands share: load manifests, connect, read live, plan, apply, confirm
convergence. The CLI parses flags and prints; everything it runs is here."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from reconciler.apply.confirm import reread_touched
from reconciler.apply.executor import ApplyReport, Outcome, execute
from reconciler.client.http import ApiClient, open_client
from reconciler.client.live import read_live
from reconciler.client.settings import DEFAULT_PARALLELISM, read_api_key, resolve_endpoint
from reconciler.errors import ApplyError, ManifestError, PlanError
from reconciler.model import LiveState, ManifestSet
from reconciler.plan.model import Operation, Plan, PlanOptions
from reconciler.plan.pins import pin_fingerprint
from reconciler.plan.planner import make_plan


@dataclass(frozen=True)
class Connection:
    base_url: str | None = None
    region: str | None = None
    host: str | None = None
    api_key_file: str | None = None
    emulator: str | None = None
    parallelism: int = DEFAULT_PARALLELISM
    ca_file: str | None = None  # PEM CA certificates to trust (a private CA); else SSL_CERT_FILE, else certifi
    timeout: float | None = None  # connect timeout in seconds (None: the client's default)


def connect(conn: Connection, *, read_only: bool = False, on_event: Callable[[str], None] | None = None,
            trace: bool | None = None) -> ApiClient:
    """A client for the connection. ``on_event`` hears retries and waits as they happen; with
    ``trace`` (default: whenever ``on_event`` is given) every request too."""
    endpoint = resolve_endpoint(base_url=conn.base_url, region=conn.region, host=conn.host, emulator=conn.emulator)
    key = read_api_key(conn.api_key_file, endpoint=endpoint)
    return open_client(endpoint, key, read_only=read_only, parallelism=conn.parallelism, on_event=on_event,
                       trace=on_event is not None if trace is None else trace, ca_file=conn.ca_file,
                       connect_timeout=conn.timeout)


def load(paths: Sequence[str], stdin: TextIO | None = None, *, secrets: bool = True) -> ManifestSet:
    """Manifests, validated; with ``secrets`` every secret reference must resolve (before any request)."""
    from reconciler.manifests import check_secrets, load_manifests

    manifests = load_manifests(paths, stdin=stdin)
    if secrets:
        problems = check_secrets(manifests)
        if problems:
            raise ManifestError(problems)
    return manifests


def plan_against(manifests: ManifestSet, client: ApiClient, options: PlanOptions) -> tuple[LiveState, Plan]:
    live = read_live(client, manifests.read_scope())
    return live, make_plan(manifests, live, options)


def is_plan_file(paths: Sequence[str]) -> bool:
    if len(paths) != 1 or paths[0] == "-" or not Path(paths[0]).is_file():
        return False
    head = Path(paths[0]).read_bytes()[:512].lstrip()
    return head.startswith(b"{") and b'"format_version"' in head


def read_plan_file(path: str) -> Plan:
    try:
        return Plan.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PlanError(f"{path}: not a readable plan file ({exc})") from None


def stale_objects(plan: Plan, client: ApiClient) -> tuple[list[str], LiveState]:
    """Addresses whose live object changed since the plan was made, and the live state read."""
    live = read_live(client, plan.scope)
    stale = [address for address, key in sorted(plan.pins.items())
             if pin_fingerprint(key, live) != plan.fingerprints.get(address)]
    return stale, live


def check_replacements(plan: Plan) -> None:
    if not plan.options.allow_replace and any(op.action == "replace" for op in plan.operations):
        names = sorted({op.address for op in plan.operations if op.action == "replace"})
        raise PlanError("the plan replaces " + ", ".join(names) + " (delete, then create); "
                        "re-run with --allow-replace to allow it")


def run_apply(
    plan: Plan,
    client: ApiClient,
    *,
    parallelism: int,
    fail_fast: bool,
    on_start: Callable[[Operation], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> ApplyReport:
    check_replacements(plan)
    return execute(plan, client, parallelism=parallelism, fail_fast=fail_fast, on_start=on_start, on_done=on_done)


def confirm_converged(manifests: ManifestSet, client: ApiClient, plan: Plan, live: LiveState,
                      report: ApplyReport) -> Plan:
    """Re-read what apply touched, fold it into the live state the plan was made from, and plan
    again; the returned plan is empty when apply converged. Secrets are not rotated again."""
    fresh = reread_touched(plan, live, report.responses, client)
    return make_plan(manifests, fresh, replace(plan.options, rotate_secrets=False))


def not_converged(plan: Plan) -> ApplyError:
    fields = [f"  {op.address}: {c.path or op.method + ' ' + op.path}" for op in plan.operations
              for c in (op.changes or ())] or [f"  {op.address}: {op.method} {op.path}" for op in plan.operations]
    return ApplyError("apply did not converge; these still differ after re-reading:\n" + "\n".join(fields))
