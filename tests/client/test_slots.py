"""``SlotTransports``: each request in flight on a transport of its own, given back when its answer's
body is closed (or when it fails); more requests than slots get new ones; an environment proxy keeps
httpx's own pool (with its proxies)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from reconciler.client.http import build_http_client
from reconciler.client.slots import SlotTransports


class Counted(httpx.AsyncBaseTransport):
    """A transport that answers after a pause and counts what it carries."""

    made: list[Counted] = []

    def __init__(self) -> None:
        self.carried = 0
        self.busy = False
        self.closed = False
        Counted.made.append(self)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert not self.busy, "two requests at once on one connection"
        if request.url.path == "/fail":
            raise httpx.ConnectError("refused", request=request)
        self.busy = True
        self.carried += 1
        await asyncio.sleep(0.001)
        self.busy = False
        return httpx.Response(200, json={"n": self.carried})

    async def aclose(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fresh() -> None:
    Counted.made = []


def test_concurrent_requests_each_get_a_transport_and_give_it_back() -> None:
    slots = SlotTransports(Counted, 3)

    async def main() -> list[Any]:
        async with httpx.AsyncClient(transport=slots, base_url="http://t") as http:
            first = await asyncio.gather(*(http.get("/x") for _ in range(3)))
            second = await asyncio.gather(*(http.get("/x") for _ in range(3)))
            return [r.json() for r in first + second]

    answers = asyncio.run(main())
    assert len(Counted.made) == 3  # three at a time: the three slots, reused
    assert sorted(t.carried for t in Counted.made) == [2, 2, 2]
    assert len(answers) == 6
    assert all(t.closed for t in Counted.made)


def test_more_requests_than_slots_get_new_transports_and_a_failure_gives_its_back() -> None:
    slots = SlotTransports(Counted, 1)

    async def main() -> None:
        async with httpx.AsyncClient(transport=slots, base_url="http://t") as http:
            await asyncio.gather(*(http.get("/x") for _ in range(4)))
            with pytest.raises(httpx.ConnectError):
                await http.get("/fail")
            await http.get("/x")

    asyncio.run(main())
    assert len(Counted.made) == 4
    assert sum(t.carried for t in Counted.made) == 5  # the failed one carried nothing and was given back


def test_the_reconciler_s_client_uses_slots_unless_the_environment_sets_a_proxy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(build_http_client("https://api.example", "k", parallelism=4)._transport, SlotTransports)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert not isinstance(build_http_client("https://api.example", "k")._transport, SlotTransports)
    assert isinstance(build_http_client("http://127.0.0.1:9", "k")._transport, SlotTransports)  # loopback: direct
