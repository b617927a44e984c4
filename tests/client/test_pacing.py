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
from reconciler.client.pacing import BURST_S, HEADROOM, INCREASE, MIN_RATE, MIN_SAMPLES, SLOW_START_S, Pacer

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


# --------------------------------------------------------------------------------------------------
# Pacing at its edges, on a fake clock: when requests go once a rate is learnt, how the rate moves
# after each 429 (measured, lowered, probed upwards, floored) and what the user is told.


def learnt(answers: int = 10, seconds: float = 1.0, retry_after: float | None = 1.0,
           events: list[str] | None = None) -> tuple[Pacer, FakeClock]:
    """A pacer that met its first 429 after ``answers`` answers in ``seconds``."""
    clock = FakeClock()
    pacer = Pacer(clock=clock, on_event=None if events is None else events.append)
    for _ in range(answers):
        pacer.answered(pacer.acquire())
        clock.now += seconds / answers
    pacer.throttled(pacer.acquire(), retry_after)
    return pacer, clock


def settled(answers: int = 20, seconds: float = 2.0, retry_after: float | None = 1.0) -> tuple[Pacer, FakeClock]:
    """A pacer past its slow start: after the first 429, a second one ``seconds`` later (a trusted
    window) after ``answers`` answers sets the rate to ``HEADROOM * answers / seconds``."""
    pacer, clock = learnt(answers=10, seconds=1.0, retry_after=1.0)
    clock.now += seconds
    for _ in range(answers):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, retry_after)
    return pacer, clock


def test_the_first_rate_spans_the_first_request_to_the_end_of_the_retry_after() -> None:
    events: list[str] = []
    pacer, _ = learnt(answers=10, seconds=1.0, retry_after=1.0, events=events)
    assert pacer.rate == pytest.approx(HEADROOM * 10 / 2.0)
    assert events == [f"rate limited: pacing requests at {HEADROOM * 5:.1f}/s (10 answers in 2.0s since the last 429)"]


def test_a_first_429_without_retry_after_counts_one_second_for_the_pause() -> None:
    pacer, _ = learnt(answers=10, seconds=3.0, retry_after=None)
    assert pacer.rate == pytest.approx(HEADROOM * 10 / 4.0)


def test_a_429_with_nothing_answered_before_it_teaches_nothing_but_is_a_collision() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    pacer.throttled(pacer.acquire(), 1.0)
    assert (pacer.rate, pacer.state().collisions) == (None, 1)


def test_answers_recorded_before_any_slot_was_asked_for_count_from_the_429() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    for _ in range(10):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 2.0)  # the window: no first request, so the 429 and its pause
    assert pacer.rate == pytest.approx(HEADROOM * 10 / 2.0)


def test_once_paced_a_burst_goes_at_once_then_each_request_waits_one_slot() -> None:
    pacer, clock = settled()
    rate = pacer.rate
    assert rate == pytest.approx(HEADROOM * 10)
    collision = clock.now
    clock.now += BURST_S  # the Retry-After pause: a second's worth of slots banked, less the one after the 429
    start = clock.now
    sent = [pacer.acquire() for _ in range(12)]
    slots = [collision + (k + 1) / rate for k in range(12)]  # one slot apart from the one after the 429
    immediate = sum(1 for t in slots if t <= start)
    assert immediate == int(rate * BURST_S)
    assert sent == pytest.approx([max(start, t) for t in slots])
    assert sent[:immediate] == [start] * immediate
    assert pacer.state().paced_s == pytest.approx(sum(t - start for t in sent))


def test_without_a_429_for_seconds_the_rate_climbs_in_proportion_to_the_quiet() -> None:
    pacer, clock = settled()
    before = pacer.rate
    assert before is not None
    clock.now += 1.0 + 3.0  # the pause, then three quiet seconds
    pacer.acquire()
    quiet = 4.0  # seconds since the 429 that set the rate
    assert pacer.rate == pytest.approx(before * (1 + INCREASE * 3.0 * quiet))
    climbed = pacer.rate
    clock.now += 0.5
    pacer.acquire()  # less than a second later: no second increase
    assert pacer.rate == climbed


