"""``lean.LeanClient`` against a loopback server of the test's own (h11 on a thread, so it answers
whether or not the client's loop runs): keep-alive, every framing of an answer, connections the
server closes, timeouts, a refused port, TLS, request bodies, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import resource
import select
import socket
import socketserver
import ssl
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import h11
import httpx
import pytest
import trustme

from reconciler.client.http import ApiClient, connect_cause
from reconciler.client.lean import MAX_HEAD, LeanClient
from reconciler.errors import ProblemError

TIMEOUT = httpx.Timeout(5.0)


@dataclass
class Seen:
    request: h11.Request
    body: bytes
    connection: int


#: What the server does with a request: the raw bytes to write (then keep the connection), or
#: ``None`` to close it without answering. ``close`` after the bytes closes it.
Answer = Callable[[Seen], "Reply"]


@dataclass
class Reply:
    raw: bytes | None
    close: bool = False
    pause: float = 0.0  # before answering
    drip: float = 0.0  # between the bytes of ``raw`` (a slow answer)


def ok(body: bytes = b'{"ok":true}', *, extra: str = "") -> Reply:
    return Reply(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                 + str(len(body)).encode() + b"\r\n" + extra.encode() + b"\r\n" + body)


@dataclass
class Server:
    answer: Answer
    tls: ssl.SSLContext | None = None
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0
    closed_by_client: int = 0
    close_idle_after: float | None = None  # close a connection this long after answering on it

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"

    def serve(self, sock: socket.socket) -> None:
        self.connections += 1
        number = self.connections
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True)
        conn = h11.Connection(h11.SERVER)
        while True:
            request, body = None, b""
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    if self.close_idle_after is not None and request is None:
                        sock.settimeout(self.close_idle_after)
                    try:
                        data = sock.recv(65536)
                    except TimeoutError:
                        return
                    finally:
                        sock.settimeout(None)
                    if not data:
                        self.closed_by_client += 1
                        return
                    conn.receive_data(data)
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
            assert request is not None
            seen = Seen(request, body, number)
            self.seen.append(seen)
            reply = self.answer(seen)
            time.sleep(reply.pause)
            if reply.raw is None:
                return
            if reply.drip:
                for i in range(len(reply.raw)):
                    sock.sendall(reply.raw[i:i + 1])
                    time.sleep(reply.drip)
            else:
                sock.sendall(reply.raw)
            if reply.close:
                return
            conn = h11.Connection(h11.SERVER)  # the test's own replies are raw bytes: a fresh parser a cycle

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> Server:
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with contextlib.suppress(OSError, h11.ProtocolError):
                    owner.serve(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def lean(server: Server, *, path: str = "", timeout: httpx.Timeout = TIMEOUT, context: ssl.SSLContext | None = None,
         scheme: str = "http", keep: int = 10) -> LeanClient:
    return LeanClient(server.url(scheme) + path, headers={"Authorization": "Bearer k", "User-Agent": "t"},
                      timeout=timeout, ssl_context=context, keep=keep)


def run(client: LeanClient, *work: Callable[[LeanClient], Any]) -> list[Any]:
    """Each of ``work`` run on one loop, one after another, the client closed at the end."""
    async def main() -> list[Any]:
        try:
            return [await w(client) for w in work]
        finally:
            await client.aclose()
    return asyncio.run(main())


def get(target: str = "/v2/x") -> Callable[[LeanClient], Any]:
    return lambda c: c.request("GET", target)


@contextlib.contextmanager
def listening() -> Iterator[tuple[socket.socket, int]]:
    """A loopback socket listening for one connection that the test accepts itself, and its port."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        yield listener, listener.getsockname()[1]


def test_requests_share_a_kept_connection_and_carry_host_key_and_base_path() -> None:
    with Server(lambda s: ok()) as server:
        answers = run(lean(server, path="/api/"), *(get(f"/v2/x?n={i}") for i in range(5)))
    assert [a.json() for a in answers] == [{"ok": True}] * 5
    assert server.connections == 1
    first = server.seen[0].request
    assert first.target == b"/api/v2/x?n=0" and first.method == b"GET"
    headers = dict(first.headers)
    assert headers[b"host"] == f"127.0.0.1:{server.port}".encode()
    assert headers[b"authorization"] == b"Bearer k" and headers[b"user-agent"] == b"t"
    assert b"content-length" not in headers  # a GET has no body


