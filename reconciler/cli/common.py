"""What the command modules (``main``, ``pull``, ``watch``) share besides their flags
(``flags``): loading the manifests, one-off lines on stderr, the command's client and its
events, the read's progress. It imports no command module, so none of them imports another."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from reconciler.telemetry import Telemetry

#: Where the running command's ``Telemetry`` is kept on its click context (``observe`` puts it
#: there; the command passes it to ``workflow.connect``): passed in, never a process-global.
TELEMETRY = "reconciler.telemetry"


class NotRun(click.UsageError):
    """A usage error a shared option's decorator finds before the command starts its work (a
    missing PATH, --env with PATHs): like click's own, it is no run (``@observed`` reports none)."""


def load(paths: tuple[str, ...] | list[str], variables: tuple[str, ...] = (),
         var_files: tuple[str, ...] = (), policies: tuple[str, ...] = ()) -> Any:
    """Manifests with their variables and policies; load warnings (an unused --var) on stderr."""
    from reconciler.workflow import load

    manifests = load(paths, sys.stdin if "-" in paths else None, var_assignments=variables, var_files=var_files,
                     policy_paths=policies)
    for warning in manifests.warnings:
        say(f"Warning: {warning}", "warning", message=warning)
    return manifests


def observer() -> Telemetry | None:
    """The running command's telemetry: None outside a command, or for one without (``watch``)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(TELEMETRY)


def say(line: str, event: str, **fields: Any) -> None:
    """A one-off line for stderr: as is, or an event under --log-format json (never both)."""
    if (telemetry := observer()) is not None and telemetry.log_format == "json":
        telemetry.event(event, **fields)
    else:
        click.echo(line, err=True)


def connect(conn: Any, *, quiet: bool, verbose: bool, read_only: bool = False, runner: Any = None) -> Any:
    """The command's client (``workflow.connect``), observed by the command's telemetry. Retries and
    waits go to stderr as they happen (every request too with -v); not with -q (unless -v). Under
    --log-format json, as the telemetry's events."""
    from reconciler.workflow import connect

    telemetry = observer()
    on_event: Callable[[str], None] | None = None
    if verbose or not quiet:  # as text lines, or JSON events (--log-format json)
        on_event = telemetry.client_events() if telemetry is not None else lambda line: click.echo(line, err=True)
    return connect(conn, read_only=read_only, on_event=on_event, trace=verbose, telemetry=telemetry, runner=runner)


def read_progress(client: Any, quiet: bool) -> Any:
    from reconciler.cli.progress import read_progress

    return read_progress(client, enabled=False if quiet else None)