def test_a_long_quiet_climbs_as_if_it_were_ten_seconds_at_most() -> None:
    pacer, clock = settled()
    before = pacer.rate
    assert before is not None
    clock.now += 1.0 + 100.0
    pacer.acquire()
    assert pacer.rate == pytest.approx(before * (1 + INCREASE * 10.0 * 101.0))


def test_no_climb_while_the_retry_after_pause_runs() -> None:
    pacer, clock = settled(retry_after=2.0)
    before = pacer.rate
    clock.now += 1.5  # inside the 2 s pause: the rate stands
    pacer.acquire()
    assert pacer.rate == before


def test_a_429_after_a_long_window_sets_the_rate_it_measures_even_higher() -> None:
    pacer, clock = learnt(answers=10, seconds=1.0, retry_after=1.0)
    clock.now += 1.0
    for _ in range(40):
        pacer.answered(clock.now)
    clock.now += 1.0  # 40 answers in the 2 s since the last 429
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == pytest.approx(HEADROOM * 40 / 2.0)


def test_a_429_after_a_short_window_only_lowers_the_rate() -> None:
    pacer, clock = settled()
    before = pacer.rate
    assert before is not None
    clock.now += 1.5  # 1.5 s window: too short to raise the rate
    for _ in range(30):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == pytest.approx(HEADROOM * before)


def test_a_short_window_that_measures_less_sets_that_lower_rate() -> None:
    pacer, clock = settled(answers=200, seconds=2.0)
    clock.now += 1.9
    for _ in range(int(pacer.burst_s * (pacer.rate or 0)) + 2):  # more than a burst, fewer than the rate
        pacer.answered(clock.now)
    measured = (int(pacer.burst_s * (pacer.rate or 0)) + 2) / 1.9
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == pytest.approx(HEADROOM * measured)


def test_too_few_answers_to_measure_change_nothing_and_say_nothing() -> None:
    events: list[str] = []
    pacer, clock = settled(answers=10, seconds=2.0)  # 4.9/s
    before, told = pacer.rate, len(events)
    clock.now += 3.0
    for _ in range(3):  # more than a burst, fewer than MIN_SAMPLES
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == before and len(events) == told
    assert pacer.burst_s == BURST_S


def test_the_rate_never_falls_under_the_floor() -> None:
    pacer, clock = learnt(answers=5, seconds=40.0, retry_after=1.0)  # about 0.12/s
    clock.now += 600.0
    for _ in range(5):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)  # 5 answers in 600 s: 0.008/s
    assert pacer.rate == MIN_RATE


def test_a_small_change_of_rate_is_not_reported_again() -> None:
    events: list[str] = []
    pacer, clock = settled()
    pacer._on_event = events.append  # noqa: SLF001 - told from here on
    clock.now += 3.0
    rate = pacer.rate or 0.0
    for _ in range(round(rate * 3.0 / HEADROOM)):  # the same rate measured again over 3 s: within 5%
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.state().collisions == 3
    assert events == []


def test_a_429_in_the_banked_burst_halves_it_down_to_one_slot_at_most() -> None:
    pacer, clock = settled(answers=10, seconds=2.0)  # about 4.9/s
    rate = pacer.rate
    assert rate is not None
    for _ in range(6):
        clock.now += 1.0 - 1e-9  # a pause within the Retry-After: no climb, a burst banked
        pacer.answered(pacer.acquire())
        pacer.throttled(clock.now, 1.0)
        assert pacer.rate == rate
    assert pacer.burst_s == pytest.approx(1 / rate)
    assert pacer.state().collisions == 8


def test_a_429_to_a_request_sent_before_the_last_collision_changes_nothing() -> None:
    pacer, clock = learnt(answers=10, seconds=1.0, retry_after=1.0)
    state = pacer.state()
    pacer.throttled(clock.now - 0.001, 1.0)
    assert pacer.state() == state
    pacer.throttled(clock.now, 1.0)  # sent when the collision was seen: a new one
    assert pacer.state().collisions == state.collisions + 1