def test_requests_in_flight_each_get_a_connection_and_at_most_keep_are_kept() -> None:
    with Server(lambda s: Reply(ok().raw, pause=0.05)) as server:
        async def burst(client: LeanClient) -> None:
            await asyncio.gather(*(client.request("GET", "/v2/x") for _ in range(6)))
        run(lean(server, keep=4), burst, burst)
    assert server.connections == 8  # six at once, four kept for the second burst, two more made


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 4\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nbody",  # framed by the end of the connection
    b"HTTP/1.0 200 OK\r\n\r\nbody",
])
def test_an_answer_that_ends_the_connection_is_read_whole_and_the_next_request_opens_another(raw: bytes) -> None:
    with Server(lambda s: Reply(raw, close=True)) as server:
        answers = run(lean(server), get(), get())
    assert [a.content for a in answers] == [b"body", b"body"]
    assert server.connections == 2


def test_a_connection_dropped_is_forgotten_a_long_run_keeps_only_those_open() -> None:
    raw = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 4\r\n\r\nbody"
    with Server(lambda s: Reply(raw, close=True)) as server:
        client = lean(server)

        async def held(c: LeanClient) -> int:
            return len(c._open)  # the connections aclose would close: those in flight or kept idle
        (*_, left) = run(client, get(), get(), get(), held)
    assert left == 0


def test_a_chunked_answer_is_joined() -> None:
    raw = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n"
    with Server(lambda s: Reply(raw)) as server:
        (answer,) = run(lean(server), get())
    assert answer.json() == [1, 2]


def test_a_connection_the_server_closed_while_idle_is_not_used_again() -> None:
    assert closed_while_idle() == (200, 200, 2)


def test_a_kept_connection_the_server_closes_while_the_loop_runs_is_let_go_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    async def pause(c: LeanClient) -> None:
        await asyncio.sleep(0.3)  # the server closes the kept connection: the loop sees it go

    with Server(lambda s: ok(), close_idle_after=0.05) as server:
        first, _, second = run(lean(server), get(), pause, get())
    assert (first.status_code, second.status_code, server.connections) == (200, 200, 2)
    assert not [r for r in caplog.records if r.name == "asyncio"]


def closed_while_idle() -> tuple[int, int, int]:
    """Two requests with a pause between, in which the server closes the kept connection: the two
    statuses and the connections the server saw (2: the closed one was not used again)."""
    server = Server(lambda s: ok(), close_idle_after=0.05)
    with server:
        client = lean(server)
        with asyncio.Runner() as runner:  # the loop does not run between the two: the close is not seen yet
            first = runner.run(client.request("GET", "/v2/x"))
            time.sleep(0.3)
            second = runner.run(client.request("GET", "/v2/x"))
            runner.run(client.aclose())
    return first.status_code, second.status_code, server.connections


def test_where_there_is_no_poll_an_idle_connection_is_checked_with_select_without_waiting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float | None] = []
    real = select.select

    def checked(r: Any, w: Any, x: Any, timeout: float | None = None) -> Any:
        waits.append(timeout)
        return real(r, w, x, timeout)

    monkeypatch.delattr(select, "poll")
    monkeypatch.setattr(select, "select", checked)
    assert closed_while_idle() == (200, 200, 2)
    with Server(lambda s: ok()) as server:  # kept open: nothing to read, the check must not wait for it
        answers = run(lean(server), get(), get(), get())
    assert [a.status_code for a in answers] == [200] * 3 and server.connections == 1
    assert waits and set(waits) == {0}


def test_an_idle_connection_whose_descriptor_is_past_select_s_limit_is_checked_too() -> None:
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1200:
        pytest.skip("the limit on open files is under 1200 here")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]  # the sockets get numbers past 1024
    try:
        assert closed_while_idle() == (200, 200, 2)
    finally:
        for fd in held:
            os.close(fd)


