"""The retry policy: 429 waits, backoff with jitter for idempotent methods, POST recovery."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from clienthelpers import FakeClock, Script, ok, problem, ran, returning

from reconciler.client.http import MAX_CONNECT_RETRIES, ApiClient
from reconciler.errors import AmbiguousWriteError, ProblemError, TransportError


def expected_backoffs(n: int, base: float = 0.2, seed: int = 7) -> list[float]:
    """The equal-jitter waits the client must draw from ``random.Random(seed)``."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        ceiling = base * 2 ** (i - 1)
        out.append(ceiling / 2 + rng.uniform(0, ceiling / 2))
    return out


def call(client: ApiClient, method: str) -> Any:
    if method == "GET":
        return client.run(client.get("/v2/things"))
    if method == "PUT":
        return client.run(client.put("/v2/things/1", {"a": 1}))
    if method == "PATCH":
        return client.run(client.patch("/v2/things/1", {"a": 1}))
    return client.run(client.delete("/v2/things/1"))


def test_429_waits_retry_after_then_retries(make_client: Callable[..., ApiClient], script: Script,
                                            clock: FakeClock) -> None:
    events: list[str] = []
    script.then(problem(429, "Rate limit exceeded", headers={"Retry-After": "2"}), ok({"x": 1}))
    client = make_client(script, on_event=events.append)
    assert client.run(client.get("/v2/integrations")) == {"x": 1}
    assert clock.sleeps == [2.0]
    assert len(script.requests) == 2
    assert events == ["429 on GET /v2/integrations: waiting 2s (Retry-After)"]
    stats = client.stats.snapshot()
    assert (stats.throttled, stats.retries, stats.attempts, stats.total_requests) == (1, 1, 2, 1)
    assert stats.wait_seconds == 2.0


def test_429_wait_is_capped_and_the_cap_is_reported(make_client: Callable[..., ApiClient], script: Script,
                                                    clock: FakeClock) -> None:
    events: list[str] = []
    script.then(problem(429, "Rate limit exceeded", headers={"Retry-After": "3600"}), ok())
    client = make_client(script, on_event=events.append, max_retry_after=60.0)
    client.run(client.get("/v2/integrations"))
    assert clock.sleeps == [60.0]
    assert events == ["429 on GET /v2/integrations: waiting 60s (Retry-After 3600s capped)"]
    events.clear()
    script.then(problem(429, "Rate limit exceeded", headers={"Retry-After": "60"}), ok())
    client.run(client.get("/v2/integrations"))  # exactly the cap: waited as asked, not capped
    assert events == ["429 on GET /v2/integrations: waiting 60s (Retry-After)"]


def test_429_without_retry_after_backs_off(make_client: Callable[..., ApiClient], script: Script,
                                           clock: FakeClock) -> None:
    script.then(problem(429, "Rate limit exceeded"), ok())
    ran(make_client(script), lambda c: c.get("/v2/x"))
    assert clock.sleeps == pytest.approx(expected_backoffs(1))


def test_429_on_post_is_retried_without_recovery(make_client: Callable[..., ApiClient], script: Script,
                                                 clock: FakeClock) -> None:
    recover = returning(None)
    script.then(problem(429, "Rate limit exceeded", headers={"Retry-After": "1"}), ok({"id": "new"}, 201))
    client = make_client(script)
    assert client.run(client.post("/v2/prompts", {"name": "p"}, recover=recover)) == {"id": "new"}
    assert script.methods == ["POST", "POST"]
    assert recover.calls == 0  # type: ignore[attr-defined]


def test_429_after_retry_after_zero_retries_at_once(make_client: Callable[..., ApiClient], script: Script,
                                                    clock: FakeClock) -> None:
    script.then(problem(429, "Rate limit exceeded", headers={"Retry-After": "0"}), ok())
    ran(make_client(script), lambda c: c.get("/v2/x"))
    assert clock.sleeps == []
    assert len(script.requests) == 2


