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


def exchange(port: int, request: bytes, host: str = "127.0.0.1") -> bytes:
    """What the server sends back for ``request`` on a connection of its own, until it closes."""
    with socket.create_connection((host, port)) as s:
        s.settimeout(30)
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        return answer


@pytest.mark.parametrize("request_head", [
    b"HELLO\r\n\r\n",
    b"GET /healthz\r\n\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon in this header\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\n\r\n",  # HTTP/1.1 requires Host
], ids=["no-request-line", "no-version", "http2-preface", "malformed-header", "no-host"])
def test_a_request_that_is_not_http_1_x_is_answered_400(health: HealthServer, request_head: bytes) -> None:
    answer = exchange(health.server_address[1], request_head)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n") and answer.endswith(b"\r\n\r\nbad request\n")


def test_head_answers_the_headers_of_get_and_no_body(health: HealthServer) -> None:
    port = health.server_address[1]
    got = exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    head = exchange(port, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert got == head + b"ok\n"
    assert b"\r\nContent-Length: 3\r\n" in head and b"\r\nConnection: close\r\n" in head
    assert exchange(port, b"GET /readyz?probe=1 HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 503 Service Unavailable")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_the_server_listens_where_it_is_told(host: str) -> None:
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        server = HealthServer((host, 0), Telemetry(), healthy=lambda: True, ready=lambda: True).start()
    except Exception as exc:  # noqa: BLE001 - an IPv6 stack without ::1
        pytest.skip(f"cannot listen on {host}: {exc}")
    try:
        assert server.server_address[0] == host
        assert exchange(server.server_address[1], b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", host).endswith(b"ok\n")
    finally:
        server.close()
