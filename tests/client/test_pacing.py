"""Pacing under a rate limit the API does not publish: the client learns it from 429s and
Retry-After (whole seconds, like the service's) and spreads its requests under it.

The service here is a token bucket on the fake clock (the emulator's: capacity = rate, refilled
continuously, Retry-After the whole seconds until one token); every exchange takes ``SERVICE_S`` of
fake time. Nothing here sleeps or times anything real."""

from __future__ import annotations

import math
from collections.abc import Callable

import httpx
import pytest
from clienthelpers import FakeClock, ok, problem

from reconciler.client.http import ApiClient
from reconciler.client.pacing import HEADROOM, MIN_SAMPLES, Pacer

SERVICE_S = 0.002


class Bucket:
    """A rate-limited service on the fake clock."""

    def __init__(self, clock: FakeClock, rate: float, capacity: float | None = None) -> None:
        self.clock = clock
        self.rate = rate
        self.capacity = capacity if capacity is not None else max(1.0, rate)
        self.tokens = self.capacity
        self.at = clock.now
        self.granted = 0
        self.throttled = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.clock.now += SERVICE_S
        now = self.clock.now
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            self.granted += 1
            return ok({"n": self.granted})
        self.throttled += 1
        wait = max(0, math.ceil((1.0 - self.tokens) / self.rate))
        return problem(429, "Rate limit exceeded", headers={"Retry-After": str(wait)})


@pytest.mark.parametrize("rate", [50.0, 20.0, 200.0])  # 1,000 to 20,000 answers a 429 would measure
def test_the_client_uses_the_rate_with_few_429s_and_no_failed_call(
        make_client: Callable[..., ApiClient], clock: FakeClock, rate: float) -> None:
    service = Bucket(clock, rate)
    client = make_client(service)
    start = clock.now
    # one request at a time: each collision stalls the whole client for its Retry-After (1 s), and the
    # slow start meets one more than an exact first measure would; over 20 s of the rate that is 5% at most
    calls = max(2000, int(20 * rate))
    for _ in range(calls):
        client.run(client.get("/v2/things"))
    seconds = clock.now - start
    allowed = service.capacity + rate * seconds  # what the bucket could let through in that time
    assert service.granted == calls
    assert calls / allowed >= 0.95
    assert service.throttled <= 0.02 * calls
    learnt = client.pacer.rate
    assert learnt is not None and 0.9 * rate <= learnt <= 1.1 * rate


def test_a_bucket_smaller_than_a_second_is_learnt_too(make_client: Callable[..., ApiClient],
                                                      clock: FakeClock) -> None:
    service = Bucket(clock, 50.0, capacity=10.0)  # 10 answers between two 429s: the rate looks like 10/s
    client = make_client(service)
    for _ in range(2000):
        client.run(client.get("/v2/things"))
    assert service.granted == 2000
    assert service.throttled <= 40
    assert client.pacer.burst_s <= 0.25  # a burst of 50 after each pause met 429s: it was halved
    assert client.pacer.rate is not None and 25.0 <= client.pacer.rate <= 55.0  # probed back up


def test_without_a_429_nothing_is_paced(make_client: Callable[..., ApiClient], clock: FakeClock) -> None:
    client = make_client(lambda request: ok({}))
    for _ in range(100):
        client.run(client.get("/v2/things"))
    assert client.pacer.rate is None
    assert clock.sleeps == []


def test_the_first_rate_counts_answers_from_the_first_request_to_the_end_of_the_retry_after() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    start = clock.now
    for _ in range(60):
        sent = pacer.acquire()
        clock.now += 0.01  # 60 answers in 0.6 s
        pacer.answered(sent)
    sent = pacer.acquire()
    pacer.throttled(sent, retry_after=1.0)
    assert clock.now - start == pytest.approx(0.6)
    assert pacer.rate == pytest.approx(HEADROOM * 60 / 1.6)


def test_429s_of_requests_already_in_flight_are_one_collision() -> None:
    clock = FakeClock()
    events: list[str] = []
    pacer = Pacer(clock=clock, on_event=events.append)
    sent = [pacer.acquire() for _ in range(MIN_SAMPLES + 10)]
    for s in sent[:MIN_SAMPLES]:
        pacer.answered(s)
    clock.now += 0.5
    for s in sent[MIN_SAMPLES:]:  # ten workers' requests were on the wire together: ten 429s
        pacer.throttled(s, retry_after=1.0)
    state = pacer.state()
    assert state.collisions == 1
    assert state.rate == pytest.approx(HEADROOM * MIN_SAMPLES / 1.5)
    assert len(events) == 1 and events[0].startswith("rate limited: pacing requests at")


def test_a_429_while_the_banked_burst_is_spent_halves_the_burst_not_the_rate() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    pacer.throttled(pacer.acquire(), retry_after=1.0)
    assert pacer.rate is None  # one 429 and nothing answered yet: nothing to learn
    for _ in range(MIN_SAMPLES * 4):
        pacer.answered(pacer.acquire())
    clock.now += 1.0
    pacer.throttled(pacer.acquire(), retry_after=1.0)
    assert pacer.rate == pytest.approx(HEADROOM * MIN_SAMPLES * 4 / 1.0)
    clock.now += 2.0  # a window long enough to trust ends the slow start
    for _ in range(40):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, retry_after=1.0)
    first = pacer.rate
    assert first == pytest.approx(HEADROOM * 40 / 2.0)
    clock.now += 1.0  # the Retry-After pause
    for _ in range(3):  # the first three of the banked burst are answered, the fourth is a 429
        pacer.answered(pacer.acquire())
    pacer.throttled(pacer.acquire(), retry_after=1.0)
    assert pacer.rate == first
    assert pacer.burst_s == 0.5
