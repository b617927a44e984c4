"""The retry policy at its limits, on a fake clock: exactly how many attempts each failure gets, how
long each wait is, and the words of each retry a user reads."""

from __future__ import annotations

import random
from collections.abc import Callable

import httpx
import pytest
from clienthelpers import FakeClock, Script, no_sleep, ok, problem, ran

from reconciler.client.http import MAX_BACKOFF, MAX_THROTTLED, ApiClient
from reconciler.errors import ProblemError, TransportError


def test_a_request_may_meet_429_as_often_as_the_limit_and_still_succeed(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(*[problem(429, "Rate limit exceeded", headers={"Retry-After": "0"})] * MAX_THROTTLED, ok({"n": 1}))
    assert ran(make_client(script), lambda c: c.get("/v2/x")) == {"n": 1}
    assert len(script.requests) == MAX_THROTTLED + 1


def test_one_429_more_than_the_limit_gives_up_with_the_429(make_client: Callable[..., ApiClient],
                                                           script: Script) -> None:
    script.then(problem(429, "Rate limit exceeded", headers={"Retry-After": "0"}))
    with pytest.raises(ProblemError) as info:
        ran(make_client(script), lambda c: c.get("/v2/x"))
    assert info.value.status == 429
    assert len(script.requests) == MAX_THROTTLED + 1


def test_429s_do_not_use_up_the_retries_of_failures(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(problem(429, "slow down", headers={"Retry-After": "0"}), problem(503, "down"),
                problem(429, "slow down", headers={"Retry-After": "0"}), ok({"n": 1}))
    assert ran(make_client(script, max_retries=1), lambda c: c.get("/v2/x")) == {"n": 1}


def test_exactly_max_retries_are_made_after_the_first_attempt(make_client: Callable[..., ApiClient],
                                                              script: Script) -> None:
    script.then(problem(503, "down"), problem(503, "down"), ok({"n": 1}))
    assert ran(make_client(script, max_retries=2), lambda c: c.get("/v2/x")) == {"n": 1}
    script2 = Script().then(problem(503, "down"))
    with pytest.raises(ProblemError, match=r"^GET /v2/x: 503 down$"):
        ran(make_client(script2, max_retries=2), lambda c: c.get("/v2/x"))
    assert len(script2.requests) == 3


def test_a_single_attempt_failure_says_no_attempt_count(make_client: Callable[..., ApiClient],
                                                        script: Script) -> None:
    script.then(httpx.ReadTimeout("timed out"))
    with pytest.raises(TransportError) as info:
        ran(make_client(script, max_retries=0), lambda c: c.get("/v2/x"))
    assert str(info.value) == "GET /v2/x: ReadTimeout: timed out"


def test_each_retry_is_told_with_its_wait_and_its_number(make_client: Callable[..., ApiClient], script: Script,
                                                         clock: FakeClock) -> None:
    events: list[str] = []
    script.then(problem(503, "down"), httpx.ReadError("reset"), ok())
    ran(make_client(script, max_retries=4, on_event=events.append), lambda c: c.put("/v2/x", {}))
    assert events == [f"503 Service Unavailable on PUT /v2/x: retrying in {clock.sleeps[0]:.2f}s (retry 1 of 4)",
                      f"ReadError: reset on PUT /v2/x: retrying in {clock.sleeps[1]:.2f}s (retry 2 of 4)"]


def test_a_5xx_with_retry_after_waits_what_it_asks_up_to_the_cap(make_client: Callable[..., ApiClient],
                                                                  script: Script, clock: FakeClock) -> None:
    script.then(problem(503, "down", headers={"Retry-After": "7"}), problem(503, "down", headers={"Retry-After": "90"}),
                ok())
    client = make_client(script, max_retry_after=60.0)
    client.run(client.get("/v2/x"))
    assert clock.sleeps == [7.0, 60.0]
    assert client.stats.snapshot().wait_seconds == 67.0


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon", "Wed, 21 Oct 2026 07:28:00 GMT"])
def test_a_retry_after_that_is_not_seconds_is_ignored_for_a_backoff(
        make_client: Callable[..., ApiClient], script: Script, clock: FakeClock, value: str) -> None:
    events: list[str] = []
    script.then(problem(429, "slow down", headers={"Retry-After": value}), ok())
    ran(make_client(script, on_event=events.append), lambda c: c.get("/v2/x"))
    rng = random.Random(7)
    assert clock.sleeps == pytest.approx([0.1 + rng.uniform(0, 0.1)])
    assert events[0].endswith("(no valid Retry-After; backing off)")


def test_a_retry_after_with_spaces_is_read() -> None:
    clock = FakeClock()
    script = Script().then(problem(429, "slow down", headers={"Retry-After": " 3 "}), ok())
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(script))
    ran(ApiClient(http, sleep=clock.sleep, clock=clock), lambda c: c.get("/v2/x"))
    assert clock.sleeps == [3.0]


def test_the_backoff_doubles_from_the_base_then_stays_at_the_cap(make_client: Callable[..., ApiClient],
                                                                 script: Script, clock: FakeClock) -> None:
    script.then(problem(503, "down"))
    with pytest.raises(ProblemError, match=r"^GET /v2/x: 503 down$"):
        ran(make_client(script, max_retries=10, backoff_base=1.0), lambda c: c.get("/v2/x"))
    rng = random.Random(7)
    expected = []
    for n in range(1, 11):
        ceiling = min(MAX_BACKOFF, 2.0 ** (n - 1))
        expected.append(ceiling / 2 + rng.uniform(0, ceiling / 2))
    assert clock.sleeps == pytest.approx(expected)


def test_a_throttled_client_holds_back_every_later_request_until_the_pause_ends(
        make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    script.then(problem(429, "slow down", headers={"Retry-After": "5"}), ok(), ok())
    client = make_client(script)
    client.run(client.get("/v2/a"))
    start = clock.now
    client.run(client.get("/v2/b"))  # the pause is over: no second wait
    assert clock.now == start
    assert clock.sleeps == [5.0]
    assert client.stats.snapshot().wait_seconds == 5.0


def test_a_refused_connection_is_retried_at_most_as_often_as_max_retries_allows(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    events: list[str] = []
    script.then(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(TransportError, match=r"^GET /v2/x: cannot reach api\.test\.example: connection refused \(nothing listens there\) \(gave up after 2 attempts\)$"):
        ran(make_client(script, max_retries=1, on_event=events.append), lambda c: c.get("/v2/x"))
    assert len(script.requests) == 2
    assert events == ["cannot reach api.test.example: connection refused (nothing listens there): retrying for up to 5s"]


def test_a_refused_connection_is_not_retried_past_the_connect_budget(script: Script) -> None:
    clock = FakeClock()

    def refuse(request: httpx.Request) -> httpx.Response:
        clock.now += 2.0  # each refusal takes two seconds
        raise httpx.ConnectError("[Errno 111] Connection refused")

    script.then(refuse)
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(script))
    client = ApiClient(http, sleep=no_sleep, clock=clock, timeout=httpx.Timeout(30.0, connect=3.0))
    with pytest.raises(TransportError, match=r"^GET /v2/x: cannot reach 127\.0\.0\.1:9: connection refused .*\(gave up after 2 attempts\)$"):
        client.run(client.get("/v2/x"))
    assert len(script.requests) == 2  # 2 s, then 4 s: past the 3 s budget


def test_a_post_that_meets_503_and_finds_nothing_is_sent_again_then_gives_up_with_the_503(
        make_client: Callable[..., ApiClient], script: Script, clock: FakeClock) -> None:
    asked: list[int] = []
    script.then(problem(503, "down"))

    async def recover() -> None:
        asked.append(1)

    with pytest.raises(ProblemError) as info:
        ran(make_client(script, max_retries=1), lambda c: c.post("/v2/x", {}, recover=recover))
    assert info.value.status == 503
    assert len(script.requests) == 2
    assert len(asked) == 2
    assert len(clock.sleeps) == 1


def test_a_failed_re_read_names_the_write_it_could_not_confirm(make_client: Callable[..., ApiClient],
                                                               script: Script) -> None:
    from reconciler.errors import AmbiguousWriteError

    script.then(problem(500, "Internal server error"))

    async def recover() -> None:
        raise TransportError("down", method="GET", path="/v2/things")

    with pytest.raises(AmbiguousWriteError) as info:
        ran(make_client(script), lambda c: c.post("/v2/things", {}, recover=recover))
    assert (info.value.method, info.value.path) == ("POST", "/v2/things")
    assert str(info.value) == ("POST /v2/things: the create may or may not have taken effect, and re-reading to find "
                               "out failed (GET /v2/things: down)")


def test_a_5xx_that_outlasts_the_retries_names_the_call(make_client: Callable[..., ApiClient],
                                                        script: Script) -> None:
    script.then(problem(503, "Service unavailable"))
    with pytest.raises(ProblemError) as info:
        ran(make_client(script, max_retries=1), lambda c: c.put("/v2/things/1", {}))
    assert (info.value.status, info.value.method, info.value.path) == (503, "PUT", "/v2/things/1")
    assert str(info.value).startswith("PUT /v2/things/1: 503 Service unavailable")


def test_without_a_connect_timeout_the_default_budget_bounds_refused_connections(script: Script) -> None:
    clock = FakeClock()
    script.then(httpx.ConnectError("[Errno 111] Connection refused"))
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(script))
    client = ApiClient(http, sleep=clock.sleep, clock=clock, rng=random.Random(7),
                       timeout=httpx.Timeout(30.0, connect=None))
    with pytest.raises(TransportError, match="connection refused"):
        client.run(client.get("/v2/x"))
    assert len(script.requests) == 3
