"""HTTP/1.1 on the event loop without httpx's client and connection pool: ``LeanClient``.

Per request, ``httpx.AsyncClient`` (building the request, merging URL, headers, cookies and
timeouts, the auth and redirect flow) and httpcore's pool (anyio streams, a look at every connection
it holds) cost about three times the exchange itself; ``docs/performance.md``, "The event loop",
gives the CPU this client saves. ``build_http_client`` uses it for an endpoint reached directly; a
proxy from the environment, the in-process emulator and the tests' transports use an
``httpx.AsyncClient``. Both offer what ``ApiClient`` uses of them (``http.Wire``): ``base_url``,
``headers``, ``timeout``, ``request`` and ``aclose``.

h11 speaks the protocol (framing, keep-alive, chunked bodies); asyncio's ``create_connection`` makes
the socket and the TLS session (the verifying ``ssl.SSLContext`` given). Each request in flight has a
connection of its own, kept for the next request once its answer has been read whole (at most
``keep`` are kept); one the server closed, or left in a state h11 cannot reuse, is dropped, and so
is one whose exchange failed or was cancelled. A failure is raised as the httpx exception of the
same meaning (``ConnectError``, ``ConnectTimeout``, ``WriteTimeout``, ``ReadTimeout``,
``WriteError``, ``ReadError``, ``RemoteProtocolError``), the ``OSError`` behind it as its cause, so
``ApiClient`` sorts the failures of both clients in one place. Timeouts are httpx's: ``connect``
for the connection and TLS handshake, ``write`` for sending the request, ``read`` between two reads
of the answer.
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import h11
import httpx

#: The largest answer head (status line and headers) accepted, in bytes.
MAX_HEAD = 64 * 1024

#: An answer as read: status, headers, body.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class LeanClient:
    def __init__(self, base_url: str, *, headers: Mapping[str, str], timeout: httpx.Timeout,
                 ssl_context: ssl.SSLContext | None, keep: int) -> None:
        self.base_url = httpx.URL(base_url)
        self.headers = httpx.Headers(headers)
        self.timeout = timeout
        self._host = self.base_url.host
        self._port = self.base_url.port or (443 if self.base_url.scheme == "https" else 80)
        self.ssl_context = ssl_context if self.base_url.scheme == "https" else None
        self._prefix = self.base_url.raw_path.rstrip(b"/")
        self._head = [(b"host", self.base_url.netloc), *self.headers.raw]
        self._keep = keep
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self._addresses: list[str] = []  # the host's, resolved once (``_resolved``)

    async def request(self, method: str, url: str, *, content: bytes | AsyncIterator[bytes] | None = None,
                      headers: Mapping[str, str] | None = None,
                      timeout: httpx.Timeout | None = None) -> httpx.Response:
        """``url`` is a path with its query (``/v2/x?limit=100``), sent under the base URL's path."""
        limits = timeout or self.timeout
        head = self._head if not headers else [*self._head, *httpx.Headers(headers).raw]
        connection = await self._connection(limits)
        try:
            status, answer_headers, body = await connection.exchange(
                method.encode("ascii"), self._prefix + url.encode("ascii"), head, content, limits)
        except BaseException:  # failed or cancelled: what it would read next belongs to no request
            self._drop(connection)
            raise
        if connection.reusable() and len(self._idle) < self._keep:
            self._idle.append(connection)
        else:
            self._drop(connection)
        return httpx.Response(status, headers=answer_headers, content=body)

    async def _connection(self, limits: httpx.Timeout) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable() and not connection.readable():  # closed by the server while idle
                return connection
            self._drop(connection)
        loop = asyncio.get_running_loop()
        try:
            addresses = self._resolved()
            async with asyncio.timeout(limits.connect):
                for n, address in enumerate(addresses, 1):
                    try:
                        _, connection = await loop.create_connection(
                            _Connection, address, self._port, ssl=self.ssl_context,
                            server_hostname=self._host if self.ssl_context is not None else None)
                        break
                    except OSError:
                        if n == len(addresses):
                            self._addresses = []  # none answered: ask the resolver again next time
                            raise
        except TimeoutError:
            raise httpx.ConnectTimeout(f"timed out connecting to {self._host}") from None
        except OSError as exc:  # refused, unreachable, DNS (gaierror), TLS (SSLError)
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        self._open.add(connection)
        return connection

    def _resolved(self) -> list[str]:
        """The host's addresses, asked of the system's resolver once, here: asyncio's own lookup
        would run in a pool of threads. Each connection tries them in the resolver's order."""
        if not self._addresses:
            found = socket.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM)
            self._addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
        return self._addresses

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        self._open.discard(connection)

    async def aclose(self) -> None:
        for connection in self._open:
            connection.close()
        self._open.clear()
        self._idle.clear()


