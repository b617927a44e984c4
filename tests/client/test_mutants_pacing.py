"""Pacing at the exact edges its rules draw (mutation testing found them unpinned): the first
second of the climb, a Retry-After longer than a second, the burst's size, two 429s at one clock
reading, and the 5% change that is announced. On a fake clock; nothing sleeps."""

from __future__ import annotations

import pytest
from clienthelpers import FakeClock

from reconciler.client.pacing import HEADROOM, INCREASE, SLOW_START_S, Pacer


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


def settled(answers: int, seconds: float, retry_after: float | None) -> tuple[Pacer, FakeClock]:
    """A pacer past its slow start: a first 429, then a second one ``seconds`` later (a trusted
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
    pacer, clock = settled(answers=40, seconds=2.0, retry_after=None)
    learnt = pacer.rate
    assert learnt == pytest.approx(HEADROOM * 40 / 2.0)
    clock.now += 1.0  # exactly one second of quiet: one second of climb, as quiet as one second
    pacer.acquire()
    assert pacer.rate == pytest.approx(learnt * (1.0 + INCREASE * 1.0 * 1.0))


def test_a_429_after_as_many_answers_as_the_banked_burst_holds_halves_the_burst() -> None:
    pacer, clock = settled(answers=400, seconds=2.0, retry_after=1.0)
    assert pacer.rate == 197.0  # HEADROOM * 400 answers / 2 s, exactly
    clock.now += 1.0  # the Retry-After: no climb yet, and a burst banked
    for _ in range(198):  # a burst of 197 slots and the one at now: the banked burst
        pacer.answered(pacer.acquire())
    pacer.throttled(clock.now, 1.0)
    assert (pacer.rate, pacer.burst_s) == (197.0, 0.5)


def test_without_a_pause_a_short_window_measures_instead_of_halving_the_burst() -> None:
    pacer, clock = settled(answers=400, seconds=2.0, retry_after=0.0)
    for _ in range(10):  # paced right after the 429: one slot each, nothing banked
        pacer.answered(pacer.acquire())
    clock.now += 0.1
    pacer.throttled(clock.now, 1.0)
    assert pacer.burst_s == 1.0
    assert pacer.rate == pytest.approx(HEADROOM * 10 / 0.1)


def test_a_halved_burst_holds_half_as_many_answers() -> None:
    pacer, clock = settled(answers=400, seconds=2.0, retry_after=1.0)
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
    pacer, clock = settled(answers=40, seconds=2.0, retry_after=1.0)
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
    pacer, clock = settled(answers=250, seconds=2.0, retry_after=1.0)
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
