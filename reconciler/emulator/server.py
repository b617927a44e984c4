"""``reconciler emulator``: serve the emulator over HTTP with uvicorn.

The banner prints the URL and the emulator's own API keys: they are throwaway development keys
chosen on the command line (or the defaults), and a user needs them to point the reconciler at
the emulator. Whether state lives in memory or in a SQLite file is said too, because only the
latter survives a restart.
"""

from __future__ import annotations

import socket
import sqlite3
import sys
from typing import TextIO

import uvicorn

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings
from reconciler.errors import ConfigError


def banner(settings: EmulatorSettings) -> str:
    """What the command prints before serving."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    lines = [
        f"Emulator listening on http://{host}:{settings.port}  (paths start with /v2;"
        f" OpenAPI at /v2/openapi.json)",
        f"  admin key:  {settings.admin_key}",
        f"  reader key: {settings.reader_key}",
    ]
    lines += [f"  space key:  {key} (manages space {space!r})" for key, space in sorted(settings.space_keys.items())]
    lines.append(f"  state:      SQLite file {settings.db} (kept across restarts)" if settings.db
                 else "  state:      in memory (lost when the emulator stops; use --db FILE to keep it)")
    if settings.rate_limit is not None:
        burst = settings.rate_burst if settings.rate_burst is not None else max(1.0, settings.rate_limit)
        lines.append(f"  rate limit: {settings.rate_limit:g} requests/second per key (a bucket of {burst:g})")
    if settings.faults:
        lines.append(f"  faults:     {settings.faults}")
    return "\n".join(lines)


def serve(settings: EmulatorSettings, out: TextIO | None = None) -> None:
    """Build the emulator and its app, print the banner, and serve until interrupted."""
    try:
        emu = Emulator(settings)
    except sqlite3.Error as exc:
        raise ConfigError(f"--db {settings.db}: cannot open the emulator's SQLite file ({exc})") from None
    try:
        app = create_app(emu)
    except ValueError as exc:  # a bad --faults spec or --rate-limit
        emu.store.close()
        raise ConfigError(str(exc)) from None
    try:  # bound here, so that a port in use is an error of ours (exit 1), not uvicorn's exit 3
        sock = socket.create_server((settings.host.strip("[]"), settings.port),
                                    family=socket.AF_INET6 if ":" in settings.host else socket.AF_INET)
    except OSError as exc:
        emu.store.close()
        raise ConfigError(f"--host {settings.host} --port {settings.port}: cannot listen "
                          f"({exc.strerror or exc})") from None
    stream = out or sys.stdout
    print(banner(settings), file=stream, flush=True)
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])
    finally:
        sock.close()
        emu.store.close()
