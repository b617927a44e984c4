"""A body with a very long list (a dataset's examples) is sent a chunk at a time: the bytes on the
wire are exactly the JSON a small body would have been, and a retry sends them again whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
from clienthelpers import Script, ok, problem

from reconciler.client import http as client_http
from reconciler.client.http import STREAM_ITEMS, ApiClient, open_client
from reconciler.client.settings import Endpoint


def test_a_long_list_is_streamed_and_arrives_as_the_same_json(make_client: Callable[..., ApiClient],
                                                                script: Script) -> None:
    body = {"name": "big", "space_id": "S1", "examples": [{"k": i, "t": "é"} for i in range(STREAM_ITEMS * 2 + 3)]}
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert "content-length" not in request.headers  # streamed: chunked, not one buffer
        seen.append(request.read())
        return ok({"id": "D1"}, status=201) if len(seen) > 1 else problem(503, "Unavailable")

    client = make_client(handler)
    assert client.run(client.patch("/v2/datasets/D1/examples", body)) == {"id": "D1"}  # retried once: sent whole twice
    assert len(seen) == 2
    for raw in seen:
        assert raw == client_http._dumps(body).encode()
        assert json.loads(raw) == body


def test_a_short_body_is_sent_as_one_buffer(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(ok({}))
    client = make_client(script)
    client.run(client.post("/v2/datasets", {"examples": [{"k": 1}]}))
    assert script.requests[0].headers["content-length"] == str(len(script.requests[0].content))


def test_the_in_process_emulator_takes_a_streamed_create(tmp_path: Path) -> None:
    with open_client(Endpoint(base_url=None, emulator_db=str(tmp_path / "e.db")), "admin-key") as client:
        space = client.run(client.post("/v2/spaces", {"name": "s"}))
        examples = [{"k": i} for i in range(STREAM_ITEMS + 1)]
        created = client.run(client.post("/v2/datasets", {"name": "d", "space_id": space["id"], "examples": examples}))
        got = client.run(client.paginate(f"/v2/datasets/{created['id']}/examples", "examples", limit=500))
    assert [e["k"] for e in got] == list(range(STREAM_ITEMS + 1))
