"""``AdaptiveLimit``: the requests in flight start at the ceiling (``--parallelism``), shrink when round
trips grow or the service says it is overloaded, grow back while they stay flat, and waiters are
served in order, a cancelled one never holding a slot."""

from __future__ import annotations

import asyncio
import math

import pytest

from reconciler.client.limit import BACKOFF, BASELINE_DRIFT, SMOOTHING, TOLERANCE, AdaptiveLimit


def test_it_starts_at_the_ceiling() -> None:
    assert AdaptiveLimit(10).slots == 10
    assert AdaptiveLimit(1).slots == 1
    with pytest.raises(ValueError, match=r"^the limit's ceiling must be at least 1$"):
        AdaptiveLimit(0)


def busy(limit: AdaptiveLimit, rtt: float, answers: int) -> None:
    """``answers`` exchanges of ``rtt`` seconds, each with the limit in use."""
    for _ in range(answers):
        limit.in_flight = limit.slots
        limit.release(rtt)


def test_flat_round_trips_grow_the_limit_back_to_the_ceiling_and_no_further() -> None:
    limit = AdaptiveLimit(10)
    limit.in_flight = 1
    limit.release(0.02, overloaded=True)
    limit.in_flight = 1
    limit.release(0.02, overloaded=True)
    assert limit.limit == pytest.approx(10 * BACKOFF * BACKOFF)
    start = limit.limit
    busy(limit, 0.02, 1)
    assert limit.limit == pytest.approx(start * (1 - SMOOTHING) + (start + math.sqrt(start)) * SMOOTHING)
    busy(limit, 0.02, 60)
    assert limit.limit == 10.0 and limit.slots == 10


def test_round_trips_that_grow_past_the_tolerance_shrink_it() -> None:
    limit = AdaptiveLimit(10)
    busy(limit, 0.02, 60)
    busy(limit, 0.02 * TOLERANCE, 3)  # still flat enough: no change at the ceiling
    assert limit.limit == 10.0
    busy(limit, 0.02 * TOLERANCE * 4, 20)  # queueing at the service: the gradient halves it each time
    assert limit.slots < 10
    busy(limit, 0.02 * TOLERANCE * 4, 200)
    assert limit.slots >= 1


def test_a_limit_not_in_use_does_not_grow() -> None:
    limit = AdaptiveLimit(10)
    busy(limit, 0.02, 1)
    busy(limit, 0.02 * TOLERANCE * 3, 6)  # shrunk
    grown = limit.limit
    assert grown > 4
    for _ in range(50):
        limit.in_flight = 1  # less than half of it in use
        limit.release(0.02)
    assert limit.limit == grown


def test_an_overloaded_answer_backs_it_off_down_to_one() -> None:
    limit = AdaptiveLimit(10)
    busy(limit, 0.02, 60)
    limit.in_flight = 1
    limit.release(0.02, overloaded=True)
    assert limit.limit == pytest.approx(10 * BACKOFF)
    for _ in range(100):
        limit.in_flight = 1
        limit.release(None, overloaded=True)
    assert limit.limit == 1.0
    limit.in_flight = 1
    limit.release(None)  # no answer: nothing learnt
    assert limit.limit == 1.0


def test_waiters_get_slots_first_come_first_served_and_a_cancelled_one_holds_none() -> None:
    async def main() -> None:
        limit = AdaptiveLimit(2)
        order: list[str] = []
        await limit.acquire()
        await limit.acquire()
        assert limit.in_flight == 2

        async def wait(name: str) -> None:
            await limit.acquire()
            order.append(name)

        first, gone, last = (asyncio.ensure_future(wait(n)) for n in ("first", "gone", "last"))
        await asyncio.sleep(0)
        gone.cancel()  # cancelled while waiting: it leaves the queue
        await asyncio.sleep(0)
        limit.release(None)
        limit.release(None)
        await asyncio.gather(first, last)
        assert order == ["first", "last"] and limit.in_flight == 2
        assert gone.cancelled()

    asyncio.run(main())


def test_a_waiter_cancelled_after_its_slot_was_given_passes_the_slot_on() -> None:
    async def main() -> None:
        limit = AdaptiveLimit(1)
        await limit.acquire()
        woken = asyncio.ensure_future(limit.acquire())
        after = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        limit.release(None)  # the slot is given to ``woken``...
        woken.cancel()  # ...which is cancelled before it runs: the slot goes to ``after``
        with pytest.raises(asyncio.CancelledError):
            await woken
        await after
        assert limit.in_flight == 1
        gone = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        gone.cancel()  # a wait cancelled...
        limit.release(None)  # ...and passed over by the queue in the same turn: cancelled, holding no slot
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert limit.in_flight == 0

    asyncio.run(main())


def test_it_grows_while_at_least_half_of_it_is_in_use_and_not_below() -> None:
    for in_use, grows in ((4, True), (3, False)):
        limit = AdaptiveLimit(10)
        limit.limit = 8.0
        limit.in_flight = in_use
        limit.release(0.02)
        assert (limit.limit > 8.0) is grows


def test_from_one_slot_flat_round_trips_grow_it_by_the_smoothed_step() -> None:
    limit = AdaptiveLimit(10)
    for _ in range(30):
        limit.in_flight = 1
        limit.release(None, overloaded=True)
    assert limit.limit == 1.0
    limit.in_flight = 1
    limit.release(0.02)
    assert limit.limit == pytest.approx(1.0 * (1 - SMOOTHING) + (1.0 + 1.0) * SMOOTHING)


def test_the_baseline_drifts_up_towards_slower_round_trips() -> None:
    limit = AdaptiveLimit(10)
    busy(limit, 0.02, 1)
    assert limit.baseline == 0.02
    busy(limit, 0.05, 10)
    assert limit.baseline == pytest.approx(0.02 * (1 + BASELINE_DRIFT) ** 10)


def test_a_round_trip_of_no_time_teaches_nothing() -> None:
    limit = AdaptiveLimit(10)
    busy(limit, 0.0, 3)
    assert (limit.limit, limit.baseline, limit.in_flight) == (10.0, math.inf, 9)


def test_a_release_wakes_one_waiter_per_free_slot() -> None:
    async def main() -> None:
        limit = AdaptiveLimit(1)
        await limit.acquire()
        waiters = [asyncio.ensure_future(limit.acquire()) for _ in range(2)]
        await asyncio.sleep(0)
        limit.release(None)
        await asyncio.sleep(0)
        assert [w.done() for w in waiters] == [True, False] and limit.in_flight == 1
        limit.release(None)
        await waiters[1]

    asyncio.run(main())