# --------------------------------------------------------------------------------------------------
# Pacing at the exact edges its rules draw (mutation testing found them unpinned): the first
# second of the climb, a Retry-After longer than a second, the burst's size, two 429s at one clock
# reading, and the 5% change that is announced. On a fake clock; nothing sleeps.


def first_429(answers: int, retry_after: float | None,
              events: list[str] | None = None) -> tuple[Pacer, FakeClock]:
    """A pacer whose first 429 came at once after ``answers`` answers (the window is then the
    Retry-After alone, or one second without it)."""
    clock = FakeClock()
    pacer = Pacer(clock=clock, on_event=None if events is None else events.append)
    for _ in range(answers):
        pacer.answered(pacer.acquire())
    pacer.throttled(pacer.acquire(), retry_after)
    return pacer, clock


def test_a_first_retry_after_of_two_seconds_counts_two_seconds() -> None:
    pacer, _ = first_429(answers=10, retry_after=2.0)
    assert pacer.rate == pytest.approx(HEADROOM * 10 / 2.0)


def settled_after_five(answers: int, seconds: float, retry_after: float | None) -> tuple[Pacer, FakeClock]:
    """A pacer past its slow start (its first 429 after five answers): a second 429 ``seconds`` later (a trusted
    window) after ``answers`` answers, which sets the rate to ``HEADROOM * answers / seconds``."""
    pacer, clock = first_429(answers=5, retry_after=1.0)
    clock.now += seconds
    for _ in range(answers):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, retry_after)
    return pacer, clock


def test_the_first_rate_doubles_each_time_a_slow_start_step_of_it_is_answered() -> None:
    pacer, clock = first_429(answers=10, retry_after=None)
    learnt = pacer.rate
    assert learnt == pytest.approx(HEADROOM * 10 / 1.0)  # 9.85/s: a step of 1.48 answers
    clock.now += 60.0
    pacer.acquire()
    assert pacer.rate == learnt  # time alone (a client waiting) does not speed it up
    pacer.answered(clock.now)
    assert pacer.rate == learnt  # not yet
    pacer.answered(clock.now)
    assert pacer.rate == pytest.approx(2 * learnt)  # two answers: at least a step
    for _ in range(2):
        pacer.answered(clock.now)
    assert pacer.rate == pytest.approx(2 * learnt)  # 19.7/s: a step of 2.96 answers
    pacer.answered(clock.now)
    assert pacer.rate == pytest.approx(4 * learnt)
    assert SLOW_START_S * 4 * learnt > 5


@pytest.mark.parametrize(("idle", "banked"), [(BURST_S / 2, True), (0.4 * BURST_S, False)])
def test_a_pause_of_half_a_burst_past_the_next_slot_banks_one_and_a_shorter_pause_does_not(
        idle: float, banked: bool) -> None:
    pacer, clock = settled()  # 9.85/s; the next slot is one slot after the 429
    rate = pacer.rate
    assert rate is not None
    clock.now += 1.0 / rate + idle
    pacer.throttled(pacer.acquire(), retry_after=1.0)  # a 429 at once: in a banked burst, or too soon to measure
    assert pacer.rate == rate
    assert pacer.burst_s == (BURST_S / 2 if banked else BURST_S)


def test_a_slow_start_step_doubles_the_rate_on_the_answer_that_completes_it() -> None:
    pacer, clock = first_429(answers=250, retry_after=0.125)  # 1970/s: a step of 295.5 answers
    for _ in range(296):
        pacer.answered(clock.now)
    assert pacer.rate == 3940.0  # a step of exactly 591 answers
    for _ in range(590):
        pacer.answered(clock.now)
    assert pacer.rate == 3940.0
    pacer.answered(clock.now)
    assert pacer.rate == 7880.0


