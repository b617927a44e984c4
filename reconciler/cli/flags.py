"""Every flag that fills a field of ``PlanOptions`` or ``workflow.Connection``, declared once.

A ``Flag`` is named by the field it fills. ``@plan_flags(...)`` and ``@connection_flags`` add a
group of them to a command: their values are collected on the click context as they are parsed
(never passed as keyword arguments), and the callback receives the object built from them
(``options``, ``conn``). No command can drop one: a flag's name is the field it sets, and the
test (tests/cli/test_flags.py) passes every flag of every command and finds its value there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import click

from reconciler.client.settings import DEFAULT_PARALLELISM, REGIONS


@dataclass(frozen=True)
class Flag:
    name: str  # the PlanOptions / Connection field it fills
    decls: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)  # click.option's keywords
    saved: bool = False  # recorded in a plan file: ``apply PLANFILE`` refuses it (it was made with its own)


def collect(into: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback that keeps a parameter's value on the context, under ``into``, instead of
    passing it to the command (``collected(into)`` reads them back)."""
    def keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        ctx.meta.setdefault(into, {})[param.name] = value
        return value

    return keep


def collected(into: str) -> dict[str, Any]:
    return dict(click.get_current_context().meta.get(into, {}))


PLAN_FLAGS = (
    Flag("targets", ("--target",), dict(multiple=True, metavar="GLOB", help="Limit the run to these resources "
         "(address globs: KIND/NAME, KIND/SPACE/NAME) and what they depend on (repeatable)."), saved=True),
    Flag("excludes", ("--exclude",), dict(multiple=True, metavar="GLOB", help="Leave these resources out of the "
         "run: neither planned nor pruned (address globs; repeatable)."), saved=True),
    Flag("policies", ("--policy",), dict(multiple=True, type=click.Path(exists=True), metavar="PATH",
         help="Policy documents to evaluate besides the tree's (a file or a directory of Policy documents only; "
              "repeatable).")),
    Flag("prune", ("--prune",), dict(is_flag=True, help="Delete undeclared resources inside what the tree owns (its "
         "Ownership document; else the kinds used in the spaces named)."), saved=True),
    Flag("allow_empty", ("--allow-empty",), dict(is_flag=True, help="Let --prune delete every resource of a kind."),
         saved=True),
    Flag("allow_replace", ("--allow-replace",), dict(is_flag=True, help="Allow replacements (type or provider "
         "changes).")),
    Flag("rotate", ("--rotate",), dict(multiple=True, metavar="KIND/NAME", help="Send this resource's secrets even "
         "when they exist live (repeatable)."), saved=True),
    Flag("rotate_secrets", ("--rotate-secrets",), dict(is_flag=True, help="Send every secret even when it exists "
         "live."), saved=True),
    Flag("since", ("--since",), dict(metavar="REF", help="Send write-only fields whose declaration changed since "
         "this git revision (e.g. the merge base)."), saved=True),
    Flag("version_name", ("--version-name",), dict(help="Name of the dataset version an apply makes (default: UTC "
         "timestamp)."), saved=True),
    Flag("variables", ("--var",), dict(multiple=True, metavar="NAME=VALUE", help="Set a variable (repeatable; a "
         "string; beats --var-file and RECONCILER_VAR_NAME)."), saved=True),
    Flag("var_files", ("--var-file",), dict(multiple=True, type=click.Path(dir_okay=False), help="A YAML mapping "
         "of variables (repeatable; later files win; never loaded as a manifest)."), saved=True),
)

