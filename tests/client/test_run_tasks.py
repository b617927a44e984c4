"""``run_tasks``: chains of reads on the event loop; follow-ups run, the first error stops new work,
a cancellation (Ctrl-C) cancels what runs."""

from __future__ import annotations

import asyncio

import pytest

from reconciler.client.live import Task, run_tasks


def test_every_task_and_every_follow_up_runs_once() -> None:
    ran: list[str] = []

    def leaf(name: str) -> Task:
        async def run() -> None:
            await asyncio.sleep(0)
            ran.append(name)
        return run

    def parent(name: str, children: int) -> Task:
        async def run() -> list[Task]:
            ran.append(name)
            return [leaf(f"{name}.{i}") for i in range(children)]
        return run

    asyncio.run(run_tasks([parent("a", 30), parent("b", 0), leaf("c")]))
    assert sorted(ran) == sorted(["a", "b", "c", *(f"a.{i}" for i in range(30))])
    asyncio.run(run_tasks([]))  # nothing to do returns at once


def test_the_first_error_is_raised_the_running_tasks_finish_and_no_follow_up_starts_after_it() -> None:
    events: list[str] = []

    async def failing() -> list[Task]:
        raise RuntimeError("list failed")

    async def child() -> None:
        events.append("child")

    async def slow_parent() -> list[Task]:
        await asyncio.sleep(0.01)  # still running when the failure comes
        events.append("parent finished")
        return [child]

    async def other_failure() -> None:
        await asyncio.sleep(0.02)
        raise ValueError("later")

    with pytest.raises(RuntimeError, match="list failed"):
        asyncio.run(run_tasks([failing, slow_parent, other_failure]))
    assert events == ["parent finished"]  # let finish, its follow-up not started


def test_a_cancelled_read_cancels_its_tasks_and_waits_for_them() -> None:
    events: list[str] = []

    async def endless() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise

    async def main() -> None:
        reading = asyncio.ensure_future(run_tasks([endless, endless]))
        await asyncio.sleep(0.01)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        assert events == ["cancelled", "cancelled"]  # both ended before the cancellation came out

    asyncio.run(main())


def test_a_cancelled_read_waits_for_a_task_that_takes_its_time_to_end() -> None:
    """A task may still have work to do once cancelled (a connection to give back): the
    cancellation comes out of the read only after every task has ended, not after the first."""
    events: list[str] = []
    started = asyncio.Event()

    async def quick() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append("quick ended")
            raise

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            for _ in range(5):
                await asyncio.sleep(0)
            events.append("slow ended")
            raise

    async def main() -> None:
        reading = asyncio.ensure_future(run_tasks([quick, slow]))
        await started.wait()
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        assert events == ["quick ended", "slow ended"]

    asyncio.run(main())
