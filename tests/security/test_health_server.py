"""Finding 5: idle or half-open sockets must not starve watch's /healthz: requests are read within a
timeout, and connections are bounded (the oldest silent one makes room), over real loopback sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from reconciler.telemetry import Telemetry
from reconciler.watch import HealthServer

IDLE = 300


@pytest.fixture
def health() -> Iterator[HealthServer]:
    server = HealthServer(("127.0.0.1", 0), Telemetry(), healthy=lambda: True, ready=lambda: False,
                          max_connections=64).start()
    yield server
    server.close()


def closed(s: socket.socket) -> bool:
    """Whether the server closed the connection: an end of stream, or a reset (the kernel resets a
    connection closed with bytes still unread, as the slow client's half request may be when the
    server drops it before reading it: seen once under load)."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_hundreds_of_idle_sockets_do_not_starve_healthz(health: HealthServer) -> None:
    port = health.server_address[1]
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(IDLE)]
    idle[0].sendall(b"GET /metr")  # a slow client, half a request line
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
        assert answer.status_code == 200 and answer.text == "ok\n"
        assert httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30).status_code == 503
        # the server holds at most its bound: the oldest silent connections were closed to make room
        for s in idle:
            s.settimeout(30)  # an upper bound only
        assert all(closed(s) for s in idle[:IDLE - 64])
    finally:
        for s in idle:
            s.close()


def test_a_silent_connection_is_closed_after_the_idle_timeout() -> None:
    server = HealthServer(("127.0.0.1", 0), Telemetry(), healthy=lambda: True, ready=lambda: True,
                          idle_timeout=0.2).start()
    try:
        with socket.create_connection(("127.0.0.1", server.server_address[1])) as silent:
            silent.settimeout(30)  # an upper bound only: the server closes it long before
            assert silent.recv(1) == b""
    finally:
        server.close()


def test_an_oversized_request_head_is_refused(health: HealthServer) -> None:
    with socket.create_connection(("127.0.0.1", health.server_address[1])) as s:
        s.settimeout(30)
        s.sendall(b"GET /healthz HTTP/1.1\r\nX-Junk: " + b"a" * 20000 + b"\r\n\r\n")
        assert s.recv(64).startswith(b"HTTP/1.1 431")


def test_metrics_and_unknown_paths_answer_as_before(health: HealthServer) -> None:
    url = f"http://127.0.0.1:{health.server_address[1]}"
    assert "reconciler_build_info" in httpx.get(f"{url}/metrics", timeout=30).text
    assert httpx.get(f"{url}/nope", timeout=30).status_code == 404
    assert httpx.post(f"{url}/healthz", timeout=30).status_code == 405
