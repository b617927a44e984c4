"""An httpx transport over the emulator's ASGI app, on the client's own event loop (``--emulator FILE``).

``httpx.ASGITransport`` does the ASGI work: each request is a call of the app on the loop that sends
it, so concurrent requests interleave exactly as they would in a server, with no socket, no port and
no thread. What this adds to it:

- An exception out of the app (the emulator's fault injection resets connections by failing the
  exchange) reaches the client as ``httpx.RemoteProtocolError``, as a dropped connection would.
- The read timeout of the request applies while waiting for the app (``httpx.ReadTimeout``).
- The answer is read whole, and the framing headers that described the raw bytes are dropped.
- ``aclose()`` closes the emulator's store (``on_close``); a closed transport refuses requests as a
  closed port would (``httpx.ConnectError``).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from reconciler.errors import ConfigError


class InProcessTransport(httpx.AsyncBaseTransport):
    def __init__(self, app: Any, *, on_close: Callable[[], None] | None = None) -> None:
        self._asgi = httpx.ASGITransport(app=app, raise_app_exceptions=True, client=("127.0.0.1", 0))
        self._on_close = on_close
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise httpx.ConnectError("the in-process emulator is closed", request=request)
        timeout = request.extensions.get("timeout", {}).get("read")
        try:
            status, headers, body = await asyncio.wait_for(self._send(request), timeout)
        except TimeoutError:
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

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
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
