"""The emulator's outermost ASGI layer: request statistics, a per-key rate limit and seeded fault
injection. It exists so clients can be tested against the failures a real service produces
(429 with ``Retry-After``, 5xx, dropped connections, writes that committed but answered 5xx).

Every request passes three stages, in this order:

1. **Stats.** Each request is counted as ``"METHOD /route/template"`` (the template of the app's
   route that matches, path parameters named as the route modules name them; the raw path when no
   route matches). A request is counted on arrival, so one later answered 429 or hit by a fault is
   counted too. ``GET /_emulator/stats`` returns ``{"requests": {...}}`` and
   ``POST /_emulator/reset-stats`` clears the counts (204); these two are not counted, not rate
   limited and not faulted. ``POST /_emulator/faults`` with
   ``{"route": "POST /v2/prompts", "status": 500, "times": 1}`` makes the next ``times`` requests of
   that route (the stats key) fail with that status without being processed (a targeted fault for
   end-to-end tests); ``DELETE /_emulator/faults`` clears them. Every ``/_emulator/*`` endpoint
   needs the admin key (401 without a valid key, 403 with another one): any local process, or a web
   page a browser on the same machine opens, could otherwise inject faults or read the counts.
2. **Rate limit** (``settings.rate_limit`` requests per second; ``None`` turns it off). One token
   bucket per bearer key (requests without one share a bucket per client address). The bucket
   holds ``settings.rate_burst`` tokens (default ``max(1, rate)``: a second's worth), starts full
   and refills continuously. A request that finds it
   empty is answered 429 with an honest ``Retry-After``: the whole seconds until one token is
   back, so waiting that long lets the next request through (a rejected request takes no token).
   ``/v2/openapi.json`` is exempt.
3. **Faults** (``settings.faults``, see :class:`FaultSpec`). One seeded ``random.Random`` is drawn
   in request arrival order, so the same requests in the same order meet the same faults. Faults
   apply to ``/v2`` requests except ``/v2/openapi.json``, and not to a request carrying
   ``X-Emulator-No-Faults: 1`` (for tests that set up data); such requests draw nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import random
import re
import socket
import struct
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.emulator.core import Emulator, Problem, problem_response

CONTROL_PREFIX = "/_emulator/"
STATS_PATH = "/_emulator/stats"
RESET_STATS_PATH = "/_emulator/reset-stats"
TARGETED_FAULTS_PATH = "/_emulator/faults"
OPENAPI_PATH = "/v2/openapi.json"
NO_FAULTS_HEADER = "x-emulator-no-faults"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


# ---------------------------------------------------------------- request statistics


class RequestStats:
    """Request counts keyed by ``"METHOD /route/template"``; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def count(self, key: str) -> None:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._counts.items()))

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()


_STATS: weakref.WeakKeyDictionary[Emulator, RequestStats] = weakref.WeakKeyDictionary()
_STATS_LOCK = threading.Lock()


def request_stats(emu: Emulator) -> RequestStats:
    """The counts of one emulator (shared by every app built over it)."""
    with _STATS_LOCK:
        stats = _STATS.get(emu)
        if stats is None:
            stats = _STATS[emu] = RequestStats()
        return stats


_CONVERTOR = re.compile(r"\{(\w+):\w+\}")


def route_template(routes: Iterable[Any], scope: Scope) -> str | None:
    """The path template of the route that would serve ``scope``, like the router chooses it:
    the first full match, else the first path-only match (wrong method). Mounts are followed."""
    partial: str | None = None
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.NONE:
            continue
        template = _CONVERTOR.sub(r"{\1}", str(getattr(route, "path", "")))
        sub_routes = getattr(route, "routes", None)
        if sub_routes:
            inner = route_template(sub_routes, {**scope, **child})
            if inner is None:
                continue
            template += inner
        if match is Match.FULL:
            return template
        partial = partial or template
    return partial


def find_routes(app: Any) -> list[Any]:
    """The routes of the router inside ``app``: a Starlette app or router has ``.routes``;
    middleware is followed through its ``.app``. Empty when there is none (raw paths are counted)."""
    for _ in range(32):
        routes = getattr(app, "routes", None)
        if isinstance(routes, list):
            return routes  # the live list, so routes added later are seen
        app = getattr(app, "app", None)
        if app is None:
            break
    return []