def test_when_the_slow_start_doubles_the_rate_the_requests_waiting_come_sooner() -> None:
    pacer, clock = first_429(answers=10, retry_after=None)  # 9.85/s
    rate = pacer.rate
    assert rate is not None
    clock.now += 60.0
    slots = [pacer.acquire() for _ in range(3)]
    assert slots == pytest.approx([clock.now, clock.now + 1 / rate, clock.now + 2 / rate])
    pacer.answered(clock.now)
    pacer.answered(clock.now)
    assert pacer.rate == pytest.approx(2 * rate)
    assert pacer.acquire() == pytest.approx(clock.now + 1 / (2 * rate))  # not 3/rate: one slot of the new pace


def test_the_next_collision_ends_the_slow_start_with_what_it_measures_or_half_the_pace_that_met_it() -> None:
    pacer, clock = first_429(answers=10, retry_after=1.0)  # 4.925/s
    for _ in range(6):  # three doublings: 39.4/s
        pacer.answered(clock.now)
    assert pacer.rate == pytest.approx(8 * HEADROOM * 5)
    clock.now += 1.5
    pacer.throttled(clock.now, 1.0)  # 6 answers in 1.5 s: 4/s measured, under half the pace (19.7/s)
    assert pacer.rate == pytest.approx(HEADROOM * 4 * 4.0)  # half the pace, but 4x the measure at most
    for _ in range(20):
        pacer.answered(clock.now)
    assert pacer.rate == pytest.approx(HEADROOM * 4 * 4.0)  # slow start is over: no more doubling


def test_a_slow_start_that_measures_more_than_half_its_pace_keeps_the_measure() -> None:
    pacer, clock = first_429(answers=10, retry_after=1.0)  # 4.925/s
    for _ in range(6):
        pacer.answered(clock.now)  # 39.4/s
    clock.now += 0.25
    for _ in range(4):
        pacer.answered(clock.now)  # one doubling more: 78.8/s
    pacer.throttled(clock.now, 1.0)  # 10 answers in 0.25 s: 40/s measured, more than half of 78.8
    assert pacer.rate == pytest.approx(HEADROOM * 10 / 0.25)


def test_the_rate_climbs_one_second_after_a_429_without_retry_after() -> None:
    pacer, clock = settled_after_five(answers=40, seconds=2.0, retry_after=None)
    learnt = pacer.rate
    assert learnt == pytest.approx(HEADROOM * 40 / 2.0)
    clock.now += 1.0  # exactly one second of quiet: one second of climb, as quiet as one second
    pacer.acquire()
    assert pacer.rate == pytest.approx(learnt * (1.0 + INCREASE * 1.0 * 1.0))


def test_a_429_after_as_many_answers_as_the_banked_burst_holds_halves_the_burst() -> None:
    pacer, clock = settled_after_five(answers=400, seconds=2.0, retry_after=1.0)
    assert pacer.rate == 197.0  # HEADROOM * 400 answers / 2 s, exactly
    clock.now += 1.0  # the Retry-After: no climb yet, and a burst banked
    for _ in range(198):  # a burst of 197 slots and the one at now: the banked burst
        pacer.answered(pacer.acquire())
    pacer.throttled(clock.now, 1.0)
    assert (pacer.rate, pacer.burst_s) == (197.0, 0.5)


def test_without_a_pause_a_short_window_measures_instead_of_halving_the_burst() -> None:
    pacer, clock = settled_after_five(answers=400, seconds=2.0, retry_after=0.0)
    for _ in range(10):  # paced right after the 429: one slot each, nothing banked
        pacer.answered(pacer.acquire())
    clock.now += 0.1
    pacer.throttled(clock.now, 1.0)
    assert pacer.burst_s == 1.0
    assert pacer.rate == pytest.approx(HEADROOM * 10 / 0.1)


def test_a_halved_burst_holds_half_as_many_answers() -> None:
    pacer, clock = settled_after_five(answers=400, seconds=2.0, retry_after=1.0)
    clock.now += 1.0
    pacer.answered(pacer.acquire())
    pacer.throttled(clock.now, 1.0)  # one answer in the burst: it halves
    assert pacer.burst_s == 0.5
    clock.now += 4.0
    for _ in range(150):  # more than the half burst holds (99.5): a window that measures
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.burst_s == 0.5
    assert pacer.rate == pytest.approx(HEADROOM * 150 / 4.0)


