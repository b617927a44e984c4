"""A synchronous httpx transport over an ASGI app running in this process (``--emulator FILE``).

Why not ``starlette.testclient.TestClient``: without its context manager it starts a new event
loop thread for every request, and with it all requests share one portal whose use from many
threads at once is not its design goal. Why not uvicorn on a loopback port: a socket, a port and a
server thread to manage for every CLI run. Instead, one private event loop runs forever on a
daemon thread and every request, from any thread, is submitted to it with
``asyncio.run_coroutine_threadsafe``; ``httpx.ASGITransport`` does the ASGI work. That is safe under
``ApiClient.map`` parallelism (concurrent requests interleave on the loop exactly as they would
in a server), and there is no socket to leak.

An exception out of the app (the emulator's fault injection resets connections by failing the
exchange) reaches the client as ``httpx.RemoteProtocolError``, as a dropped connection would.
The read timeout of the request applies while waiting for the app (``httpx.ReadTimeout``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from reconciler.errors import ConfigError


class InProcessTransport(httpx.BaseTransport):
    def __init__(self, app: Any, *, on_close: Callable[[], None] | None = None) -> None:
        self._asgi = httpx.ASGITransport(app=app, raise_app_exceptions=True, client=("127.0.0.1", 0))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="reconciler-inprocess", daemon=True)
        self._thread.start()
        self._on_close = on_close
        self._closed = False
        self._close_lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise httpx.ConnectError("the in-process emulator is closed", request=request)
        content = request.read()
        inner = httpx.Request(request.method, request.url, headers=request.headers, content=content)
        future = asyncio.run_coroutine_threadsafe(self._send(inner), self._loop)
        timeout = request.extensions.get("timeout", {}).get("read")
        try:
            status, headers, body = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise httpx.ReadTimeout("the in-process emulator did not answer in time", request=request) from None
        except httpx.HTTPError:
            raise
        except Exception as exc:
            raise httpx.RemoteProtocolError(
                f"the in-process emulator dropped the request ({type(exc).__name__})", request=request
            ) from exc
        return httpx.Response(status, headers=headers, content=body, request=request)

    async def _send(self, request: httpx.Request) -> tuple[int, list[tuple[str, str]], bytes]:
        response = await self._asgi.handle_async_request(request)
        body = await response.aread()  # decoded: drop the framing headers that described the raw bytes
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return response.status_code, headers, body

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        if self._on_close is not None:
            self._on_close()


def emulator_transport(db: str) -> InProcessTransport:
    """The emulator persisted in the SQLite file ``db``, served in-process; the spaces named in
    ``RECONCILER_EMULATOR_SPACES`` (comma-separated) are created when missing."""
    from reconciler.emulator import server_stack

    with server_stack("--emulator"):
        from reconciler.emulator.app import create_app
        from reconciler.emulator.core import Emulator, EmulatorSettings
    spaces = tuple(n.strip() for n in os.environ.get("RECONCILER_EMULATOR_SPACES", "").split(",") if n.strip())
    try:
        Path(db).parent.mkdir(parents=True, exist_ok=True)  # --emulator DIR/state.db: DIR is made
        emu = Emulator(EmulatorSettings(db=db, spaces=spaces))
    except OSError as exc:
        raise ConfigError(f"--emulator {db}: cannot create its directory ({exc.strerror or exc})") from None
    except sqlite3.Error as exc:
        raise ConfigError(f"--emulator {db}: cannot open the emulator's SQLite file ({exc})") from None
    return InProcessTransport(create_app(emu), on_close=emu.store.close)