class _Connection(asyncio.Protocol):
    """One connection: one exchange at a time, answered through ``_answer``."""

    def __init__(self) -> None:
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self._transport: asyncio.Transport | None = None
        self._answer: asyncio.Future[Answer] | None = None
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._deadline: asyncio.Timeout | None = None
        self._read_timeout: float | None = None
        self._writable: asyncio.Future[None] | None = None
        self._lost = False

    # ------------------------------------------------------------------ the exchange

    async def exchange(self, method: bytes, target: bytes, head: list[tuple[bytes, bytes]],
                       content: bytes | AsyncIterator[bytes] | None,
                       limits: httpx.Timeout) -> Answer:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._answer = answer
        self._body = []  # the status and headers come with the answer's head, before any of its body
        try:
            async with asyncio.timeout(limits.write):
                await self._send(method, target, head, content)
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request") from None
        finally:
            if answer.done() and not answer.cancelled():
                answer.exception()  # marked as seen: a failure while sending is raised by the send or the wait below
        self._read_timeout = limits.read
        try:
            async with asyncio.timeout(limits.read) as self._deadline:
                return await answer
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the answer") from None
        finally:
            self._deadline = None

    async def _send(self, method: bytes, target: bytes, head: list[tuple[bytes, bytes]],
                    content: bytes | AsyncIterator[bytes] | None) -> None:
        if content is None or isinstance(content, bytes):
            body = content or b""
            framing = [(b"content-length", str(len(body)).encode())] if body or method in (b"POST", b"PUT", b"PATCH") else []
            data = self._h11.send(h11.Request(method=method, target=target, headers=[*head, *framing]))
            if body:
                data += self._h11.send(h11.Data(data=body))
            self._write(data + self._h11.send(h11.EndOfMessage()))
        else:
            self._write(self._h11.send(h11.Request(method=method, target=target,
                                                   headers=[*head, (b"transfer-encoding", b"chunked")])))
            async for chunk in content:
                if chunk:
                    self._write(self._h11.send(h11.Data(data=chunk)))
                    await self._drained()
            self._write(self._h11.send(h11.EndOfMessage()))
        await self._drained()

    def _write(self, data: bytes | None) -> None:
        """Hand ``data`` to the transport. A connection lost is found by ``_drained``, which follows
        every write before the request is sent (a transport that lost its connection drops what it
        is given)."""
        assert self._transport is not None
        if data:
            self._transport.write(data)

    async def _drained(self) -> None:
        while self._writable is not None:
            await asyncio.shield(self._writable)
        if self._lost:
            raise httpx.WriteError("the server closed the connection while the request was sent")

    # ------------------------------------------------------------------ the pool's questions

    def reusable(self) -> bool:
        return not self._lost and self._h11.our_state is h11.IDLE and self._h11.their_state is h11.IDLE

    def readable(self) -> bool:
        """Whether the idle socket has something to read: the server closed it (or sent what it
        should not have); either way it is not used again."""
        assert self._transport is not None
        sock = self._transport.get_extra_info("socket")
        if sock is None:
            return True
        if hasattr(select, "poll"):  # no limit on the descriptor's number (select's is 1024)
            poll = select.poll()
            poll.register(sock, select.POLLIN)
            return bool(poll.poll(0))
        return bool(select.select([sock], [], [], 0)[0])

    def close(self) -> None:
        assert self._transport is not None
        self._transport.close()

    # ------------------------------------------------------------------ asyncio's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._h11.receive_data(data)
        self._read()
        if self._deadline is not None and self._read_timeout is not None:  # the read timeout is between reads
            self._deadline.reschedule(asyncio.get_running_loop().time() + self._read_timeout)

    def eof_received(self) -> bool | None:
        if self._h11.their_state is h11.SEND_RESPONSE:  # the server closed before any answer
            self._fail(httpx.RemoteProtocolError("the server closed the connection without answering"), None)
        else:
            self._h11.receive_data(b"")  # an answer framed by the end of the connection ends here
            self._read()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)  # a writer waiting to drain wakes, and finds the connection lost
        self._writable = None
        self._fail(httpx.ReadError(f"the connection was lost: {exc}") if exc is not None else
                   httpx.RemoteProtocolError("the connection was closed before the answer came"), exc)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    def _read(self) -> None:
        try:
            while True:
                event = self._h11.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    return
                if isinstance(event, h11.Response):
                    self._status, self._headers = event.status_code, list(event.headers)
                elif isinstance(event, h11.Data):
                    self._body.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    self._answered()
                    return
                elif isinstance(event, h11.ConnectionClosed):  # after a whole answer: not reused
                    return
        except h11.RemoteProtocolError as exc:
            self._fail(httpx.RemoteProtocolError(f"the answer broke HTTP/1.1: {exc}"), exc)
            self.close()

    def _answered(self) -> None:
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()  # keep-alive: the next request may use this connection
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            answer.set_result((self._status, self._headers, b"".join(self._body)))
        self._body = []

    def _fail(self, error: Exception, cause: Any) -> None:
        answer, self._answer = self._answer, None
        if answer is not None and not answer.done():
            error.__cause__ = cause
            answer.set_exception(error)
