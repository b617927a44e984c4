"""Several environments of one project file in one run (README.md, "Environments: one tree, many
accounts"): each loaded before any request, planned concurrently, applied in ``after`` order.

Concurrency is by account: the environments of one account (``Target.account``: one endpoint, one
key variable) share one client, so one rate budget and one in-flight limit, and are planned one after
the other on it; different accounts are planned at once, their clients on one event loop (no thread):
while one account's answers are awaited, another's are read or planned.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

from reconciler import workflow
from reconciler.client.http import ApiClient
from reconciler.client.settings import resolve_endpoint
from reconciler.errors import ConfigError, ManifestError, ReconcilerError
from reconciler.model import LiveState, ManifestSet
from reconciler.plan.model import Plan, PlanOptions
from reconciler.project import Project, check_accounts, key_of
from reconciler.workflow import Connection


@dataclass(frozen=True)
class Target:
    """One environment of the run: its name, what it loads, where it connects."""

    name: str
    paths: tuple[str, ...]
    var_files: tuple[str, ...]
    policies: tuple[str, ...]
    conn: Connection
    #: which account it is: its endpoint as resolved (a region and the base URL it stands for agree)
    #: and its key's variable. Two that agree share a client and may not declare one space.
    account: tuple[str, str]


def targets(project: Project, names: Sequence[str], conn: Connection | None, *, var_files: Sequence[str] = (),
            policies: Sequence[str] = (), keys: bool = True) -> list[Target]:
    """The chosen environments, their files placed relative to the working directory; ``var_files``
    and ``policies`` given on the command line come after each environment's own. Each endpoint is
    resolved (a bad one refused) and, with ``keys``, each key variable must be set (a ``ConfigError``
    naming it); both before any request."""
    found = []
    base = conn or Connection()
    for name in names:
        env = project.model.environments[name]
        if keys:
            key_of(project, name)
        conn = replace(base, base_url=env.base_url, region=env.region, host=env.host,
                       emulator=project.place(env.emulator) if env.emulator is not None else None, api_key_file=None,
                       api_key_env=env.api_key.env if env.api_key is not None else None)
        try:
            endpoint = resolve_endpoint(base_url=conn.base_url, region=conn.region, host=conn.host,
                                        emulator=conn.emulator, env={})
        except ConfigError as exc:
            raise ConfigError(f"environment {name} ({project.at(f'environments.{name}')}): {exc}") from None
        where = os.path.realpath(endpoint.emulator_db) if endpoint.emulator_db else str(endpoint.base_url)
        found.append(Target(
            name=name, paths=tuple(project.place(p) for p in env.paths),
            var_files=(*(project.place(v) for v in env.var_files), *var_files),
            policies=(*(project.place(p) for p in env.policies), *policies), conn=conn,
            account=(where, conn.api_key_env or "")))
    return found


def load_all(project: Project, chosen: Sequence[Target],
             load: Callable[[Target], ManifestSet]) -> dict[str, ManifestSet]:
    """Every chosen environment's manifests (``load`` one), every problem of every one reported at once
    (each line says its environment), then two environments of one account declaring one space refused."""
    loaded: dict[str, ManifestSet] = {}
    problems: list[str] = []
    for target in chosen:
        try:
            loaded[target.name] = load(target)
        except ManifestError as exc:
            problems.extend(f"[{target.name}] {p}" for p in exc.problems)
        except ReconcilerError as exc:
            problems.append(f"[{target.name}] {exc}")
    if problems:
        raise ManifestError(problems)
    check_accounts(project, {name: manifests.read_scope().spaces for name, manifests in loaded.items()},
                   {t.name: t.account for t in chosen})
    return loaded


@dataclass(frozen=True)
class Planned:
    """One environment's plan, or why it has none."""

    name: str
    plan: Plan | None = None
    live: LiveState | None = None
    error: ReconcilerError | None = None


def plan_all(chosen: Sequence[Target], loaded: Mapping[str, ManifestSet], options: Mapping[str, PlanOptions],
             connect: Callable[[Connection, asyncio.Runner], ApiClient]) -> dict[str, Planned]:
    """Every environment planned: accounts at once on one event loop, the environments of one account
    one after the other on its client. ``connect(conn, runner)`` makes an account's client on the
    run's loop (``runner``). An environment's failure is its result, not the others'."""
    by_account: dict[tuple[str, str], list[Target]] = {}
    for target in chosen:
        by_account.setdefault(target.account, []).append(target)
    results: dict[str, Planned] = {}

    async def plan_account(client: ApiClient, group: Sequence[Target]) -> None:
        for target in group:
            try:
                live, plan = await workflow.read_and_plan(loaded[target.name], client, options[target.name])
                results[target.name] = Planned(target.name, plan, live)
            except ReconcilerError as exc:
                results[target.name] = Planned(target.name, error=exc)

    async def plan_accounts(clients: Mapping[tuple[str, str], ApiClient]) -> None:
        await asyncio.gather(*(plan_account(client, by_account[account]) for account, client in clients.items()))

    with asyncio.Runner() as runner, ExitStack() as stack:  # the clients close before the loop
        clients: dict[tuple[str, str], ApiClient] = {}
        for account, group in by_account.items():
            try:
                clients[account] = stack.enter_context(connect(group[0].conn, runner))
            except ReconcilerError as exc:
                results.update({t.name: Planned(t.name, error=exc) for t in group})
        runner.run(plan_accounts(clients))
    return {t.name: results[t.name] for t in chosen}


def counts(result: Planned) -> dict[str, Any]:
    """The row of an environment in the table environment x action."""
    if result.plan is None:
        return {"environment": result.name, "error": str(result.error)}
    s = result.plan.summary()
    return {"environment": result.name, **{k: s[k] for k in ("create", "update", "delete", "replace", "unmanaged")}}
