"""Shared fixtures: the emulator over a real socket (uvicorn in a thread on a free port) and
in-process (httpx over the ASGI app)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import httpx
import pytest
import uvicorn
from hypothesis import settings

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings

#: No property test has a deadline: speed is measured in benchmarks/, never asserted by a test (hypothesis's
#: default of 200 ms an example failed a test of examples chunks once on a loaded machine).
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

ADMIN = "admin-key"
READER = "reader-key"
#: The headers of a call to the emulator's control endpoints (/_emulator/*): they need the admin key.
EMULATOR_ADMIN = {"Authorization": f"Bearer {ADMIN}"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``MUTATION_TESTS`` (paths joined by ``os.pathsep``; set by ``python -m tests.mutation_report
    --tests``): only the tests under those paths run, a module's own tests for a quick mutation run."""
    narrowed = os.environ.get("MUTATION_TESTS")
    if not narrowed:
        return
    kept = tuple(narrowed.split(os.pathsep))
    dropped = [item for item in items if not item.nodeid.startswith(kept)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid.startswith(kept)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_emulator(settings: EmulatorSettings | None = None, *, wrap: Callable[[Any], Any] | None = None,
                     log_level: str = "warning", tls: tuple[str, str] | None = None,
                     **overrides: Any) -> Iterator[tuple[str, Emulator]]:
    """Serve a fresh emulator with uvicorn on a free loopback port; yields (base_url, emulator).
    ``wrap`` puts an ASGI layer of the test's own around the app (a wire recorder); ``tls``
    (certificate file, key file) serves https on ``localhost`` instead of http."""
    settings = replace(settings or EmulatorSettings(), port=free_port(), **overrides)
    emu = Emulator(settings)
    app = create_app(emu)
    ssl = {"ssl_certfile": tls[0], "ssl_keyfile": tls[1]} if tls else {}
    config = uvicorn.Config(wrap(app) if wrap else app, host="127.0.0.1", port=settings.port, log_level=log_level,
                            lifespan="off", **ssl)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the emulator did not start")
        time.sleep(0.01)
    try:
        yield (f"https://localhost:{settings.port}" if tls else f"http://127.0.0.1:{settings.port}"), emu
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        emu.store.close()


@pytest.fixture
def emulator_factory() -> Iterator[Callable[..., tuple[str, Emulator]]]:
    """Start as many emulators as a test needs: ``url, emu = emulator_factory(rate_limit=5)``."""
    stack: list[Any] = []

    def start(**overrides: Any) -> tuple[str, Emulator]:
        cm = running_emulator(**overrides)
        stack.append(cm)
        return cm.__enter__()

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


@pytest.fixture
def server(emulator_factory: Callable[..., tuple[str, Emulator]]) -> tuple[str, Emulator]:
    """A fresh in-memory emulator over a real socket."""
    return emulator_factory()


@pytest.fixture
def api(server: tuple[str, Emulator]) -> Iterator[httpx.Client]:
    """An httpx client with the admin key, over the real socket."""
    with httpx.Client(base_url=server[0], headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10) as c:
        yield c


@pytest.fixture
def reader(server: tuple[str, Emulator]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server[0], headers={"Authorization": f"Bearer {READER}"}, timeout=10) as c:
        yield c


@pytest.fixture
def inproc() -> Iterator[httpx.Client]:
    """An admin client over the ASGI app in-process (no socket)."""
    from starlette.testclient import TestClient

    emu = Emulator(EmulatorSettings())
    with TestClient(create_app(emu), base_url="http://testserver",
                    headers={"Authorization": f"Bearer {ADMIN}"}) as c:
        yield c
    emu.store.close()


@pytest.fixture(scope="session")
def shared_server() -> Iterator[tuple[str, Emulator]]:
    """One socket emulator for the whole session (starting uvicorn per test is the slow part).
    Tests on it must tolerate other tests' data: unique names, filters by name."""
    with running_emulator() as served:
        yield served


@pytest.fixture(scope="session")
def shared_clients(shared_server: tuple[str, Emulator]) -> Iterator[dict[str, httpx.Client]]:
    """Admin clients for the session, reused because building one (its TLS context) costs more
    than most tests: over the socket of ``shared_server``, and in-process over its own emulator."""
    from starlette.testclient import TestClient

    emu = Emulator(EmulatorSettings())
    with httpx.Client(base_url=shared_server[0], headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10) as api, \
            TestClient(create_app(emu), base_url="http://testserver",
                       headers={"Authorization": f"Bearer {ADMIN}"}) as inproc:
        yield {"socket": api, "inproc": inproc}
    emu.store.close()


@pytest.fixture(params=["socket", "inproc"])
def client(request: pytest.FixtureRequest, shared_clients: dict[str, httpx.Client]) -> httpx.Client:
    """An admin client, once over a real socket and once in-process: a test that takes it runs both
    ways. Both emulators are shared by the session, so a test must not assume an empty emulator
    (use unique names and filter by them). Send another key per request:
    ``headers={"Authorization": "Bearer reader-key"}``."""
    return shared_clients[request.param]
