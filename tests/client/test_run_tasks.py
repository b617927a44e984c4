"""``run_tasks``: chains of reads on one pool; follow-ups run, the first error stops new work."""

from __future__ import annotations

import threading

import pytest

from reconciler.client.live import Task, run_tasks


def test_every_task_and_every_follow_up_runs_once() -> None:
    ran: list[str] = []
    lock = threading.Lock()

    def leaf(name: str) -> Task:
        def run() -> None:
            with lock:
                ran.append(name)
        return run

    def parent(name: str, children: int) -> Task:
        def run() -> list[Task]:
            with lock:
                ran.append(name)
            return [leaf(f"{name}.{i}") for i in range(children)]
        return run

    run_tasks([parent("a", 30), parent("b", 0), leaf("c")], parallelism=4)
    assert sorted(ran) == sorted(["a", "b", "c", *(f"a.{i}" for i in range(30))])
    run_tasks([], parallelism=4)  # nothing to do returns at once


def test_the_first_error_is_raised_and_no_follow_up_starts_after_it() -> None:
    started: list[str] = []

    def failing() -> list[Task]:
        raise RuntimeError("list failed")

    def parent() -> list[Task]:
        started.append("parent")
        return [lambda: started.append("child") or None]

    with pytest.raises(RuntimeError, match="list failed"):
        run_tasks([failing], parallelism=1)
    # with one thread the failing task runs first: its sibling still runs, its follow-up does not
    with pytest.raises(RuntimeError, match="list failed"):
        run_tasks([failing, parent], parallelism=1)
    assert started == ["parent"]