def test_two_429s_with_too_few_answers_between_keep_the_window_and_the_rate() -> None:
    events: list[str] = []
    pacer, clock = settled_after_five(answers=40, seconds=2.0, retry_after=1.0)
    learnt = pacer.rate
    collision = clock.now
    for _ in range(4):  # fewer than MIN_SAMPLES answers, and a 429 at the same clock reading (a coarse clock)
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == learnt and not events
    assert pacer.state().collisions == 3
    assert not pacer.changed_since(collision)  # the window goes on: slots reserved since stay good
    assert pacer.acquire() == pytest.approx(collision + 1 / learnt)  # the slot after the pause, still
    clock.now += 2.0
    for _ in range(45):  # the answers of both windows count together
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == pytest.approx(HEADROOM * 49 / 2.0)


def test_a_change_of_exactly_five_percent_is_not_announced_and_more_is() -> None:
    events: list[str] = []
    pacer, clock = settled_after_five(answers=250, seconds=2.0, retry_after=1.0)
    pacer._on_event = events.append  # noqa: SLF001 - told from here on
    assert pacer.rate == 123.125
    clock.now += 4.0
    for _ in range(525):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == 129.28125  # 5% more, exactly
    assert events == []
    clock.now += 4.0
    for _ in range(560):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)
    assert pacer.rate == pytest.approx(HEADROOM * 140)  # 6.7% more
    assert events == [f"rate limited: pacing requests at {HEADROOM * 140:.1f}/s (560 answers in 4.0s since the last 429)"]


def banked_429(retry_after: float | None) -> tuple[Pacer, FakeClock, float]:
    """A settled pacer (about 4.9/s) whose banked burst met a 429 at once, ``retry_after`` asked: its
    clock, its rate."""
    pacer, clock = settled(answers=10, seconds=2.0)
    rate = pacer.rate
    assert rate is not None
    clock.now += 1.0  # a pause: a burst banked
    pacer.throttled(pacer.acquire(), retry_after)
    assert pacer.burst_s == 0.5 and pacer.rate == rate
    return pacer, clock, rate


def test_after_a_429_in_the_banked_burst_the_next_request_waits_one_slot_and_a_second_429_is_no_new_halving() -> None:
    pacer, clock, rate = banked_429(1.0)
    assert pacer.acquire() == pytest.approx(clock.now + 1.0 / rate)
    pacer.throttled(clock.now, 1.0)  # too few answers since: one slot's pause more, the burst kept
    assert pacer.burst_s == 0.5 and pacer.rate == rate
    assert pacer.acquire() == pytest.approx(clock.now + 2.0 / rate)


def test_after_a_429_in_the_banked_burst_the_rate_climbs_once_its_retry_after_has_passed() -> None:
    pacer, clock, rate = banked_429(3.0)
    clock.now += 2.0  # a second of quiet, but within the Retry-After's three
    pacer.acquire()
    assert pacer.rate == rate
    pacer, clock, rate = banked_429(None)
    clock.now += 1.0  # no Retry-After: the climb starts from the 429
    pacer.acquire()
    assert pacer.rate is not None and pacer.rate > rate


def test_a_429_with_too_few_answers_pauses_one_slot_past_now_even_when_no_slot_was_reserved_ahead() -> None:
    pacer, clock = learnt(answers=10, seconds=1.0, retry_after=1.0)
    clock.now += 30.0  # long idle: the next free slot is far in the past
    pacer.answered(clock.now)
    rate = pacer.rate
    assert rate is not None
    pacer.throttled(clock.now, 1.0)
    assert pacer.acquire() == pytest.approx(clock.now + 1.0 / rate)


def test_two_429s_at_one_clock_reading_with_answers_between_learn_nothing() -> None:
    pacer, clock = settled(answers=10, seconds=2.0)
    state = pacer.state()
    for _ in range(MIN_SAMPLES):
        pacer.answered(clock.now)
    pacer.throttled(clock.now, 1.0)  # a window of no time: no rate measured from it
    assert pacer.rate == state.rate and pacer.state().collisions == state.collisions + 1
