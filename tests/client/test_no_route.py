""""No route to host" names the host and is not retried: it ends within one connect attempt (bounded
by the connect timeout), like a DNS failure. Built from the exception httpx raises; no traffic."""

from __future__ import annotations

import errno
from collections.abc import Callable

import httpx
import pytest
from clienthelpers import ran

from reconciler.client.http import ApiClient, connect_cause
from reconciler.errors import TransportError
from tests.client.conftest import FakeClock, Script


def no_route() -> httpx.ConnectError:
    error = httpx.ConnectError("[Errno 113] No route to host")
    error.__cause__ = OSError(errno.EHOSTUNREACH, "No route to host")
    return error


def test_no_route_to_host_names_the_host_and_is_final() -> None:
    message, final = connect_cause(no_route(), httpx.URL("https://api.example.test:8443"))
    assert message.startswith("cannot reach api.example.test:8443: no route to host") and final


def test_no_route_to_host_is_one_attempt_and_no_wait(make_client: Callable[..., ApiClient], script: Script,
                                                     clock: FakeClock) -> None:
    script.then(no_route())
    events: list[str] = []
    with pytest.raises(TransportError) as info:
        ran(make_client(script, max_retries=6, on_event=events.append), lambda c: c.get("/v2/x"))
    assert len(script.requests) == 1 and clock.sleeps == [] and events == []
    assert str(info.value).startswith("GET /v2/x: cannot reach api.test.example: no route to host")
