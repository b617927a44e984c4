"""Errors become ours (never httpx's), read-only means read-only, secrets never show, every
request carries a User-Agent and timeouts, and the requests in flight stay within the limit."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from clienthelpers import BASE_URL, CANARY, Script, gathered, ok, problem, ran

from reconciler.client.http import _HTTPX_ERRORS, USER_AGENT, ApiClient, build_http_client, open_client
from reconciler.client.settings import Endpoint
from reconciler.errors import ApiError, ProblemError, ReadOnlyError, TransportError


def httpx_exception_classes() -> list[type[Exception]]:
    values = [getattr(httpx, name) for name in httpx.__all__]
    classes = {c for c in values if isinstance(c, type) and issubclass(c, Exception)}
    return sorted(classes,
                  key=lambda c: c.__name__)


def instantiate(cls: type[Exception], message: str) -> Exception:
    request = httpx.Request("GET", f"{BASE_URL}/v2/x")
    attempts: list[Callable[[], Exception]] = [
        lambda: cls(message, request=request, response=httpx.Response(500, request=request)),  # type: ignore[call-arg]
        lambda: cls(message, request=request),  # type: ignore[call-arg]
        lambda: cls(message),
        lambda: cls(),
    ]
    for attempt in attempts:
        try:
            return attempt()
        except TypeError:
            continue
    raise AssertionError(f"cannot build {cls.__name__}")


def test_every_httpx_exception_class_is_covered() -> None:
    classes = httpx_exception_classes()
    names = {c.__name__ for c in classes}
    assert {"HTTPError", "ConnectError", "ReadTimeout", "InvalidURL", "StreamConsumed", "DecodingError"} <= names
    uncaught = [c.__name__ for c in classes if not issubclass(c, _HTTPX_ERRORS)]
    assert uncaught == []  # the client's catch-all names every exception class httpx exports


@pytest.mark.parametrize("cls", httpx_exception_classes(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", ["GET", "POST", "PATCH", "DELETE"])
def test_httpx_exceptions_never_escape_the_client(
        cls: type[Exception], method: str, make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(instantiate(cls, f"boom with {CANARY}"))
    client = make_client(script, max_retries=1)
    with pytest.raises(ApiError) as info:
        if method == "GET":
            client.run(client.get("/v2/x"))
        elif method == "POST":
            client.run(client.post("/v2/x", {"a": 1}))
        elif method == "PATCH":
            client.run(client.patch("/v2/x", {"a": 1}))
        else:
            client.run(client.delete("/v2/x"))
    error = info.value
    assert not isinstance(error, httpx.HTTPError | httpx.InvalidURL | httpx.StreamError | httpx.CookieConflict)
    assert error.__cause__ is None
    assert CANARY not in str(error)
    assert error.method == method and error.path == "/v2/x"


def test_a_problem_body_becomes_a_problem_error_with_its_fields(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(problem(422, "Unprocessable Entity", "base_url is required for CUSTOM", request_id="r-1"))
    with pytest.raises(ProblemError) as info:
        ran(make_client(script), lambda c: c.patch("/v2/integrations/I1", {"type": "LLM"}))
    error = info.value
    assert (error.status, error.title, error.detail) == (422, "Unprocessable Entity", "base_url is required for CUSTOM")
    assert error.type == "https://errors.example#422"
    assert (error.method, error.path) == ("PATCH", "/v2/integrations/I1")
    assert str(error) == "PATCH /v2/integrations/I1: 422 Unprocessable Entity: base_url is required for CUSTOM"
    assert error.exit_code == 1


def test_a_non_json_error_body_becomes_a_problem_error_with_what_is_known(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.Response(400, text="<html><body>Bad   gateway\nthing</body></html>"))
    with pytest.raises(ProblemError) as info:
        ran(make_client(script), lambda c: c.get("/v2/spaces"))
    error = info.value
    assert error.status == 400
    assert error.title == "Bad Request"
    assert error.detail == "non-problem error body: <html><body>Bad gateway thing</body></html>"


def test_a_json_error_body_that_is_not_a_problem_keeps_the_status(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.Response(403, json={"error": "nope"}))
    with pytest.raises(ProblemError) as info:
        ran(make_client(script), lambda c: c.get("/v2/spaces"))
    assert info.value.status == 403
    assert info.value.title == "Forbidden"


def test_a_redirect_is_an_error_not_followed(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.Response(301, headers={"location": "https://elsewhere.example/v2/spaces"}))
    with pytest.raises(ProblemError) as info:
        ran(make_client(script), lambda c: c.get("/v2/spaces"))
    assert info.value.detail == "unexpected redirect to https://elsewhere.example/v2/spaces"
    assert len(script.requests) == 1


def test_a_success_that_is_not_json_is_a_transport_error(make_client: Callable[..., ApiClient],
                                                         script: Script) -> None:
    script.then(httpx.Response(200, text="not json"))
    with pytest.raises(TransportError, match="not JSON"):
        ran(make_client(script), lambda c: c.get("/v2/spaces"))


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_read_only_client_refuses_writes_before_sending_anything(
        method: str, make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(ok())
    client = make_client(script, read_only=True)
    with pytest.raises(ReadOnlyError) as info:
        {"POST": lambda: client.run(client.post("/v2/x", {})), "PUT": lambda: client.run(client.put("/v2/x", {})),
         "PATCH": lambda: client.run(client.patch("/v2/x", {})), "DELETE": lambda: client.run(client.delete("/v2/x"))}[method]()
    assert info.value.method == method
    assert script.requests == []
    assert client.stats.snapshot().total_requests == 0


def test_a_read_only_client_still_reads(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(ok({"spaces": [], "pagination": {"has_more": False}}))
    assert ran(make_client(script, read_only=True), lambda c: c.paginate("/v2/spaces", "spaces")) == []


def test_the_key_never_appears_in_errors_events_or_reprs(make_client: Callable[..., ApiClient],
                                                         script: Script) -> None:
    def echo_auth(request: httpx.Request) -> httpx.Response:
        return problem(400, "Invalid request parameters", f"bad header {request.headers['authorization']}")

    events: list[str] = []
    script.then(httpx.Response(503, text=f"upstream rejected {CANARY}"), echo_auth)
    client = make_client(script, on_event=events.append)
    with pytest.raises(ProblemError) as info:
        client.run(client.get("/v2/x"))
    assert script.requests[0].headers["authorization"] == f"Bearer {CANARY}"  # it was sent...
    texts = [str(info.value), repr(info.value), info.value.detail or "", repr(client), str(client), *events]
    assert events  # the 503 retry was reported
    for text in texts:  # ...and is shown nowhere
        assert CANARY not in text
    assert "(sensitive)" in str(info.value)


def test_every_request_carries_user_agent_and_timeouts(make_client: Callable[..., ApiClient],
                                                       script: Script) -> None:
    script.then(ok())
    client = make_client(script)
    client.run(client.get("/v2/a"))
    client.run(client.post("/v2/b", {}))
    client.run(client.delete("/v2/c"))
    for request in script.requests:
        assert request.headers["user-agent"] == USER_AGENT
        assert re.fullmatch(r"reconciler/\d+\.\d+\.\d+ \(\+python-httpx\)", request.headers["user-agent"])
        assert request.extensions["timeout"] == {"connect": 5.0, "read": 30.0, "write": 30.0, "pool": 30.0}


def test_build_http_client_sets_key_user_agent_tls_and_pool() -> None:
    http = build_http_client("https://api.test.example", CANARY, parallelism=3)
    try:
        assert http.headers["authorization"] == f"Bearer {CANARY}"
        assert http.headers["user-agent"] == USER_AGENT
        assert str(http.base_url) == "https://api.test.example"
        assert http.timeout.connect == 5.0 and http.timeout.read == 30.0
        assert CANARY not in repr(ApiClient(http))
    finally:
        asyncio.run(http.aclose())


def test_open_client_for_a_base_url_builds_a_client_to_it() -> None:
    client = open_client(Endpoint(base_url="https://api.test.example", emulator_db=None), CANARY,
                         read_only=True, parallelism=2)
    with client:
        assert str(client.http.base_url) == "https://api.test.example"
        assert client.read_only is True and client.parallelism == 2


# ---------------------------------------------------------------- stats and the limit


def test_stats_count_concurrent_requests_and_in_flight_stays_bounded(
        make_client: Callable[..., ApiClient]) -> None:
    in_flight = 0
    peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)  # the others are sent meanwhile, up to the limit
        in_flight -= 1
        return ok({"n": 1})

    client = make_client(handler, parallelism=3)
    results: list[Any] = client.run(gathered(*(client.get(f"/v2/x/{i}") for i in range(30))))
    assert len(results) == 30
    stats = client.stats.snapshot()
    assert stats.requests == {"GET": 30}
    assert stats.attempts == 30
    assert peak == 3
