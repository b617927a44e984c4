"""What the command modules (``cli``, ``cli_pull``, ``cli_watch``) share besides their flags
(``cli_flags``): loading the manifests, one-off lines on stderr, the client's events, the read's
progress. It imports no command module, so none of them imports another."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click


def load(paths: tuple[str, ...] | list[str], variables: tuple[str, ...] = (),
         var_files: tuple[str, ...] = (), policies: tuple[str, ...] = ()) -> Any:
    """Manifests with their variables and policies; load warnings (an unused --var) on stderr."""
    from reconciler.workflow import load

    manifests = load(paths, sys.stdin if "-" in paths else None, var_assignments=variables, var_files=var_files,
                     policy_paths=policies)
    for warning in manifests.warnings:
        say(f"Warning: {warning}", "warning", message=warning)
    return manifests


def say(line: str, event: str, **fields: Any) -> None:
    """A one-off line for stderr: as is, or an event under --log-format json (never both)."""
    from reconciler.telemetry import current

    if (observer := current()) is not None and observer.log_format == "json":
        observer.event(event, **fields)
    else:
        click.echo(line, err=True)


def events(quiet: bool) -> Callable[[str], None] | None:
    """Retries and waits go to stderr as they happen (every request too with -v); not with -q. Under
    --log-format json (a telemetry observer), as its events."""
    from reconciler.telemetry import current

    if quiet:
        return None
    if (observer := current()) is not None:  # as text lines, or JSON events (--log-format json)
        return observer.client_events()
    return lambda line: click.echo(line, err=True)


def read_progress(client: Any, quiet: bool) -> Any:
    from reconciler.progress import read_progress

    return read_progress(client, enabled=False if quiet else None)
