"""The client's refusals before anything is sent (reconciler/client/http.py, ``ApiClient._call``):
the message a user reads when drift's read-only client meets a write, or a path leaves /v2."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from clienthelpers import Script, ok

from reconciler.client.http import ApiClient
from reconciler.errors import ConfigError, ReadOnlyError


def test_a_read_only_client_refuses_a_write_naming_the_call(make_client: Callable[..., ApiClient],
                                                            script: Script) -> None:
    client = make_client(script.then(ok()), read_only=True)
    with pytest.raises(ReadOnlyError) as caught:
        client.patch("/v2/prompts/P1", {"description": "x"})
    assert str(caught.value) == "PATCH /v2/prompts/P1: refused: this client is read-only (drift never writes)"
    assert script.requests == []


def test_a_path_outside_the_api_is_refused_naming_it(make_client: Callable[..., ApiClient], script: Script) -> None:
    client = make_client(script.then(ok()))
    with pytest.raises(ConfigError, match=r"^refused to send GET '/v1/prompts': the path "):
        client.get("/v1/prompts")
    assert script.requests == []


def test_the_first_429_s_retry_after_sets_the_window_the_pace_is_learnt_from(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    from clienthelpers import problem

    from reconciler.client.pacing import HEADROOM

    client = make_client(script.then(*[ok()] * 10, problem(429, "Rate limit exceeded", headers={"Retry-After": "2"}),
                                     ok()))
    for _ in range(11):
        client.get("/v2/things")
    assert client.pacer.rate == pytest.approx(HEADROOM * 10 / 2.0)  # ten answers, no time, then 2 s of Retry-After


def test_a_300_answer_is_not_a_success(make_client: Callable[..., ApiClient], script: Script) -> None:
    from reconciler.errors import ProblemError

    client = make_client(script.then(ok({"id": "x"}, status=300)))
    with pytest.raises(ProblemError) as caught:
        client.get("/v2/things")
    assert caught.value.status == 300


def test_a_success_that_is_not_json_is_an_error_naming_the_call(make_client: Callable[..., ApiClient],
                                                                script: Script) -> None:
    import httpx

    from reconciler.errors import TransportError

    client = make_client(script.then(httpx.Response(200, content=b"<html>")))
    with pytest.raises(TransportError) as caught:
        client.get("/v2/things")
    assert str(caught.value) == "GET /v2/things: 200 answer is not JSON"
