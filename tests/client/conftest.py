"""Fixtures for the client tests: the fake clock, a scripted MockTransport and an ApiClient over
both (helpers in ``clienthelpers``)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from clienthelpers import BASE_URL, CANARY, FakeClock, Script

from reconciler.client.http import ApiClient


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def make_client(clock: FakeClock) -> Iterator[Callable[..., ApiClient]]:
    """``make_client(handler, **ApiClient kwargs)``: a client over MockTransport with the canary key,
    the fake clock and a seeded rng (``random.Random(7)``)."""
    made: list[ApiClient] = []

    def make(handler: Callable[[httpx.Request], httpx.Response], **kwargs: Any) -> ApiClient:
        http = httpx.AsyncClient(base_url=BASE_URL, transport=httpx.MockTransport(handler),
                            headers={"Authorization": f"Bearer {CANARY}"})
        kwargs.setdefault("sleep", clock.sleep)
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("rng", random.Random(7))
        client = ApiClient(http, **kwargs)
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()