def test_a_connection_dropped_mid_answer_is_a_protocol_error() -> None:
    answer = Reply(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort", close=True)
    with Server(lambda s: answer) as server, pytest.raises(httpx.RemoteProtocolError):
        run(lean(server), get())


def test_a_connection_closed_without_an_answer_is_a_protocol_error() -> None:
    with Server(lambda s: Reply(None)) as server, \
            pytest.raises(httpx.RemoteProtocolError, match="^the server closed the connection without answering$"):
        run(lean(server), get())


def test_a_request_in_flight_when_the_client_is_closed_fails_at_once() -> None:
    with Server(lambda s: Reply(ok().raw, pause=2.0)) as server:
        client = lean(server)

        async def close_while_waiting() -> None:
            request = asyncio.ensure_future(client.request("GET", "/v2/x"))
            while not server.seen:
                await asyncio.sleep(0.01)
            await client.aclose()
            with pytest.raises(httpx.RemoteProtocolError, match="^the connection was closed before the answer came$"):
                await asyncio.wait_for(request, 1.0)

        asyncio.run(close_while_waiting())


def test_a_connection_reset_mid_answer_is_a_read_error_caused_by_the_reset() -> None:
    with listening() as (listener, port):

        def answer_part_then_reset() -> None:
            conn, _ = listener.accept()
            read_head(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort")
            time.sleep(0.2)
            reset(conn)

        threading.Thread(target=answer_part_then_reset, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
        with pytest.raises(httpx.ReadError, match="^the connection was lost: ") as caught:
            run(client, get())
    assert isinstance(caught.value.__cause__, ConnectionResetError)


@pytest.mark.parametrize("raw", [b"not http at all\r\n\r\n", b"HTTP/1.1 200 OK\r\nx: " + b"a" * 16 * MAX_HEAD + b"\r\n\r\n"])
def test_an_answer_that_is_not_http_or_has_a_head_too_large_is_a_protocol_error(raw: bytes) -> None:
    with Server(lambda s: Reply(raw, close=True)) as server, \
            pytest.raises(httpx.RemoteProtocolError, match="^the answer broke HTTP/1.1: ") as caught:
        run(lean(server), get())
    assert isinstance(caught.value.__cause__, h11.RemoteProtocolError)


def read_head(conn: socket.socket) -> bytes:
    """Read from a test server's connection until a request head has come; what came."""
    got = b""
    while b"\r\n\r\n" not in got:
        got += conn.recv(65536)
    return got


def reset(conn: socket.socket) -> None:
    """Close a test server's connection with a reset (RST), not a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def test_no_answer_within_the_read_timeout_is_a_read_timeout_and_the_connection_is_dropped() -> None:
    calls: list[int] = []

    def answer(seen: Seen) -> Reply:
        calls.append(1)
        return Reply(ok().raw, pause=0.5 if len(calls) == 1 else 0.0)

    with Server(answer) as server:
        client = lean(server, timeout=httpx.Timeout(5.0, read=0.2))

        async def timed_out(c: LeanClient) -> str:
            with pytest.raises(httpx.ReadTimeout, match="^timed out waiting for the answer$"):
                await c.request("GET", "/v2/x")
            return "timed out"

        assert run(client, timed_out, get())[1].status_code == 200
    assert server.connections == 2


def test_the_read_timeout_is_between_reads_not_for_the_whole_answer() -> None:
    raw = ok(b"0123456789").raw
    assert raw is not None
    with Server(lambda s: Reply(raw, drip=0.03)) as server:  # a byte every 30 ms: about 3 s in all
        (answer,) = run(lean(server, timeout=httpx.Timeout(5.0, read=1.0)), get())
    assert answer.content == b"0123456789"


def test_an_answer_that_stalls_after_its_first_bytes_times_out_as_a_read_timeout() -> None:
    with listening() as (listener, port):

        def answer_half_then_stall() -> None:
            conn, _ = listener.accept()
            with conn:
                read_head(conn)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n01234")
                time.sleep(2.0)  # then nothing: well past the read timeout, before closing

        threading.Thread(target=answer_half_then_stall, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=httpx.Timeout(5.0, read=0.3),
                            ssl_context=None, keep=1)
        with pytest.raises(httpx.ReadTimeout):
            run(client, get())


def test_an_answer_that_comes_before_the_body_is_sent_is_returned_once_the_body_is() -> None:
    """A server may answer (a 413, say) as soon as it has the head, and go on reading the body: the
    answer is the request's, on a connection not kept (it read the body to no end)."""
    with listening() as (listener, port):

        def answer_early() -> None:
            conn, _ = listener.accept()
            with conn:
                got = b""
                while b"\r\n\r\n" not in got:
                    got += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")  # the first request's
                got = got[got.index(b"\r\n\r\n") + 4:]
                while b"\r\n\r\n" not in got:
                    got += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 413 Content Too Large\r\ncontent-length: 0\r\n\r\n")
                while conn.recv(65536):  # the rest of the body, read to no end
                    pass

        async def slow_body() -> AsyncIterator[bytes]:
            for _ in range(5):
                await asyncio.sleep(0.05)
                yield b"x" * 1024

        threading.Thread(target=answer_early, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
        first, second = run(client, get(), lambda c: c.request("POST", "/v2/x", content=slow_body()))
    assert (first.status_code, first.content) == (200, b"ok")
    assert second.status_code == 413


def test_a_refused_port_is_a_connect_error_caused_by_the_refusal() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
    with pytest.raises(httpx.ConnectError) as caught:
        run(client, get())
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    cause, final = connect_cause(caught.value, httpx.URL(f"http://127.0.0.1:{port}"))
    assert "connection refused" in cause and not final



def test_a_name_is_resolved_once_and_its_addresses_tried_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host name is asked of the system's resolver in the loop's thread, once (asyncio's lookup
    runs in a pool of threads); an address that refuses is passed over for the next; when none
    answers, the next connection asks the resolver again."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.2", 0))
        refused = sock.getsockname()[1]
    asked: list[str] = []
    addresses = ["127.0.0.2", "127.0.0.1"]

    def resolve(host: str, port: int, *args: Any, **kw: Any) -> list[Any]:
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with Server(lambda s: ok()) as server:
        if server.port == refused:
            pytest.skip("the refused port happens to be the server's")
        client = LeanClient(f"http://api.test:{server.port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=0)
        answers = run(client, get(), get())
        assert [a.status_code for a in answers] == [200, 200] and asked == ["api.test"]
        assert server.seen[0].request.headers[0] == (b"host", f"api.test:{server.port}".encode())

        async def refused_then_moved(c: LeanClient) -> int:
            with pytest.raises(httpx.ConnectError):
                await c.request("GET", "/v2/x")
            addresses[:] = ["127.0.0.1"]  # the name moved: asked again, not the address kept
            return (await c.request("GET", "/v2/x")).status_code

        addresses[:] = ["127.0.0.2"]
        asked.clear()
        again = LeanClient(f"http://api.test:{server.port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=0)
        assert run(again, refused_then_moved) == [200]
    assert asked == ["api.test", "api.test"]

@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def tls_server(ca: trustme.CA) -> Server:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return Server(lambda s: ok(), tls=context)


def test_tls_to_a_trusted_certificate_answers(ca: trustme.CA) -> None:
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    with tls_server(ca) as server:
        (answer,) = run(lean(server, scheme="https", context=trusted), get())
    assert answer.json() == {"ok": True}


def test_tls_to_an_untrusted_certificate_is_a_final_connect_error(ca: trustme.CA) -> None:
    with tls_server(ca) as server:
        with pytest.raises(httpx.ConnectError) as caught:
            run(lean(server, scheme="https", context=ssl.create_default_context()), get())
        cause, final = connect_cause(caught.value, httpx.URL(server.url("https")))
    assert "TLS failed" in cause and final


def test_a_body_is_sent_with_its_length_and_a_streamed_one_chunked() -> None:
    big = b"x" * 3_000_000  # more than the socket's buffers: sent as the server reads

    async def chunks() -> AsyncIterator[bytes]:
        for piece in (b"[1,", b"", b"2,", b"3]"):
            yield piece

    with Server(lambda s: ok()) as server:
        run(lean(server), lambda c: c.request("POST", "/v2/x", content=big, headers={"Content-Type": "application/json"}),
            lambda c: c.request("PUT", "/v2/x", content=chunks()), lambda c: c.request("POST", "/v2/x"))
    sized, streamed, empty = server.seen
    assert sized.body == big and dict(sized.request.headers)[b"content-length"] == b"3000000"
    assert dict(sized.request.headers)[b"content-type"] == b"application/json"
    assert streamed.body == b"[1,2,3]" and dict(streamed.request.headers)[b"transfer-encoding"] == b"chunked"
    assert empty.body == b"" and dict(empty.request.headers)[b"content-length"] == b"0"


def test_a_cancelled_exchange_drops_its_connection() -> None:
    calls: list[int] = []

    def answer(seen: Seen) -> Reply:
        calls.append(1)
        return Reply(ok().raw, pause=1.0 if len(calls) == 1 else 0.0)

    with Server(answer) as server:
        async def cancelled(c: LeanClient) -> None:
            task = asyncio.ensure_future(c.request("GET", "/v2/x"))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        answers = run(lean(server), cancelled, get())
    assert answers[1].status_code == 200
    assert server.connections == 2  # the answer to the cancelled request never reaches the next one


def test_a_redirect_is_not_followed() -> None:
    raw = b"HTTP/1.1 302 Found\r\nlocation: https://elsewhere.example/v2/x\r\ncontent-length: 0\r\n\r\n"
    with Server(lambda s: Reply(raw)) as server:
        client = ApiClient(lean(server), max_retries=0)
        with client, pytest.raises(ProblemError) as caught:
            client.run(client.get("/v2/x"))
    assert caught.value.status == 302 and "unexpected redirect" in str(caught.value)
    assert len(server.seen) == 1


def test_a_server_that_stops_reading_and_closes_fails_the_write_instead_of_hanging(
        caplog: pytest.LogCaptureFixture) -> None:
    with listening() as (listener, port):

        def accept_and_drop() -> None:
            conn, _ = listener.accept()
            time.sleep(0.3)  # reads nothing: the client's buffers fill and it waits to drain
            conn.close()

        threading.Thread(target=accept_and_drop, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
        with pytest.raises(httpx.WriteError):  # not sent whole: not a lost answer (ReadError)
            run(client, lambda c: c.request("POST", "/v2/x", content=b"x" * 50_000_000))
    gc.collect()  # the answer's failure was seen: asyncio logs no "exception was never retrieved"
    assert not [r for r in caplog.records if r.name == "asyncio"]


def test_a_body_the_server_does_not_read_within_the_write_timeout_is_a_write_timeout() -> None:
    with listening() as (listener, port):
        held: list[socket.socket] = []

        def accept_and_hold() -> None:
            conn, _ = listener.accept()
            held.append(conn)  # reads nothing, answers nothing: the client waits for its buffers to drain

        threading.Thread(target=accept_and_hold, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=httpx.Timeout(5.0, write=0.3),
                            ssl_context=None, keep=1)
        try:
            with pytest.raises(httpx.WriteTimeout, match="^timed out sending the request$"):
                run(client, lambda c: c.request("POST", "/v2/x", content=b"x" * 50_000_000))
        finally:
            for conn in held:
                conn.close()


def test_a_body_larger_than_the_buffers_waits_for_a_server_that_reads_late_and_is_answered() -> None:
    body = b"x" * 20_000_000
    with listening() as (listener, port):

        def read_late() -> None:
            conn, _ = listener.accept()
            with conn:
                time.sleep(0.3)  # reads nothing yet: the client's buffers fill and it waits for them to drain
                got = b""
                while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 4 + len(body):
                    got += conn.recv(1 << 20)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")

        threading.Thread(target=read_late, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=httpx.Timeout(5.0, write=3.0),
                            ssl_context=None, keep=1)
        (answer,) = run(client, lambda c: c.request("POST", "/v2/x", content=body))
    assert answer.status_code == 200 and answer.content == b"ok"


@pytest.mark.parametrize(("scheme", "port"), [("http", 80), ("https", 443)])
def test_a_url_without_a_port_connects_to_its_scheme_s_port(monkeypatch: pytest.MonkeyPatch, scheme: str,
                                                            port: int) -> None:
    asked: list[tuple[Any, ...]] = []

    def resolve(host: str, port: Any, *args: Any, **kw: Any) -> list[Any]:
        asked.append((host, port, *args, *sorted(kw.items())))
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    client = LeanClient(f"{scheme}://api.test", headers={}, timeout=TIMEOUT, ssl_context=ssl.create_default_context(),
                        keep=1)
    with pytest.raises(httpx.ConnectError, match=r"^\[Errno -2\] Name or service not known$") as caught:
        run(client, get())
    assert isinstance(caught.value.__cause__, socket.gaierror)
    assert asked == [("api.test", port, ("type", socket.SOCK_STREAM))]


def test_a_failure_without_words_is_named_by_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    def resolve(*args: Any, **kw: Any) -> list[Any]:
        raise socket.gaierror()

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    client = LeanClient("http://api.test", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
    with pytest.raises(httpx.ConnectError, match="^gaierror$"):
        run(client, get())


def test_a_refused_connection_says_so_in_its_own_words() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
    with pytest.raises(httpx.ConnectError) as caught:
        run(client, get())
    assert str(caught.value) == str(caught.value.__cause__)  # the OSError's words: "Connect call failed ..."
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)


def test_tls_checks_the_certificate_against_the_name_in_the_url_not_the_address(
        ca: trustme.CA, monkeypatch: pytest.MonkeyPatch) -> None:
    def resolve(host: str, port: int, *args: Any, **kw: Any) -> list[Any]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("api.test").configure_cert(context)  # a certificate for the name only
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    with Server(lambda s: ok(), tls=context) as server:
        client = LeanClient(f"https://api.test:{server.port}", headers={}, timeout=TIMEOUT, ssl_context=trusted, keep=1)
        (answer,) = run(client, get())
    assert answer.status_code == 200


def test_a_tls_handshake_that_never_ends_is_a_connect_timeout() -> None:
    with listening() as (listener, port):
        held: list[socket.socket] = []
        threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()  # says nothing
        client = LeanClient(f"https://127.0.0.1:{port}", headers={}, timeout=httpx.Timeout(5.0, connect=0.3),
                            ssl_context=ssl.create_default_context(), keep=1)
        try:
            with pytest.raises(httpx.ConnectTimeout, match="^timed out connecting to 127.0.0.1$"):
                run(client, get())
        finally:
            for conn in held:
                conn.close()


def test_a_context_given_for_a_plain_http_url_is_not_used() -> None:
    with Server(lambda s: ok()) as server:
        (answer,) = run(lean(server, context=ssl.create_default_context()), get())
    assert answer.status_code == 200


def test_a_base_path_with_a_trailing_slash_is_joined_with_one_slash() -> None:
    with Server(lambda s: ok()) as server:
        run(lean(server, path="/TAX/"), get("/v2/x?a=1"))
    assert server.seen[0].request.target == b"/TAX/v2/x?a=1"


def test_an_answer_head_up_to_the_limit_is_read_even_in_parts() -> None:
    big = "a" * (MAX_HEAD // 2)  # past h11's own default of 16 KiB, within ours
    raw = ok(extra=f"x-big: {big}\r\n").raw
    assert raw is not None
    with listening() as (listener, port):

        def answer_in_two_parts() -> None:
            conn, _ = listener.accept()
            with conn:
                read_head(conn)
                conn.sendall(raw[:20_000])  # the client holds an incomplete head of 20 KB
                time.sleep(0.2)
                conn.sendall(raw[20_000:])
                time.sleep(0.2)

        threading.Thread(target=answer_in_two_parts, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
        (answer,) = run(client, get())
    assert answer.headers["x-big"] == big


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_an_empty_write_says_its_length_and_a_get_says_none(method: str) -> None:
    with Server(lambda s: ok()) as server:
        run(lean(server), lambda c: c.request(method, "/v2/x"), get())
    write, read = (dict(s.request.headers) for s in server.seen)
    assert write[b"content-length"] == b"0"
    assert b"content-length" not in read and b"transfer-encoding" not in read


def test_a_connection_dropped_after_a_broken_answer_is_closed() -> None:
    with Server(lambda s: Reply(b"not http at all\r\n\r\n")) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            run(lean(server), get())
        deadline = time.monotonic() + 5
        while server.closed_by_client == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert server.closed_by_client == 1


def test_a_streamed_body_the_server_stops_taking_is_a_write_error_that_says_so() -> None:
    with listening() as (listener, port):

        def read_head_then_reset() -> None:
            conn, _ = listener.accept()
            read_head(conn)
            reset(conn)

        async def slow_body() -> AsyncIterator[bytes]:
            for _ in range(40):
                await asyncio.sleep(0.05)
                yield b"x" * 1024

        threading.Thread(target=read_head_then_reset, daemon=True).start()
        client = LeanClient(f"http://127.0.0.1:{port}", headers={}, timeout=TIMEOUT, ssl_context=None, keep=1)
        with pytest.raises(httpx.WriteError, match="^the server closed the connection while the request was sent$"):
            run(client, lambda c: c.request("POST", "/v2/x", content=slow_body()))
