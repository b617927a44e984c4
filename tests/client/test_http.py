"""The client's refusals before anything is sent (reconciler/client/http.py, ``ApiClient._call``):
the message a user reads when drift's read-only client meets a write, or a path leaves /v2."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from clienthelpers import Script, ok

from reconciler.client.http import ApiClient
from reconciler.errors import ConfigError, ReadOnlyError


def test_a_read_only_client_refuses_a_write_naming_the_call(make_client: Callable[..., ApiClient],
                                                            script: Script) -> None:
    client = make_client(script.then(ok()), read_only=True)
    with pytest.raises(ReadOnlyError) as caught:
        client.run(client.patch("/v2/prompts/P1", {"description": "x"}))
    assert str(caught.value) == "PATCH /v2/prompts/P1: refused: this client is read-only (drift never writes)"
    assert script.requests == []


def test_a_path_outside_the_api_is_refused_naming_it(make_client: Callable[..., ApiClient], script: Script) -> None:
    client = make_client(script.then(ok()))
    with pytest.raises(ConfigError, match=r"^refused to send GET '/v1/prompts': the path "):
        client.run(client.get("/v1/prompts"))
    assert script.requests == []


@pytest.mark.parametrize("path", ["/v2/prompts/..;/admin", "/v2/%252e%252e/admin", "/v2/%EF%BC%8E%EF%BC%8E/admin",
                                  "/v2/%c0%ae%c0%ae/admin", "/v2/x/%2e%2E", "/v2/x/%25252e%25252e/y"])
def test_every_form_of_a_dot_segment_is_refused(make_client: Callable[..., ApiClient], script: Script,
                                                path: str) -> None:
    """Decoded any number of times, before a ``;``, or normalised from
    non-ASCII, a segment never climbs out of /v2."""
    client = make_client(script.then(ok()))
    with pytest.raises(ConfigError, match=r"^refused to send GET .*: the path holds (a '\.' or '\.\.' segment|an "
                                          r"escape that decodes to a non-ASCII or control character)"):
        client.run(client.get(path))
    assert script.requests == []


def test_the_first_429_s_retry_after_sets_the_window_the_pace_is_learnt_from(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    from clienthelpers import problem

    from reconciler.client.pacing import HEADROOM

    client = make_client(script.then(*[ok()] * 10, problem(429, "Rate limit exceeded", headers={"Retry-After": "2"}),
                                     ok()))
    for _ in range(11):
        client.run(client.get("/v2/things"))
    # ten answers, no time, then 2 s of Retry-After; doubled once (slow start) when the retry is sent 2 s later
    assert client.pacer.rate == pytest.approx(2 * HEADROOM * 10 / 2.0)


def test_a_300_answer_is_not_a_success(make_client: Callable[..., ApiClient], script: Script) -> None:
    from reconciler.errors import ProblemError

    client = make_client(script.then(ok({"id": "x"}, status=300)))
    with pytest.raises(ProblemError) as caught:
        client.run(client.get("/v2/things"))
    assert caught.value.status == 300


def test_a_success_that_is_not_json_is_an_error_naming_the_call(make_client: Callable[..., ApiClient],
                                                                script: Script) -> None:
    import httpx

    from reconciler.errors import TransportError

    client = make_client(script.then(httpx.Response(200, content=b"<html>")))
    with pytest.raises(TransportError) as caught:
        client.run(client.get("/v2/things"))
    assert str(caught.value) == "GET /v2/things: 200 answer is not JSON"


# ---------------------------------------------------------------------- a create whose answer was lost


def _reread(client: ApiClient, calls: list[str]) -> Callable[[], Awaitable[dict[str, str] | None]]:
    """What apply does after a create whose answer was lost: list the collection, find the name."""
    async def recover() -> dict[str, str] | None:
        calls.append("reread")
        items = (await client.get("/v2/integrations"))["integrations"]
        return next((i for i in items if i["name"] == "x"), None)
    return recover


def test_a_create_met_by_409_after_a_lost_answer_whose_reread_fails_names_the_create(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    from clienthelpers import problem

    from reconciler.errors import AmbiguousWriteError

    client = make_client(script.then(problem(502, "Bad Gateway"), ok({"integrations": []}), problem(409, "Conflict"),
                                     problem(403, "Forbidden", "no read")), max_retries=3)
    calls: list[str] = []
    with pytest.raises(AmbiguousWriteError) as caught:
        client.run(client.post("/v2/integrations", {"name": "x"}, recover=_reread(client, calls)))
    assert str(caught.value) == (
        "POST /v2/integrations: the create may or may not have taken effect, and re-reading to find out failed "
        "(GET /v2/integrations: 403 Forbidden: no read)")
    assert (caught.value.method, caught.value.path) == ("POST", "/v2/integrations")
    assert script.methods == ["POST", "GET", "POST", "GET"] and calls == ["reread", "reread"]


def test_a_create_without_a_reread_whose_answer_was_lost_says_to_plan_again(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    from clienthelpers import problem

    from reconciler.errors import AmbiguousWriteError

    client = make_client(script.then(problem(502, "Bad Gateway")), max_retries=3)
    with pytest.raises(AmbiguousWriteError) as caught:
        client.run(client.post("/v2/integrations", {"name": "x"}))
    assert str(caught.value) == ("POST /v2/integrations: 502 Bad Gateway; the create may or may not have taken "
                                 "effect (re-run plan to see)")
    assert script.methods == ["POST"]


def test_a_create_found_by_its_reread_is_not_sent_again_and_each_step_is_told(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    from clienthelpers import problem

    events: list[str] = []
    client = make_client(script.then(problem(502, "Bad Gateway"), ok({"integrations": [{"id": "I1", "name": "x"}]})),
                         max_retries=3, on_event=events.append)
    calls: list[str] = []
    assert client.run(client.post("/v2/integrations", {"name": "x"}, recover=_reread(client, calls))) == {"id": "I1", "name": "x"}
    assert script.methods == ["POST", "GET"]
    assert [e.split(": retrying in")[0] for e in events] == [
        "502 Bad Gateway on POST /v2/integrations",
        "POST /v2/integrations: the earlier attempt had taken effect; not sending it again"]


def test_a_create_whose_answers_keep_timing_out_gives_up_counting_its_attempts(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    import httpx

    from reconciler.errors import TransportError

    client = make_client(script.then(httpx.ReadTimeout("timed out"), ok({"integrations": []}),
                                     httpx.ReadTimeout("timed out"), ok({"integrations": []})), max_retries=1)
    calls: list[str] = []
    with pytest.raises(TransportError) as caught:
        client.run(client.post("/v2/integrations", {"name": "x"}, recover=_reread(client, calls)))
    assert str(caught.value).startswith("POST /v2/integrations: ")
    assert str(caught.value).endswith(" (gave up after 2 attempts)")
    assert script.methods == ["POST", "GET", "POST", "GET"]
