"""One way to send requests: a plan and an apply run on the client's event loop, in the calling
thread, over a real socket and over the in-process emulator; no thread is started for them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.client.http import Exchange
from reconciler.workflow import Connection, confirm_converged, connect, load, plan_against, run_apply

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def quickstart(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("VENDOR_A_KEY", "demo-vendor-a-key")
    monkeypatch.setenv("AGENT_TOKEN", "demo-agent-token")
    monkeypatch.setenv("RECONCILER_API_KEY", "admin-key")
    yield load([str(ROOT / "manifests")])


@pytest.mark.parametrize("where", ["socket", "socket by name", "in-process"])
def test_a_plan_and_an_apply_start_no_thread_and_send_from_the_calling_one(
        where: str, quickstart: Any, server: tuple[str, Any], tmp_path: Path) -> None:
    from reconciler.plan.model import PlanOptions

    url = server[0] if where == "socket" else server[0].replace("127.0.0.1", "localhost")  # a name to resolve
    conn = Connection(emulator=str(tmp_path / "s.db")) if where == "in-process" else Connection(base_url=url)
    before = set(threading.enumerate())  # pytest's, xdist's and the socket emulator's own
    seen: list[tuple[set[threading.Thread], threading.Thread]] = []

    def look(exchange: Exchange) -> None:  # told on the loop, as each answer arrives
        seen.append((set(threading.enumerate()), threading.current_thread()))

    with connect(conn) as client:
        client.observers.append(look)
        live, plan = plan_against(quickstart, client, PlanOptions())
        planned = len(seen)
        report = run_apply(plan, client, parallelism=10, fail_fast=False, live=live)
        again = confirm_converged(quickstart, client, plan, live, report)
    assert report.ok and again.empty and not plan.empty
    assert planned > 5 and len(seen) > planned  # the plan's reads, then the writes and the re-read
    assert all(threads <= before for threads, _ in seen), {t.name for threads, _ in seen for t in threads - before}
    assert {current for _, current in seen} == {threading.current_thread()}
    assert set(threading.enumerate()) <= before


def test_accounts_planned_together_share_the_calling_thread_and_overlap(
        quickstart: Any, emulator_factory: Any) -> None:
    """``plan --all``: two accounts read at once on one event loop, no thread started for them.
    Account a answers nothing until b has been asked something (for 5 s at most): read one after
    the other, a's first request would wait those 5 s."""
    from reconciler.environments import Target, plan_all
    from reconciler.plan.model import PlanOptions

    b_asked = threading.Event()
    a_gave_up: list[str] = []

    def wait_for_b(app: Any) -> Any:
        async def gated(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and not b_asked.is_set():
                for _ in range(1000):
                    if b_asked.is_set():
                        break
                    await asyncio.sleep(0.005)
                else:
                    a_gave_up.append(scope["path"])
            await app(scope, receive, send)
        return gated

    def tell_a(app: Any) -> Any:
        async def telling(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                b_asked.set()
            await app(scope, receive, send)
        return telling

    urls = {"a": emulator_factory(wrap=wait_for_b)[0], "b": emulator_factory(wrap=tell_a)[0]}
    chosen = [Target(name, ("manifests",), (), (), Connection(base_url=url), (url, "RECONCILER_API_KEY"))
              for name, url in urls.items()]
    before = set(threading.enumerate())
    seen: list[tuple[str, set[threading.Thread], threading.Thread]] = []

    def connect_observed(conn: Connection, runner: Any) -> Any:
        client = connect(conn, runner=runner)
        name = next(n for n, url in urls.items() if url == conn.base_url)
        client.observers.append(lambda exchange: seen.append(
            (name, set(threading.enumerate()), threading.current_thread())))
        return client

    results = plan_all(chosen, {"a": quickstart, "b": quickstart}, {"a": PlanOptions(), "b": PlanOptions()},
                       connect_observed)
    assert all(r.plan is not None and not r.plan.empty for r in results.values()), results
    assert not a_gave_up, "b was asked nothing while a waited: the accounts were read one after the other"
    assert {name for name, _, _ in seen} == {"a", "b"}
    assert all(threads <= before for _, threads, _ in seen)
    assert {current for _, _, current in seen} == {threading.current_thread()}
    assert set(threading.enumerate()) <= before