# ---------------------------------------------------------------- rate limit


class RateLimiter:
    """Token buckets per key: ``capacity`` tokens (default ``max(1, rate)``: a second's worth),
    refilled at ``rate`` tokens a second."""

    MAX_IDLE_BUCKETS = 4096

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic, *,
                 capacity: float | None = None) -> None:
        if not rate > 0 or math.isinf(rate):
            raise ValueError(f"rate_limit must be a positive number of requests per second, got {rate}")
        if capacity is not None and not 1.0 <= capacity < math.inf:
            raise ValueError(f"rate_burst must be a number of requests of at least 1, got {capacity}")
        self.rate = float(rate)
        self.capacity = max(1.0, self.rate) if capacity is None else float(capacity)
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)

    def _forget_full_buckets(self, now: float) -> None:
        """A full bucket is the same as none: drop them so many one-off keys cannot grow memory."""
        self._buckets = {k: (t, at) for k, (t, at) in self._buckets.items()
                         if t + (now - at) * self.rate < self.capacity}

    def acquire(self, key: str) -> int | None:
        """Take a token: None when granted, else the honest Retry-After in whole seconds."""
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.rate)
            if len(self._buckets) > self.MAX_IDLE_BUCKETS:
                self._forget_full_buckets(now)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return None
            self._buckets[key] = (tokens, now)
            return max(0, math.ceil((1.0 - tokens) / self.rate))


