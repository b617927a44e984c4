"""``reconciler emulator``: serve the emulator over HTTP with uvicorn.

The banner prints the URL and the emulator's own API keys: they are throwaway development keys
chosen on the command line (or the defaults), and a user needs them to point the reconciler at
the emulator. Whether state lives in memory or in a SQLite file is said too, because only the
latter survives a restart.

Over its socket the emulator answers only requests whose ``Host`` is a loopback name or address,
the host it listens on, or one given with ``--allowed-host`` (``host_guard``): a web page the
user visits cannot reach it by a DNS name rebound to 127.0.0.1 and use its well-known default
keys. In-process (``--emulator FILE``, the tests' ASGI clients) there is no socket to reach.
"""

from __future__ import annotations

import ipaddress
import socket
import sqlite3
import sys
from typing import TextIO

import uvicorn
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings, Problem
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
        app = host_guard(create_app(emu), emu)
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


def host_guard(app: ASGIApp, emu: Emulator) -> ASGIApp:
    """``app`` answering only the hosts ``served_host`` accepts; any other ``Host`` gets a 400
    problem that says how to allow it (see the module docstring)."""
    allowed = {h.lower().strip("[]") for h in (emu.settings.host, *emu.settings.allowed_hosts)}

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = Headers(scope=scope).get("host", "")
            if not served_host(host, allowed):
                shown = host.encode("unicode_escape").decode("ascii")[:100]
                detail = (f"Host {shown!r} is not served here: reach the emulator by a loopback address or name, "
                          "or start it with --allowed-host NAME")
                await emu.problem(Problem(400, detail))(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


def served_host(host: str, allowed: set[str]) -> bool:
    """Whether a ``Host`` header (``name[:port]``, ``[v6]:port``) names a loopback address,
    ``localhost`` (or a name under it), or one of ``allowed`` (the wildcard addresses excepted)."""
    # "[::1]:8787" -> "::1"; "name:8787" -> "name" (an IPv6 address in a Host header has brackets)
    name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
    name = name.rstrip(".").lower()
    if not name:
        return False
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name in allowed
    return address.is_loopback or (name in allowed and not address.is_unspecified)
