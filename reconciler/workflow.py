"""The steps the commands share: load manifests, connect, read live, plan, apply, confirm
convergence. The CLI parses flags and prints; everything it runs is here."""

from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from reconciler.apply.confirm import reread_touched
from reconciler.apply.executor import ApplyReport, Outcome, execute
from reconciler.apply.resolve import lookup
from reconciler.client.http import ApiClient, open_client
from reconciler.client.live import read_integration_users, read_live
from reconciler.client.settings import API_KEY_ENV, DEFAULT_PARALLELISM, read_api_key, resolve_endpoint
from reconciler.errors import ApplyError, ConfigError, PlanError, SecretError
from reconciler.kinds import EVALUATOR, INTEGRATION, SECRET_KINDS
from reconciler.model import LiveState, ManifestSet
from reconciler.plan.context import parse_secret_spec
from reconciler.plan.model import REF_RE, Operation, Plan, PlanOptions
from reconciler.plan.planfile import declared_secrets as declared_secrets  # the CLI reads plan files here
from reconciler.plan.planfile import read_plan_file as read_plan_file
from reconciler.plan.planner import make_plan, order
from reconciler.telemetry import Telemetry


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
    #: the variable holding the key (an environment's ``api_key: {env: NAME}``, reconciler.yaml); else
    #: ``--api-key-file`` or RECONCILER_API_KEY
    api_key_env: str | None = None


def connect(conn: Connection, *, read_only: bool = False, on_event: Callable[[str], None] | None = None,
            trace: bool | None = None, telemetry: Telemetry | None = None,
            runner: asyncio.Runner | None = None) -> ApiClient:
    """A client for the connection (on ``runner``'s event loop when given: shared with other clients). ``on_event`` hears retries and waits as they happen; with
    ``trace`` (default: whenever ``on_event`` is given) every request too. ``telemetry`` (the
    command's, or ``watch``'s) observes the client's exchanges, and the steps given this client
    report to it (``reporter``)."""
    endpoint = resolve_endpoint(base_url=conn.base_url, region=conn.region, host=conn.host, emulator=conn.emulator)
    if conn.api_key_env is not None:  # checked set before any request (project.key_of)
        key = read_api_key(None, {API_KEY_ENV: os.environ.get(conn.api_key_env, "")}, endpoint=endpoint)
    else:
        key = read_api_key(conn.api_key_file, endpoint=endpoint)
    traced = on_event is not None and (trace is None or trace)
    # under --log-format json each request is a structured ``request`` event, not a line
    as_events = traced and telemetry is not None and telemetry.log_format == "json"
    client = open_client(endpoint, key, read_only=read_only, parallelism=conn.parallelism, on_event=on_event,
                         trace=traced and not as_events, ca_file=conn.ca_file, connect_timeout=conn.timeout,
                         runner=runner)
    if telemetry is not None:  # --metrics-file, --log-format json, watch
        telemetry.attach(client, log_requests=as_events)
        client.reporter = telemetry
    return client


def reporter(client: ApiClient) -> Telemetry | None:
    """The telemetry the client was connected with (``connect``), which the steps report to."""
    found = client.reporter
    return found if isinstance(found, Telemetry) else None


def load(paths: Sequence[str], stdin: TextIO | None = None, *, var_assignments: Sequence[str] = (),
         var_files: Sequence[str] = (), policy_paths: Sequence[str] = ()) -> ManifestSet:
    """Manifests, validated, with their variables and policies (the tree's and ``--policy``'s).
    Secrets are not read: only apply resolves what it sends (``check_plan_secrets``)."""
    from reconciler.manifests import load_manifests

    return load_manifests(paths, stdin=stdin, var_assignments=var_assignments, var_files=var_files,
                          policy_paths=policy_paths)


def prepare_options(manifests: ManifestSet, options: PlanOptions) -> PlanOptions:
    """Check the options that name manifests (``--rotate``) and compute what ``--since`` resends;
    every problem is raised before any request."""
    from reconciler.manifests.history import changed_since

    declared = {r.address: r for r in manifests} | {f"{r.kind}/{r.name}": r for r in manifests}
    for target in options.rotate:
        r = declared.get(target)
        if r is None:
            hint = difflib.get_close_matches(target, sorted(declared), n=1)
            raise ConfigError(f"--rotate {target}: no such resource in the manifests"
                              + (f"; did you mean {hint[0]}?" if hint else ""))
        if r.kind not in SECRET_KINDS:
            raise ConfigError(f"--rotate {target}: a {r.kind} has no write-only secrets (only integrations do)")
    rotate = tuple(sorted({declared[t].address for t in options.rotate}))
    resend = changed_since(options.since, manifests.paths, manifests, options.variables,
                           options.var_files) if options.since else ()
    return replace(options, rotate=rotate, resend=resend)


