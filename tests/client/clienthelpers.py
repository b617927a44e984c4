"""Helpers shared by the client tests: the canary key, a fake clock whose sleep advances it (so
waits are asserted, never slept), a scripted MockTransport handler and response builders."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from reconciler.client.http import ApiClient

#: A key value that must never appear in any output.
CANARY = "CANARY-sk-7f3e9b1d2c4a"
BASE_URL = "https://api.test.example"

Step = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def no_sleep(seconds: float) -> None:
    """A client's ``sleep`` that does not wait."""


def ran(client: ApiClient, call: Callable[[ApiClient], Awaitable[Any]]) -> Any:
    """``call(client)`` run to its end on the client's event loop."""
    return client.run(call(client))  # type: ignore[arg-type]


async def gathered(*calls: Awaitable[Any]) -> list[Any]:
    """Every call's answer, in order, the calls sent concurrently (``client.run(gathered(...))``)."""
    return list(await asyncio.gather(*calls))


def returning(*answers: Any) -> Callable[[], Awaitable[Any]]:
    """A ``recover`` that answers each of ``answers`` in turn (the last one again after), counting its calls."""
    left = list(answers)

    async def recover() -> Any:
        recover.calls += 1  # type: ignore[attr-defined]
        return left.pop(0) if len(left) > 1 else left[0]

    recover.calls = 0  # type: ignore[attr-defined]
    return recover


class Script:
    """Answers requests from a list of steps, in order (the last step repeats); records requests."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.requests: list[httpx.Request] = []

    def then(self, *steps: Step) -> Script:
        self.steps.extend(steps)
        return self

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        index = min(len(self.requests), len(self.steps)) - 1
        step = self.steps[index]
        if isinstance(step, Exception):
            raise step
        if isinstance(step, httpx.Response):
            return step
        return step(request)

    @property
    def methods(self) -> list[str]:
        return [r.method for r in self.requests]


def problem(status: int, title: str, detail: str | None = None, headers: dict[str, str] | None = None,
            **extra: Any) -> httpx.Response:
    body: dict[str, Any] = {"title": title, "status": status, "type": f"https://errors.example#{status}", **extra}
    if detail is not None:
        body["detail"] = detail
    return httpx.Response(status, json=body, headers={"content-type": "application/problem+json", **(headers or {})})


def ok(body: Any = None, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json=body if body is not None else {})