def test_a_429_pauses_later_requests_until_retry_after_has_passed(
        make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    # The first request is throttled with 5s; the clock is moved back as if another thread
    # started a request right after the 429: it must wait the remainder too.
    client = make_client(script)
    script.then(problem(429, "Rate limit exceeded", headers={"Retry-After": "5"}), ok(), ok())
    client.run(client.get("/v2/a"))
    clock.now -= 3  # another thread's view: 3 of the 5 seconds still to go
    client.run(client.get("/v2/b"))
    assert clock.sleeps == [5.0, 3.0]


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_5xx_is_retried_with_exponential_backoff_and_jitter(
        method: str, make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    script.then(problem(503, "Service unavailable"), problem(500, "Internal server error"),
                problem(502, "Bad gateway"), ok({"done": True}))
    assert call(make_client(script), method) == {"done": True}
    assert script.methods == [method] * 4
    assert clock.sleeps == pytest.approx(expected_backoffs(3))
    assert clock.sleeps[0] < clock.sleeps[1] < clock.sleeps[2]


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("error", [
    httpx.ConnectError("refused"), httpx.ReadError("reset by peer"), httpx.ReadTimeout("slow"),
    httpx.RemoteProtocolError("server disconnected"), httpx.WriteError("broken pipe"),
    httpx.ConnectTimeout("connect timeout"), httpx.PoolTimeout("pool"), httpx.WriteTimeout("write"),
], ids=lambda e: type(e).__name__)
def test_connection_errors_are_retried_for_idempotent_methods(
        method: str, error: Exception, make_client: Callable[..., ApiClient], script: Script,
        clock: FakeClock) -> None:
    script.then(error, ok({"done": True}))
    assert call(make_client(script), method) == {"done": True}
    assert len(script.requests) == 2
    assert clock.sleeps == pytest.approx(expected_backoffs(1))


def test_retries_stop_after_max_retries_with_the_last_problem(
        make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    script.then(problem(500, "Internal server error", "database on fire"))
    with pytest.raises(ProblemError) as info:
        ran(make_client(script, max_retries=2), lambda c: c.get("/v2/x"))
    assert info.value.status == 500
    assert info.value.detail == "database on fire"
    assert len(script.requests) == 3
    assert len(clock.sleeps) == 2


def test_transport_failures_end_as_transport_error_after_retries(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.ReadError("connection reset by peer"))
    with pytest.raises(TransportError) as info:
        ran(make_client(script, max_retries=3), lambda c: c.get("/v2/x"))
    assert "gave up after 4 attempts" in str(info.value)
    assert info.value.method == "GET" and info.value.path == "/v2/x"
    assert len(script.requests) == 4


def test_a_refused_connection_is_retried_briefly_then_named_with_its_host(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.ConnectError("[Errno 111] Connection refused"))
    events: list[str] = []
    with pytest.raises(TransportError) as info:
        ran(make_client(script, max_retries=6, on_event=events.append), lambda c: c.get("/v2/x"))
    assert len(script.requests) == 1 + MAX_CONNECT_RETRIES  # not max_retries: a refused host rarely comes back
    assert str(info.value) == ("GET /v2/x: cannot reach api.test.example: connection refused (nothing listens "
                               f"there) (gave up after {1 + MAX_CONNECT_RETRIES} attempts)")
    assert events == ["cannot reach api.test.example: connection refused (nothing listens there): retrying for up "
                      "to 5s"]  # one line, whatever the retries


def test_backoff_is_capped(make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    script.then(problem(503, "Service unavailable"))
    with pytest.raises(ProblemError, match="^GET /v2/x: 503 Service unavailable"):
        ran(make_client(script, max_retries=12, backoff_base=1.0), lambda c: c.get("/v2/x"))
    assert max(clock.sleeps) <= 30.0


def test_4xx_is_not_retried(make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    script.then(problem(422, "Unprocessable Entity", "bad field"))
    with pytest.raises(ProblemError, match="^PATCH /v2/integrations/1: 422 Unprocessable Entity: bad field$"):
        ran(make_client(script), lambda c: c.patch("/v2/integrations/1", {"type": "LLM"}))
    assert len(script.requests) == 1
    assert clock.sleeps == []


# ---------------------------------------------------------------- POST


def test_post_after_ambiguous_5xx_consults_recover_and_returns_what_it_found(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(problem(500, "Internal server error"), ok({"prompts": []}))
    found = {"id": "P1", "name": "p"}
    calls: list[int] = []

    async def recover() -> dict[str, str]:
        calls.append(1)
        return found

    assert ran(make_client(script), lambda c: c.post("/v2/prompts", {"name": "p"}, recover=recover)) is found
    assert script.methods == ["POST"]
    assert calls == [1]


def test_post_after_ambiguous_5xx_is_retried_when_recover_finds_nothing(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(problem(503, "Service unavailable"), ok({"id": "P1"}, 201))
    calls: list[int] = []

    async def recover() -> None:
        calls.append(1)

    assert ran(make_client(script), lambda c: c.post("/v2/prompts", {"name": "p"}, recover=recover)) == {"id": "P1"}
    assert script.methods == ["POST", "POST"]
    assert calls == [1]


def test_post_after_ambiguous_failure_without_recover_raises_ambiguous_write(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.ReadError("connection reset"))
    with pytest.raises(AmbiguousWriteError) as info:
        ran(make_client(script), lambda c: c.post("/v2/prompts", {"name": "p"}))
    assert script.methods == ["POST"]
    assert "may or may not have taken effect" in str(info.value)
    assert info.value.method == "POST" and info.value.path == "/v2/prompts"


@pytest.mark.parametrize("error", [httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("dropped"),
                                   httpx.WriteError("pipe")], ids=lambda e: type(e).__name__)
def test_post_after_reset_or_timeout_consults_recover(
        error: Exception, make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(error)
    assert ran(make_client(script), lambda c: c.post("/v2/x", {}, recover=returning({"id": "X"}))) == {"id": "X"}
    assert script.methods == ["POST"]


@pytest.mark.parametrize("error", [httpx.ConnectError("refused"), httpx.ConnectTimeout("timeout"),
                                   httpx.PoolTimeout("pool")], ids=lambda e: type(e).__name__)
def test_post_that_was_never_sent_is_retried_without_recover(
        error: Exception, make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    script.then(error, ok({"id": "X"}, 201))
    assert ran(make_client(script), lambda c: c.post("/v2/x", {"a": 1})) == {"id": "X"}
    assert script.methods == ["POST", "POST"]
    assert clock.sleeps == pytest.approx(expected_backoffs(1))


def test_post_resent_after_ambiguity_that_meets_409_asks_recover_again(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(problem(500, "Internal server error"), problem(409, "Resource conflict"))
    answers: list[dict[str, str] | None] = [None, {"id": "late"}]
    assert ran(make_client(script), lambda c: c.post("/v2/x", {}, recover=returning(*answers))) == {"id": "late"}
    assert script.methods == ["POST", "POST"]


def test_post_gives_up_after_max_retries_but_asks_recover_a_last_time(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(problem(500, "Internal server error"))
    calls: list[int] = []

    async def recover() -> None:
        calls.append(1)

    with pytest.raises(ProblemError, match="^POST /v2/x: 500 Internal server error"):
        ran(make_client(script, max_retries=2), lambda c: c.post("/v2/x", {}, recover=recover))
    assert script.methods == ["POST"] * 3
    assert calls == [1, 1, 1]


def test_a_failing_recover_makes_the_write_ambiguous(make_client: Callable[..., ApiClient],
                                                      script: Script) -> None:
    script.then(problem(500, "Internal server error"))

    async def recover() -> None:
        raise TransportError("down", method="GET", path="/v2/x")

    with pytest.raises(AmbiguousWriteError) as info:
        ran(make_client(script), lambda c: c.post("/v2/x", {}, recover=recover))
    assert "re-reading to find out failed" in str(info.value)


# ---------------------------------------------------------------- DELETE


def test_delete_retried_after_ambiguous_failure_treats_404_as_done(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.ReadError("reset"), problem(404, "Resource not found"))
    assert ran(make_client(script), lambda c: c.delete("/v2/experiments/E1")) is None
    assert script.methods == ["DELETE", "DELETE"]


def test_delete_404_on_first_attempt_is_an_error_unless_missing_ok(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(problem(404, "Resource not found"))
    client = make_client(script)
    with pytest.raises(ProblemError) as info:
        client.run(client.delete("/v2/experiments/E1"))
    assert info.value.status == 404
    assert client.run(client.delete("/v2/experiments/E1", missing_ok=True)) is None


def test_delete_sends_its_json_body(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(ok({"completed": True}))
    body = {"dataset_version_id": "V1", "example_ids": ["a", "b"]}
    assert ran(make_client(script), lambda c: c.delete("/v2/datasets/D1/examples", body)) == {"completed": True}
    request = script.requests[0]
    assert request.method == "DELETE"
    assert request.headers["content-type"] == "application/json"
    assert httpx.Response(200, content=request.content).json() == body


def test_204_returns_none(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(httpx.Response(204))
    assert ran(make_client(script), lambda c: c.delete("/v2/prompts/P1")) is None