def check_plan_secrets(plan: Plan, manifests: ManifestSet | None) -> None:
    """Before ``apply`` sends anything: every secret the plan sends must resolve. An unset variable,
    a missing or empty file, an oversized header map is a ``SecretError`` naming the variable (or
    file) and every ``file:line`` that uses it. ``plan`` and ``drift`` never call this: they show
    references, never values, so a pull-request plan needs no production secret."""
    from reconciler.manifests.secrets import secret_problems, unresolved_secrets_message

    def dotted(pointer: str) -> str:
        return pointer.lstrip("/").replace("/", ".")

    sent: dict[str, set[str]] = {}  # address -> dotted paths of the secrets its calls carry
    for op in plan:
        for pointer in op.secrets:
            sent.setdefault(op.address, set()).add(dotted(pointer))
    if not sent:
        return
    if manifests is None:
        failures: dict[str, list[str]] = {}
        for op in plan:
            for pointer, spec in sorted(op.secrets.items()):
                try:
                    parse_secret_spec(spec).resolve()
                except SecretError as exc:
                    failures.setdefault(exc.message, []).append(f"{op.address} ({dotted(pointer)})")
        if failures:
            n = len(failures)
            raise SecretError(f"cannot apply: {n} secret{'s' if n != 1 else ''} the plan sends "
                              f"{'do' if n != 1 else 'does'} not resolve (nothing was sent):\n" + "\n".join(
                                  f"  {message}; used by {', '.join(uses)}" for message, uses in failures.items()))
        return

    def wanted(address: str, path: str) -> bool:  # the path, or a header map holding one
        return any(p == path or p.startswith(path + ".") for p in sent.get(address, ()))

    # every use of a reference that fails is named, sent by this plan or not: the fix is in all of them
    failing = {ref for ref, _ in secret_problems(manifests, only=wanted) if ref is not None}
    problems = [(ref, p) for ref, p in secret_problems(manifests) if ref in failing] + [
        (ref, p) for ref, p in secret_problems(manifests, only=wanted) if ref is None]
    if problems:
        raise SecretError(unresolved_secrets_message(problems))


def plan_against(manifests: ManifestSet, client: ApiClient, options: PlanOptions) -> tuple[LiveState, Plan]:
    """Read live state and plan against it, on the client's loop (``read_and_plan``)."""
    return client.run(read_and_plan(manifests, client, options))


async def read_and_plan(manifests: ManifestSet, client: ApiClient, options: PlanOptions) -> tuple[LiveState, Plan]:
    """The live state the manifests need and the plan against it, under every guard (the integration
    guard, the policies); the resource gauges of the client's telemetry set."""
    live = await read_live(client, manifests.read_scope(), manifests)
    planned = judge(await guard_integrations(make_plan(manifests, live, options), live, client), manifests,
                    reporter(client))
    if (observer := reporter(client)) is not None:
        observer.observe_plan(manifests, planned, log=True)
    return live, planned


def judge(plan: Plan, manifests: ManifestSet | None, telemetry: Telemetry | None = None) -> Plan:
    """The plan with the verdicts of the manifests' policies (``reconciler.policy``), counted in
    ``reconciler_policy_verdicts_total``. Without manifests (a saved plan whose tree is gone) the
    verdicts it recorded stand."""
    if manifests is None or not (manifests.policies or plan.policy):
        return plan
    from reconciler.policy.evaluate import with_verdicts

    judged = with_verdicts(plan, manifests)
    if telemetry is not None:
        telemetry.count_verdicts(judged.policy)
    return judged


def _replacement_of(target: str, delete: Operation, plan: Plan) -> bool:
    """Whether an evaluator's new integration id is the one that replaces ``delete`` (it is known
    only after the delete, so the evaluator cannot move there first)."""
    ops = {op.id: op for op in plan}
    return any(ops[m.group(1)].address == delete.address for m in REF_RE.finditer(target) if m.group(1) in ops)