CONNECTION_FLAGS = (
    Flag("base_url", ("--base-url",), dict(help="Service root, without /v2 (else --host, --region, then "
         "RECONCILER_BASE_URL).")),
    Flag("region", ("--region",), dict(type=click.Choice(REGIONS),
         help="Build the base URL from the regional host.")),
    Flag("host", ("--host",), dict(help="Build the base URL from a custom host.")),
    Flag("api_key_file", ("--api-key-file",), dict(type=click.Path(dir_okay=False), help="Read the API key from "
         "FILE (else RECONCILER_API_KEY).")),
    Flag("emulator", ("--emulator",), dict(metavar="FILE", type=click.Path(dir_okay=False), help="Run against an "
         "in-process emulator persisted in FILE (SQLite).")),
    Flag("parallelism", ("--parallelism",), dict(default=DEFAULT_PARALLELISM, show_default=True,
         type=click.IntRange(1, 64), help="Concurrent requests.")),
    Flag("ca_file", ("--ca-file",), dict(type=click.Path(dir_okay=False), envvar="RECONCILER_CA_FILE",
         help="Trust the CA certificates in FILE (PEM) for TLS; else SSL_CERT_FILE, else certifi's.")),
    Flag("timeout", ("--timeout",), dict(type=click.FloatRange(0.1, 600), metavar="SECONDS",
         help="Connect timeout, and how long refused connections are retried (default 5).")),
)


#: Flags of two commands that fill no options object: --approve (apply, watch), --rehearse (plan, apply).
APPROVE = click.option("--approve", "approvals", multiple=True, metavar="RULE",
                       help="Approve what this policy rule (effect require_approval) holds back (repeatable).")
REHEARSE = click.option("--rehearse", is_flag=True, help="Rehearse the plan on an in-process replica of the live "
                        "state read first (no request, no secret); exit 1 on a refusal or when the replica does "
                        "not converge.")


def _bind(into: str, flags: Iterable[Flag], build: Callable[..., Any], argument: str,
          override: Mapping[str, Mapping[str, Any]]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add ``flags`` to a command; its callback gets ``argument=`` what ``build`` makes of their values."""
    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> Any:
            return f(*args, **{argument: build(**collected(into)), **kwargs})

        for flag in reversed(tuple(flags)):
            run = click.option(*flag.decls, flag.name, expose_value=False, callback=collect(into),
                               **{**flag.settings, **override.get(flag.name, {})})(run)
        return run

    return decorate


def plan_options(**values: Any) -> Any:
    """The ``PlanOptions`` of a command's flags (the planner's model is imported only when a command runs)."""
    from reconciler.plan.model import PlanOptions

    return PlanOptions(**values)


def connection(**values: Any) -> Any:
    """The ``workflow.Connection`` of a command's flags (imported only when a command runs)."""
    from reconciler.workflow import Connection

    return Connection(**values)


def plan_flags(*names: str, build: Callable[..., Any] = plan_options,
               **override: Mapping[str, Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``PLAN_FLAGS`` named, in that order (all when none is); ``options=build(...)`` given to the
    callback (a ``PlanOptions`` unless ``build`` says otherwise). ``override`` changes a flag's click
    settings for this command (``since={"help": ...}``)."""
    flags = {f.name: f for f in PLAN_FLAGS}
    return _bind("plan_options", [flags[n] for n in names] if names else PLAN_FLAGS, build, "options", override)


def connection_flags(f: Callable[..., Any]) -> Callable[..., Any]:
    """The ``CONNECTION_FLAGS``, ``conn: Connection`` given to the callback; and ``-v``/``-q``
    (``verbose``, ``quiet``), which say how much it prints."""
    f = click.option("-q", "--quiet", is_flag=True, help="Print only changes, drift and errors (for cron).")(f)
    f = click.option("-v", "--verbose", is_flag=True, help="Report every request on stderr too.")(f)
    return _bind("connection", CONNECTION_FLAGS, connection, "conn", {})(f)


def flags_given(options: Any, names: Iterable[str]) -> list[str]:
    """The flags among ``names`` (PlanOptions fields) set in ``options``, as typed (``--since``)."""
    wanted = set(names)
    return [f.decls[0] for f in PLAN_FLAGS if f.name in wanted and getattr(options, f.name)]


#: What a plan file records of the flags: ``apply PLANFILE`` refuses them.
SAVED = tuple(f.name for f in PLAN_FLAGS if f.saved)
