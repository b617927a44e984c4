"""The in-process transport (``--emulator FILE``): concurrent requests on the client's loop, persistent, and
failing the way a connection fails."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from clienthelpers import gathered, no_sleep

from reconciler.client.http import ApiClient, build_http_client, open_client
from reconciler.client.inprocess import InProcessTransport
from reconciler.client.settings import Endpoint
from reconciler.errors import TransportError


def test_the_emulator_endpoint_persists_state_in_its_file(tmp_path: Path) -> None:
    endpoint = Endpoint(base_url=None, emulator_db=str(tmp_path / "state.db"))
    with open_client(endpoint, "admin-key") as client:
        client.run(gathered(*(client.post("/v2/spaces", {"name": f"team-{i:02d}"}) for i in range(24))))
    with open_client(endpoint, "admin-key", read_only=True) as client:
        names = [s["name"] for s in client.run(client.paginate("/v2/spaces", "spaces", limit=10))]
    assert sorted(names) == sorted(["default", "research", *(f"team-{i:02d}" for i in range(24))])


def test_parallel_requests_in_process_all_get_their_own_answers(tmp_path: Path) -> None:
    endpoint = Endpoint(base_url=None, emulator_db=str(tmp_path / "state.db"))
    with open_client(endpoint, "admin-key", parallelism=8) as client:
        spaces = client.run(client.paginate("/v2/spaces", "spaces"))
        ids = [s["id"] for s in spaces] * 20
        got = [s["id"] for s in client.run(gathered(*(client.get(f"/v2/spaces/{sid}") for sid in ids)))]
    assert got == ids


def app_failing_first(calls: list[int]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionResetError("injected")
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"ok": true}'})
    return app


def test_an_exception_in_the_app_reaches_the_client_as_a_dropped_connection() -> None:
    calls: list[int] = []
    transport = InProcessTransport(app_failing_first(calls))
    async def get() -> None:
        async with httpx.AsyncClient(base_url="http://emulator.invalid", transport=transport) as http:
            await http.get("/v2/x")

    with pytest.raises(httpx.RemoteProtocolError,
                       match=r"^the in-process emulator dropped the request \(ConnectionResetError\)$"):
        asyncio.run(get())


def test_a_dropped_connection_in_process_is_retried_for_a_get() -> None:
    calls: list[int] = []
    http = build_http_client("http://emulator.invalid", "k", transport=InProcessTransport(app_failing_first(calls)))
    with ApiClient(http, sleep=no_sleep) as client:
        assert client.run(client.get("/v2/x")) == {"ok": True}
    assert len(calls) == 2


def test_an_app_that_does_not_answer_times_out() -> None:
    async def silent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await asyncio.Event().wait()

    http = build_http_client("http://emulator.invalid", "k", transport=InProcessTransport(silent))
    client = ApiClient(http, max_retries=0, timeout=httpx.Timeout(0.05))
    with client, pytest.raises(TransportError, match="ReadTimeout"):
        client.run(client.get("/v2/x"))


def test_a_closed_transport_refuses_requests() -> None:
    transport = InProcessTransport(app_failing_first([]))
    client = ApiClient(build_http_client("http://emulator.invalid", "k", transport=transport), max_retries=0)
    client.run(transport.aclose())
    with pytest.raises(TransportError, match="closed"):
        client.run(client.get("/v2/x"))
    client.close()  # closing twice is harmless