async def guard_integrations(plan: Plan, live: LiveState, client: ApiClient) -> Plan:
    """No plan deletes or replaces an integration that a live evaluator uses (declared or not, in
    any space), unless the same plan first moves that evaluator to another integration: the
    delete then waits for the move. Reads the account's evaluators only when such a delete exists."""
    deletes = {op.path.rsplit("/", 1)[-1]: op for op in INTEGRATION.among(plan) if op.method == "DELETE"}
    if not deletes:
        return plan
    moves = {op.path.split("/")[3]: op for op in EVALUATOR.among(plan)  # evaluator id -> its new version
             if op.method == "POST" and op.path.endswith("/versions")}
    refusals: dict[str, list[str]] = {}
    waits: dict[str, list[str]] = {}
    for integration_id, space, name, evaluator_id in await read_integration_users(client, live):
        delete = deletes.get(integration_id)
        if delete is None:
            continue
        move = moves.get(evaluator_id)
        target = lookup(move.body, "template_config.llm_config.ai_integration_id") if move else None
        if isinstance(target, str) and target != integration_id and not _replacement_of(target, delete, plan):
            waits.setdefault(delete.id, []).append(move.id)  # type: ignore[union-attr]
        else:
            refusals.setdefault(delete.address, []).append(f"evaluator {name} in space {space}")
    if refusals:
        raise PlanError("cannot plan:\n" + "\n".join(
            f"  {address}: the plan would {'replace' if any(o.action == 'replace' for o in plan if o.address == address) else 'delete'} "
            f"it, and it is used by {', '.join(sorted(users))}; move "
            f"{'those evaluators' if len(users) > 1 else 'that evaluator'} to another integration first"
            for address, users in sorted(refusals.items())))
    if not waits:
        return plan
    ops = [replace(op, depends_on=(*op.depends_on, *waits[op.id])) if op.id in waits else op for op in plan]
    return replace(plan, operations=tuple(order(ops)))


def is_plan_file(paths: Sequence[str]) -> bool:
    if len(paths) != 1 or paths[0] == "-" or not Path(paths[0]).is_file():
        return False
    head = Path(paths[0]).read_bytes()[:512].lstrip()
    return head.startswith(b"{") and b'"format_version"' in head


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
    live: LiveState | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> ApplyReport:
    """Execute the plan; the API's refusals name objects by name (``live``'s and those created).
    Once ``stop()`` is true no call starts (``watch``'s signals; Ctrl-C does the same by itself)."""
    from reconciler.apply.naming import Namer

    check_replacements(plan)
    if (observer := reporter(client)) is not None:
        on_done = observer.outcome_sink(on_done)
    return client.run(execute(plan, client, parallelism=parallelism, fail_fast=fail_fast, on_start=on_start,
                              on_done=on_done, explain=Namer(live).name, stop=stop))


def confirm_converged(manifests: ManifestSet, client: ApiClient, plan: Plan, live: LiveState,
                      report: ApplyReport) -> Plan:
    """Re-read what apply touched, fold it into the live state the plan was made from, and plan
    again; the returned plan is empty when apply converged. Secrets are not rotated again."""
    fresh = client.run(reread_touched(plan, live, report.responses, client, manifests))
    again = make_plan(manifests, fresh, replace(plan.options, rotate_secrets=False, rotate=(), resend=()))
    if (observer := reporter(client)) is not None:  # the resources' state after the apply
        observer.observe_plan(manifests, again)
    return again


def apply_and_confirm(plan: Plan, client: ApiClient, manifests: ManifestSet | None, live: LiveState, *,
                      parallelism: int, fail_fast: bool = False, on_done: Callable[[Outcome], None] | None = None,
                      on_report: Callable[[ApplyReport], None] = lambda report: None,
                      confirm_failed: bool = False, execute: Callable[..., ApplyReport] = run_apply,
                      stop: Callable[[], bool] = lambda: False) -> tuple[ApplyReport, Plan | None]:
    """The apply step of ``apply`` and ``watch --apply``: execute the plan (``execute``: ``run_apply``
    or a stand-in), hand the report to ``on_report`` as soon as the calls end (it may raise), then
    re-read what they touched and plan again: the report, and that plan (empty: converged). None when
    not re-read: an interrupted apply, a plan file's without its manifests, and one with failed calls
    unless ``confirm_failed`` (watch: its gauges then show what is left)."""
    report = execute(plan, client, parallelism=parallelism, fail_fast=fail_fast, on_done=on_done, live=live, stop=stop)
    on_report(report)
    if report.interrupted or manifests is None or not (report.ok or confirm_failed):
        return report, None
    return report, confirm_converged(manifests, client, plan, live, report)


def not_converged(plan: Plan) -> ApplyError:
    fields = [f"  {op.address}: {c.path or op.method + ' ' + op.path}" for op in plan.operations
              for c in (op.changes or ())] or [f"  {op.address}: {op.method} {op.path}" for op in plan.operations]
    return ApplyError("apply did not converge; these still differ after re-reading:\n" + "\n".join(fields))
