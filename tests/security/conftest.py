"""Fixtures of the security tests: the e2e ones (the quickstart tree, the CLI against an emulator
over a real socket) and a collector: a loopback HTTP server standing for an attacker's host, which
records whatever reaches it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.e2e.conftest import ENV, cli, reset_stats, stats, tree  # noqa: F401 (fixtures)


@dataclass
class Collector:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def collector() -> Iterator[Collector]:
    """An HTTP server on 127.0.0.1 that answers 200 to everything and records each request (its
    method, path, headers and body): nothing a test sends should ever reach it."""
    yield from _collector()


@pytest.fixture
def proxy() -> Iterator[Collector]:
    """Another such server, set as a proxy: it must receive nothing a loopback target is sent."""
    yield from _collector()


def _collector() -> Iterator[Collector]:
    found = Collector("")

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            found.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                   "body": self.rfile.read(length).decode("utf-8", "replace")})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_CONNECT = _any  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    found.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