def rate_limit_key(scope: Scope) -> str:
    """The bucket a request draws from: a digest of its bearer key (the key itself is never kept),
    else its client address."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return "key:" + hashlib.sha256(token.strip().encode()).hexdigest()
    client = scope.get("client") or ("unknown", 0)
    return f"client:{client[0]}"


# ---------------------------------------------------------------- faults


@dataclass(frozen=True)
class FaultSpec:
    """Parsed ``--faults`` spec: ``seed=7,error_rate=0.05,reset_rate=0.02,latency_ms=20,
    commit_then_fail_rate=0.05``; every key is optional (seed defaults to 0, the rest to off).

    - ``latency_ms``: added to every faultable request before it is handled.
    - ``error_rate``: answer 500 or 503 (problem+json) without handling the request.
    - ``reset_rate``: drop the connection without any response (a TCP reset).
    - ``commit_then_fail_rate``: writes only (POST, PUT, PATCH, DELETE): handle the request, so the
      write is committed, then discard its response and answer 500 or 503 instead.

    One uniform draw per request picks the outcome, so the rates must add up to at most 1.
    """

    seed: int = 0
    error_rate: float = 0.0
    reset_rate: float = 0.0
    latency_ms: float = 0.0
    commit_then_fail_rate: float = 0.0

    @classmethod
    def parse(cls, text: str | None) -> FaultSpec:
        known = [f.name for f in fields(cls)]
        values: dict[str, Any] = {}
        for item in (text or "").split(","):
            if not item.strip():
                continue
            key, sep, raw = (part.strip() for part in item.partition("="))
            if not sep or not key or not raw:
                raise ValueError(f"fault spec: expected KEY=VALUE, got {item.strip()!r}")
            if key not in known:
                raise ValueError(f"fault spec: unknown key {key!r}; known keys: {', '.join(known)}")
            if key in values:
                raise ValueError(f"fault spec: {key!r} given twice")
            try:
                values[key] = int(raw) if key == "seed" else float(raw)
            except ValueError:
                kind = "an integer" if key == "seed" else "a number"
                raise ValueError(f"fault spec: {key} must be {kind}, got {raw!r}") from None
        spec = cls(**values)
        spec._validate()
        return spec

    def _validate(self) -> None:
        for name in ("error_rate", "reset_rate", "commit_then_fail_rate"):
            rate = getattr(self, name)
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"fault spec: {name} must be between 0 and 1, got {rate}")
        if self.error_rate + self.reset_rate + self.commit_then_fail_rate > 1.0:
            raise ValueError("fault spec: error_rate + reset_rate + commit_then_fail_rate must not exceed 1")
        if not 0.0 <= self.latency_ms < math.inf:
            raise ValueError(f"fault spec: latency_ms must be a non-negative number, got {self.latency_ms}")

    @property
    def active(self) -> bool:
        return any((self.error_rate, self.reset_rate, self.latency_ms, self.commit_then_fail_rate))


class FaultKind(Enum):
    NONE = "none"
    ERROR = "error"
    RESET = "reset"
    COMMIT_THEN_FAIL = "commit_then_fail"


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    status: int  # the 5xx answered for ERROR and COMMIT_THEN_FAIL


class FaultInjector:
    """Draws the fault for each faultable request from one seeded generator, in arrival order.
    Every request draws the same two numbers whatever its outcome, so one request's method does not
    shift the faults of the requests after it."""

    def __init__(self, spec: FaultSpec) -> None:
        self.spec = spec
        self._rng = random.Random(spec.seed)
        self._lock = threading.Lock()

    def draw(self, method: str) -> Fault:
        with self._lock:
            roll, coin = self._rng.random(), self._rng.random()
        status = 500 if coin < 0.5 else 503
        spec = self.spec
        if roll < spec.reset_rate:
            return Fault(FaultKind.RESET, status)
        if roll < spec.reset_rate + spec.error_rate:
            return Fault(FaultKind.ERROR, status)
        if method in WRITE_METHODS and roll < spec.reset_rate + spec.error_rate + spec.commit_then_fail_rate:
            return Fault(FaultKind.COMMIT_THEN_FAIL, status)
        return Fault(FaultKind.NONE, status)


class ConnectionDropped(RuntimeError):
    """Raised instead of a connection reset when the server gives no socket to reset (an in-process
    ASGI transport): the client sees an exception instead of a response."""


async def drop_connection(send: Send) -> None:
    """Close the client's connection abruptly, with no response: a TCP reset (SO_LINGER 0).

    ASGI has no message for this, and uvicorn answers 500 when an app raises before responding,
    so this reaches uvicorn's transport through its ``send`` callable (``RequestResponseCycle``).
    """
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None or not hasattr(transport, "abort"):
        raise ConnectionDropped("injected fault: connection reset")
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
    # Let the server see the connection go, so it does not log an app that never answered.
    for _ in range(10):
        if getattr(cycle, "disconnected", True):
            break
        await asyncio.sleep(0)


async def _discard(message: Message) -> None:
    return None


# ---------------------------------------------------------------- the middleware


def _is_api_path(path: str) -> bool:
    return path == "/v2" or path.startswith("/v2/")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class EmulatorMiddleware:
    """Pure ASGI middleware (no response buffering, works for any inner app)."""

    def __init__(self, app: ASGIApp, emu: Emulator) -> None:
        self.app = app
        self.emu = emu
        self.stats = request_stats(emu)
        rate = emu.settings.rate_limit
        self.limiter = RateLimiter(rate, capacity=emu.settings.rate_burst) if rate is not None else None
        spec = FaultSpec.parse(emu.settings.faults)
        self.faults = FaultInjector(spec) if spec.active else None
        self.routes = find_routes(app)
        self.targeted: dict[str, list[int]] = {}  # route key -> [status, remaining]
        self.targeted_lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if path.startswith(CONTROL_PREFIX) and (refused := self._control_refusal(scope)) is not None:
            await self._problem(refused)(scope, receive, send)
            return
        if path in (STATS_PATH, RESET_STATS_PATH):
            await self._own_endpoint(path, method)(scope, receive, send)
            return
        if path == TARGETED_FAULTS_PATH:
            await self._targeted_endpoint(method, receive)(scope, receive, send)
            return

        route_key = f"{method} {route_template(self.routes, scope) or path}"
        self.stats.count(route_key)
        targeted = self._take_targeted(route_key)
        if targeted is not None:
            await self._problem(Problem(targeted, "injected fault (targeted): the request was not processed"))(
                scope, receive, send)
            return

        if self.limiter is not None and path != OPENAPI_PATH:
            retry_after = self.limiter.acquire(rate_limit_key(scope))
            if retry_after is not None:
                problem = Problem(429, "too many requests for this API key",
                                  headers={"Retry-After": str(retry_after)})
                await self._problem(problem)(scope, receive, send)
                return

        if self.faults is None or path == OPENAPI_PATH or not _is_api_path(path) \
                or _header(scope, NO_FAULTS_HEADER.encode()) == "1":
            await self.app(scope, receive, send)
            return
        fault = self.faults.draw(method)
        if self.faults.spec.latency_ms:
            await asyncio.sleep(self.faults.spec.latency_ms / 1000)
        await self._with_fault(fault, scope, receive, send)

    async def _with_fault(self, fault: Fault, scope: Scope, receive: Receive, send: Send) -> None:
        if fault.kind is FaultKind.NONE:
            await self.app(scope, receive, send)
        elif fault.kind is FaultKind.RESET:
            await drop_connection(send)
        elif fault.kind is FaultKind.ERROR:
            problem = Problem(fault.status, "injected fault: the request was not processed")
            await self._problem(problem)(scope, receive, send)
        else:
            await self.app(scope, receive, _discard)
            problem = Problem(fault.status, "injected fault: the request was processed but its response was lost")
            await self._problem(problem)(scope, receive, send)

    def _control_refusal(self, scope: Scope) -> Problem | None:
        """Why a request to a control endpoint is refused (None: it carries the admin key)."""
        header = _header(scope, b"authorization") or ""
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return Problem(401, "the emulator's control endpoints need the admin key")
        if hmac.compare_digest(token.encode(), self.emu.settings.admin_key.encode()):
            return None
        known = token == self.emu.settings.reader_key or token in self.emu.settings.space_keys
        return Problem(403 if known else 401, "the emulator's control endpoints need the admin key")

    def _own_endpoint(self, path: str, method: str) -> Response:
        if path == STATS_PATH and method in ("GET", "HEAD"):
            return Response(json.dumps({"requests": self.stats.snapshot()}), media_type="application/json")
        if path == RESET_STATS_PATH and method == "POST":
            self.stats.reset()
            return Response(status_code=204)
        allow = "GET, HEAD" if path == STATS_PATH else "POST"
        return self._problem(Problem(405, f"{path} allows {allow}", headers={"Allow": allow}))

    def _take_targeted(self, route_key: str) -> int | None:
        with self.targeted_lock:
            entry = self.targeted.get(route_key)
            if entry is None or entry[1] <= 0:
                return None
            entry[1] -= 1
            return entry[0]

    async def _read_body(self, receive: Receive) -> bytes:
        body = b""
        while True:
            message = await receive()
            body += bytes(message.get("body", b""))
            if not message.get("more_body"):
                return body

    def _targeted_endpoint(self, method: str, receive: Receive) -> ASGIApp:
        async def app(scope: Scope, _receive: Receive, send: Send) -> None:
            if method == "DELETE":
                with self.targeted_lock:
                    self.targeted.clear()
                await Response(status_code=204)(scope, receive, send)
                return
            if method != "POST":
                await self._problem(Problem(405, f"{TARGETED_FAULTS_PATH} allows POST, DELETE",
                                            headers={"Allow": "POST, DELETE"}))(scope, receive, send)
                return
            try:
                spec = json.loads(await self._read_body(receive))
                route, status, times = str(spec["route"]), int(spec.get("status", 500)), int(spec.get("times", 1))
            except (ValueError, KeyError, TypeError):
                await self._problem(Problem(400, 'expected {"route": "METHOD /v2/...", "status": 500, "times": 1}'))(
                    scope, receive, send)
                return
            with self.targeted_lock:
                self.targeted[route] = [status, times]
            await Response(status_code=204)(scope, receive, send)

        return app

    def _problem(self, problem: Problem) -> Response:
        return problem_response(problem, self.emu.settings.errors_url)


def wrap(app: ASGIApp, emu: Emulator) -> ASGIApp:
    """``app`` behind the emulator's stats, rate limit and faults (see the module docstring).
    Raises ValueError for a bad ``settings.faults`` spec or a non-positive ``settings.rate_limit``."""
    return EmulatorMiddleware(app, emu)


def request_counts(emu: Emulator) -> Mapping[str, int]:
    """The current request counts of ``emu`` (what ``GET /_emulator/stats`` returns)."""
    return request_stats(emu).snapshot()
