"""The adaptive in-flight limit: how many requests the client keeps on the wire at once.

``--parallelism N`` is the ceiling, and where the limit starts. After every answer the limit moves
as the gradient limiters of Netflix's concurrency-limits do:

- **The round-trip time against its baseline.** The baseline is the shortest round trip seen
  lately (``baseline``: the minimum, which drifts up by ``BASELINE_DRIFT`` per answer so that a
  slower service is taken as the new normal). ``gradient = clamp(TOLERANCE * baseline / rtt, 0.5,
  1)``: 1 while the round trip stays flat, less when requests start to queue at the service.
- **A new limit of ``limit * gradient + sqrt(limit)``** (room to grow while flat), smoothed
  (``SMOOTHING``), kept between 1 and the ceiling. It only grows while the limit is in use (at
  least half of it in flight): a client that sends few requests learns nothing about more.
- **A 429 or a 5xx** (the service says it is overloaded) multiplies the limit by ``BACKOFF``.

One event loop owns the limit: no lock. ``acquire()`` waits for a slot, in arrival order;
``release(rtt, overloaded=...)`` gives it back with what the exchange measured.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque

#: A round trip up to this many times the baseline still counts as flat.
TOLERANCE = 1.5
#: How much of the new limit each answer moves the limit by.
SMOOTHING = 0.2
#: The limit after a 429 or a 5xx, as a fraction of what it was.
BACKOFF = 0.9
#: The baseline creeps up by this fraction per answer (so it follows a service that got slower).
BASELINE_DRIFT = 0.001


class AdaptiveLimit:
    """See the module docstring."""

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError("the limit's ceiling must be at least 1")
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.in_flight = 0
        self.baseline = math.inf
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def slots(self) -> int:
        """Requests allowed on the wire now (the limit, rounded down, at least 1)."""
        return max(1, int(self.limit))

    async def acquire(self) -> None:
        """Take a slot, waiting (first come, first served) while every slot is taken."""
        if self.in_flight < self.slots and not self._waiters:
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # the slot is counted for this waiter when it is woken (``_wake``)
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # woken, then cancelled: give the slot on
                self.in_flight -= 1
                self._wake()
            elif waiter in self._waiters:  # not yet passed over by ``_wake``
                self._waiters.remove(waiter)
            raise

    def release(self, rtt: float | None = None, *, overloaded: bool = False) -> None:
        """Give a slot back. ``rtt``: the exchange's round trip in seconds (None: no answer, nothing
        learnt); ``overloaded``: the answer was a 429 or a 5xx."""
        in_use = self.in_flight
        self.in_flight -= 1
        if overloaded:
            self.limit = max(1.0, self.limit * BACKOFF)
        elif rtt is not None and rtt > 0:
            self._learn(rtt, in_use)
        self._wake()

    def _learn(self, rtt: float, in_use: int) -> None:
        self.baseline = min(rtt, self.baseline * (1 + BASELINE_DRIFT))
        gradient = max(0.5, min(1.0, TOLERANCE * self.baseline / rtt))
        target = self.limit * gradient + math.sqrt(self.limit)
        if target > self.limit and in_use < self.limit / 2:
            return  # not using the limit: no evidence that more would help
        moved = self.limit * (1 - SMOOTHING) + target * SMOOTHING
        self.limit = max(1.0, min(float(self.ceiling), moved))

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.slots:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)
