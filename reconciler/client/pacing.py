"""Pacing: one shared request budget that learns the service's rate limit from its 429s.

The API publishes no rate, and its ``Retry-After`` is whole seconds: after a 429 it says "1" when
one more token would have come in 20 ms. Waiting for it and then sending as fast as possible again
(what a client without pacing does) empties the service's bucket again at once, and every worker
in flight meets a 429 each time. Backing off by the size of ``Retry-After`` (a naive AIMD) learns
a rate far under the real one. So the pacer measures the rate instead:

- **Unpaced until the first 429.** A service that never throttles costs nothing (one comparison).
- **The rate is the count of answers between two 429s.** When the service answers 429 its bucket
  is empty; when it does so again, later, it is empty again, so every request it answered in
  between was paid for by a token it refilled in between: ``rate = answered / seconds``. (An answer
  counts whatever its status: a 404 took a token too.) The first 429 has no earlier one: the
  window then starts at the first request and ends ``Retry-After`` after the 429, which is exact for
  a bucket that holds one ``Retry-After`` of tokens (the common token bucket, and the emulator's).
- **Pace a little under it** (``HEADROOM``), from one budget shared by every worker: a GCRA token
  bucket (each request is given the next slot ``1 / rate`` after the previous one, and a pause of
  more than ``BURST_S`` does not bank more than ``BURST_S`` worth of requests: the service's bucket
  refilled by as much meanwhile).
- **Probe upwards** while no 429 comes: ``INCREASE`` per second times the seconds since the last
  one (a gentle start that speeds up), so a rate learnt too low (the service's bucket was smaller
  than assumed) climbs back; the next 429 measures again.
- **429s of one collision count once.** Workers whose requests were already on the wire when the
  first 429 came back meet it too; a 429 to a request sent before the last one was seen neither
  re-measures nor lowers the rate.
- **The burst is learnt too.** A 429 that comes while the banked burst after a pause is being
  spent (fewer answers since the last 429 than the burst holds) says the service's bucket is
  smaller than ``BURST_S`` of its rate: the burst halves, and the rate stands.
- A window of at least ``TRUSTED_WINDOW_S`` sets the pace from its measure; a shorter one can
  only lower it.
- A 429 with fewer than ``MIN_SAMPLES`` answers since the last collision measures nothing: the
  bucket had not refilled at this pace yet. The window goes on, after one slot's pause more.
- **A slot given at a pace that no longer holds is asked for again.** At a collision the next free
  slot is one slot's pause away; a request that was waiting for a slot reserved before the
  collision, or before a slow start's doubling, asks for a new one (``changed_since``), so an old
  pace sends nothing more.
- **Slow start after the first 429.** The first rate is a lower bound when the service's bucket
  holds less than a ``Retry-After`` of tokens (a bucket of a tenth of a second makes it a fifth of
  the real rate): until the next collision, the pace doubles each time ``SLOW_START_S`` of it has
  been answered (as TCP's window grows with its acknowledgements: a client that waits, or whose
  requests all wait out a ``Retry-After``, does not speed up meanwhile). The collision that ends it
  came at a pace at most twice the service's: the rate is what its window measured, or half that
  pace when more (the bucket sat full while the pace was under the service's rate, so the window
  measured too little), never more than four times the measure.

The pacer decides, the client waits: ``acquire()`` returns the time the request may be sent, and
the client sleeps until then on its event loop (one loop owns the pacer: no lock). The 429 itself
is still obeyed: the throttled request waits its ``Retry-After``; until the pacer has a rate every
request does (``ApiClient._throttle``), and once it has one the others keep to the pace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

#: Pace at this fraction of the measured rate.
HEADROOM = 0.985
#: A window at least this long measures the rate well enough to replace the pace outright (a
#: shorter one can only lower it).
TRUSTED_WINDOW_S = 2.0
#: Additive increase: the rate grows by this fraction for each second without a 429.
INCREASE = 0.005
#: Answers a window must hold to measure the rate from it.
MIN_SAMPLES = 5
#: The most a pause banks: after it, up to ``rate * BURST_S`` requests go at once.
BURST_S = 1.0
#: The slowest pace the pacer sets (requests per second).
MIN_RATE = 0.1
#: After the first 429, until a window is measured, the pace doubles each time this many seconds of it are answered.
SLOW_START_S = 0.15


@dataclass(frozen=True)
class PacerState:
    rate: float | None  # requests per second; None while unpaced
    collisions: int  # 429s that were a new collision (not in-flight followers)
    paced_s: float  # seconds workers waited for their slot


class Pacer:
    """See the module docstring. ``acquire()`` before each request (then wait until the time it
    returns), ``answered(sent_at)`` after any answer but a 429, ``throttled(sent_at, retry_after)``
    after a 429."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 on_event: Callable[[str], None] | None = None) -> None:
        self._clock = clock
        self._on_event = on_event
        self._slow_start = False  # from the first 429 until a window is measured
        self._rate: float | None = None
        self._tat = float("-inf")  # the next free slot (GCRA's theoretical arrival time)
        self._started: float | None = None  # the first request
        self._window_start: float | None = None  # the last collision (None before the first)
        self._answered = 0  # answers since the window started (since the first request before it)
        self._increased_at = 0.0
        self._burst_s = BURST_S
        self._collisions = 0
        self._paced_s = 0.0
        self._banked = False  # the pacer was idle since the last collision (a burst was banked)
        self._ramp = 0  # answers since the pace last doubled (slow start)
        self._changed_at = float("-inf")  # the last change of the pace: slots reserved before are asked again

    @property
    def rate(self) -> float | None:
        return self._rate

    @property
    def burst_s(self) -> float:
        return self._burst_s

    def state(self) -> PacerState:
        return PacerState(self._rate, self._collisions, self._paced_s)

    def acquire(self) -> float:
        """Reserve this request's slot: the time it may be sent (now, or later when paced), for
        ``answered``/``throttled``."""
        now = self._clock()
        if self._started is None:
            self._started = now
        if self._rate is None:
            return now
        if now - self._tat >= BURST_S / 2:
            self._banked = True  # a pause: a burst built up
        if self._slow_start:  # no burst before a window has measured the rate
            slot = max(self._tat, now)
        else:
            if now - self._increased_at >= 1.0:  # additive increase, once a second at most
                seconds = min(now - self._increased_at, 10.0)
                quiet = max(1.0, now - (self._window_start or now))
                self._rate *= 1.0 + INCREASE * seconds * quiet
                self._increased_at = now
            slot = max(self._tat, now - self._burst_s)
        self._tat = slot + 1.0 / self._rate
        if slot > now:
            self._paced_s += slot - now
            return slot
        return now

    def changed_since(self, reserved_at: float) -> bool:
        """Whether the pace changed after ``reserved_at`` (a collision, or a slow start's doubling): a
        slot reserved before was given at a pace that no longer holds, and is asked for again
        (``ApiClient``)."""
        return self._changed_at > reserved_at

    def answered(self, sent_at: float) -> None:
        self._answered += 1
        if self._slow_start and self._rate is not None:
            self._ramp += 1
            if self._ramp >= self._rate * SLOW_START_S:  # a step's worth answered at this pace: double it
                self._rate *= 2.0
                self._ramp = 0
                self._changed_at = now = self._clock()
                self._tat = min(self._tat, now + 1.0 / self._rate)  # the slots waited for come sooner

    def throttled(self, sent_at: float, retry_after: float | None) -> None:
        """A 429 to a request sent at ``sent_at``, which asked to wait ``retry_after`` seconds."""
        now = self._clock()
        if self._window_start is not None and sent_at < self._window_start:
            return  # in flight when the collision was seen: the same collision
        self._collisions += 1
        if self._rate is not None and self._window_start is not None and self._banked and not self._slow_start \
                and self._answered <= self._rate * self._burst_s + 1:
            self._burst_s = max(1.0 / self._rate, self._burst_s / 2)
            self._window_start = self._changed_at = now
            self._increased_at = now + (retry_after or 0.0)
            self._tat = now + 1.0 / self._rate  # the bucket is empty: one slot's pause; earlier slots are asked again
            self._answered, self._banked = 0, False
            return
        if self._rate is not None and self._answered < MIN_SAMPLES:
            # a 429 soon after the last one: the bucket had not refilled at this pace. Too few answers to
            # measure anything: one slot's pause more, and the window goes on
            self._tat = max(self._tat, now + 1.0 / self._rate)
            return
        answered, self._answered = self._answered, 0
        self._banked = False
        slow_start, self._slow_start = self._slow_start, False
        if self._window_start is None:
            start = self._started if self._started is not None else now
            seconds = now - start + (retry_after if retry_after else 1.0)
        else:
            seconds = now - self._window_start
        self._window_start = self._changed_at = now
        if answered < MIN_SAMPLES or seconds <= 0:
            return  # nothing to learn from yet: the Retry-After pause alone
        before, measured = self._rate, answered / seconds
        if before is None or seconds >= TRUSTED_WINDOW_S:
            rate = HEADROOM * measured
        elif slow_start:  # the bucket sat full while the pace was under its rate: a lower bound; the pace
            # that collided was at most twice too fast
            rate = HEADROOM * max(measured, min(before / 2, 4 * measured))
        else:
            rate = HEADROOM * min(before, measured)
        self._rate = rate = max(MIN_RATE, rate)
        if before is None:  # the first rate is a lower bound: double it until a window measures one
            self._slow_start = True
            self._ramp = 0
        else:
            self._increased_at = now + (retry_after or 0.0)
        self._tat = now + 1.0 / rate  # the bucket is empty: one slot's pause; earlier slots are asked again
        if self._on_event is not None and (before is None or abs(rate - before) / before > 0.05):
            self._on_event(f"rate limited: pacing requests at {rate:.1f}/s "
                           f"({answered} answers in {seconds:.1f}s since the last 429)")
