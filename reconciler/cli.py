"""The command line: parses flags, calls the layers, maps ``ReconcilerError`` to exit codes once."""

from __future__ import annotations

import sys
from typing import Any

import click

from reconciler import __version__
from reconciler.errors import ReconcilerError


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ReconcilerError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="reconciler")
def main() -> None:
    """Declarative, stateless reconciler for the platform's management API."""


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8787, show_default=True, type=int)
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite file; state survives restarts.")
@click.option("--admin-key", default="admin-key", show_default=True)
@click.option("--reader-key", default="reader-key", show_default=True)
@click.option("--space-key", multiple=True, metavar="KEY=SPACE", help="A key that manages one space's restrictions.")
@click.option("--rate-limit", type=float, metavar="RPS", help="Token bucket per key.")
@click.option("--faults", metavar="SPEC", help="e.g. seed=7,error_rate=0.05,reset_rate=0.02,latency_ms=20")
@click.option("--errors-url", default=None, help="Base of the problem type URIs.")
def emulator(
    host: str, port: int, db: str | None, admin_key: str, reader_key: str, space_key: tuple[str, ...],
    rate_limit: float | None, faults: str | None, errors_url: str | None,
) -> None:
    """Serve the API emulator over HTTP."""
    from reconciler.emulator.core import DEFAULT_ERRORS_URL, EmulatorSettings
    from reconciler.emulator.server import serve

    space_keys: dict[str, str] = {}
    for item in space_key:
        key, sep, space = item.partition("=")
        if not sep or not key or not space:
            raise click.BadParameter(f"expected KEY=SPACE, got {item!r}", param_hint="--space-key")
        space_keys[key] = space
    serve(EmulatorSettings(
        host=host, port=port, db=db, admin_key=admin_key, reader_key=reader_key, space_keys=space_keys,
        rate_limit=rate_limit, faults=faults, errors_url=errors_url or DEFAULT_ERRORS_URL,
    ))
