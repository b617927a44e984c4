"""One single-connection httpx transport for each request in flight.

httpcore's connection pool looks at every connection it holds for each request it places (whether
it expired, whether its socket has data waiting): with ten connections that costs more CPU than the
rest of the exchange (``docs/performance.md``, "The event loop"). The client never has more
requests in flight than its limit (``limit.AdaptiveLimit``), so it can hand each one a transport
of its own instead: ``SlotTransports`` keeps ``size`` ``httpx.AsyncHTTPTransport``s of one
connection each, gives an idle one to each request and takes it back when the answer's body is
closed. HTTP, TLS, timeouts and keep-alive stay httpx's; only the choice of the connection is made
here. A request that finds none idle (more in flight than ``size``) gets a new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx


class SlotTransports(httpx.AsyncBaseTransport):
    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport], size: int) -> None:
        self._make = make
        self._idle = [make() for _ in range(size)]
        self._all = list(self._idle)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        transport = self._idle.pop() if self._idle else self._new()
        try:
            response = await transport.handle_async_request(request)
        except BaseException:
            self._idle.append(transport)
            raise
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_Returning(response.stream, lambda: self._idle.append(transport)),
                              extensions=response.extensions)

    def _new(self) -> httpx.AsyncBaseTransport:
        transport = self._make()
        self._all.append(transport)
        return transport

    async def aclose(self) -> None:
        for transport in self._all:
            await transport.aclose()


class _Returning(httpx.AsyncByteStream):
    """An answer's body; closing it gives its transport back (once)."""

    def __init__(self, inner: httpx.AsyncByteStream | httpx.SyncByteStream, give_back: Callable[[], None]) -> None:
        self._inner = inner
        self._give_back: Callable[[], None] | None = give_back

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self._inner, httpx.AsyncByteStream)
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            if isinstance(self._inner, httpx.AsyncByteStream):
                await self._inner.aclose()
        finally:
            if self._give_back is not None:
                give_back, self._give_back = self._give_back, None
                give_back()
