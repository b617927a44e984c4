"""Pacing at its edges, on a fake clock: when requests go once a rate is learnt, how the rate moves
after each 429 (measured, lowered, probed upwards, floored) and what the user is told."""

from __future__ import annotations

import pytest
from clienthelpers import FakeClock

from reconciler.client.pacing import BURST_S, HEADROOM, INCREASE, MIN_RATE, Pacer


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
