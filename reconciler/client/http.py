"""The reconciler's one way to the service: an ``ApiClient`` over an injected ``httpx.AsyncClient``,
its requests sent from one asyncio event loop (``ApiClient.run``), never from threads.

What it guarantees, whatever the transport (``MockTransport`` in unit tests, the emulator app
in-process, a real socket):

- **Errors are ours.** A non-2xx answer becomes ``ProblemError`` (status, title, detail, type,
  method and path; never headers, never the key); a transport failure becomes ``TransportError``
  once retries are spent. No httpx exception escapes.
- **429** waits ``Retry-After`` (capped at ``max_retry_after``; a capped wait is reported), then
  retries, for every method: a throttled request was not processed. Until the pacer has learnt a
  rate the wait is shared: every request of this client pauses until it has passed. From then on
  every request takes a slot from one shared budget whose rate is learnt from the 429s
  (``pacing.Pacer``), so the limit is used, not hit, and only the throttled request waits its
  ``Retry-After`` (the others keep to the pace: a bucket smaller than a second of the rate is not
  left to refill unused).
- **5xx and connection failures** are retried with exponential backoff and equal jitter
  (``d = min(MAX_BACKOFF, backoff_base * 2**(n-1))``, wait ``d/2 + uniform(0, d/2)``) for GET,
  PUT, PATCH and DELETE, at most ``max_retries`` times.
- **POST is never retried blindly.** A failure that proves the request never left (connect error,
  connect or pool timeout) is retried like any other. After an *ambiguous* failure (5xx, reset,
  read/write timeout: the create may have happened) the caller's ``recover()`` is asked (it
  re-reads by name); an object means the create took effect and is returned; ``None`` means it
  did not, and only then is the POST sent again. Without ``recover`` the failure is an
  ``AmbiguousWriteError``. A 409 on a POST re-sent after an ambiguous failure consults
  ``recover()`` once more (the first attempt may have landed in between).
- **DELETE** after an ambiguous failure treats a 404 on the retry as success (the first attempt
  did it); ``missing_ok=True`` treats any 404 as success.
- **Read-only** clients (``drift``) refuse every method but GET before anything is sent.
- **Paths stay on the endpoint**: a path that is not under ``/v2`` relative to the base URL (an
  absolute or scheme-relative URL, a ``..`` segment) is refused before anything is sent
  (``paths.api_path_problem``): the key never goes to another host.
- **Bounded, adaptive concurrency**: at most ``parallelism`` requests are in flight at once, fewer
  while round trips grow or the service says it is overloaded (``limit.AdaptiveLimit``: a slot
  taken around each exchange, so however many tasks wait, the connection pool is never
  oversubscribed).
- **Timeouts** on every request (``DEFAULT_TIMEOUT``), and a ``User-Agent`` naming reconciler.
- **Connect failures say what happened.** A host that does not resolve (DNS), a refused connection,
  a TLS failure and a connect timeout are each named with the host; DNS and TLS failures are not
  retried (waiting does not fix them), a refused connection is retried at most
  ``MAX_CONNECT_RETRIES`` times and never past the connect timeout (``--timeout``, default
  ``DEFAULT_CONNECT_TIMEOUT`` seconds), so an unreachable service fails within seconds.
  Every retry and every wait is reported through ``on_event`` as it happens.

Every answered exchange is told to ``observers`` as an ``Exchange`` (method, path, query, status,
seconds, attempt): telemetry counts and logs requests from these fields, never from text.

``stats`` counts *requests* (one per call, whatever its retries: what the caller asked for),
*attempts* (what was sent), retries, 429s and the seconds spent waiting.
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol, TypeVar
from urllib.parse import quote, urlencode

import httpx

from reconciler import __version__
from reconciler.client.limit import AdaptiveLimit
from reconciler.client.pacing import Pacer
from reconciler.client.paths import api_path_problem
from reconciler.client.redaction import redact as _redacted
from reconciler.client.settings import DEFAULT_PARALLELISM, HOW_TO_CONFIGURE, Endpoint, is_loopback
from reconciler.errors import (
    AmbiguousWriteError,
    ApiError,
    ConfigError,
    PaginationError,
    ProblemError,
    ReadOnlyError,
    TransportError,
)

USER_AGENT = f"reconciler/{__version__} (+python-httpx)"
#: Seconds to wait for a connection, and the budget for retrying refused connections (``--timeout``).
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=DEFAULT_CONNECT_TIMEOUT)
#: Retries of a refused connection (a service restarting); DNS and TLS failures are not retried.
MAX_CONNECT_RETRIES = 2
#: The longest single backoff between retries of a 5xx or connection failure.
MAX_BACKOFF = 30.0
#: How many 429s one request may meet before giving up (separate from ``max_retries``: being
#: throttled is the service working as designed, and each wait is bounded by the cap).
MAX_THROTTLED = 30
#: The base URL requests carry when served in-process (never resolved: no socket is opened).
EMULATOR_BASE_URL = "http://emulator.invalid"

#: Failures that prove the request was never sent: safe to retry for every method.
_NOT_SENT: tuple[type[Exception], ...] = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
#: Failures after which the request may have reached the service: retried for idempotent methods,
#: ambiguous for POST.
_MAYBE_SENT: tuple[type[Exception], ...] = (
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
    httpx.CloseError,
)
#: Every exception httpx can raise from sending a request (not all are ``httpx.HTTPError``).
_HTTPX_ERRORS: tuple[type[Exception], ...] = (
    httpx.HTTPError,
    httpx.InvalidURL,
    httpx.CookieConflict,
    httpx.StreamError,
)

T = TypeVar("T")
#: What an ambiguous create is checked with: re-read, the object if the create took effect, else None.
Recover = Callable[[], Awaitable[Any | None]]


class Wire(Protocol):
    """What ``ApiClient`` uses of its HTTP client: ``lean.LeanClient`` for an endpoint reached
    directly, an ``httpx.AsyncClient`` otherwise (a proxy of the environment, the in-process
    emulator, the tests' transports). The base URL and headers are sent on every request."""

    @property
    def base_url(self) -> httpx.URL: ...

    @property
    def headers(self) -> httpx.Headers: ...

    @property
    def timeout(self) -> httpx.Timeout: ...

    async def request(self, method: str, url: str, *, content: bytes | AsyncIterator[bytes] | None = None,
                      headers: Mapping[str, str] | None = None, timeout: httpx.Timeout = ...) -> httpx.Response: ...

    async def aclose(self) -> None: ...


def path_segment(value: str) -> str:
    """An id made safe for a URL path segment (ids are opaque: escape, never parse)."""
    return quote(value, safe="")


@dataclass(frozen=True)
class StatsSnapshot:
    requests: Mapping[str, int]  # calls by method (retries not included)
    attempts: int  # exchanges sent, retries included
    retries: int
    throttled: int  # 429 answers met
    wait_seconds: float  # time spent waiting (Retry-After, backoff)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())


@dataclass
class ClientStats:
    """The counters of one client (see the module docstring for what counts as what); kept by its
    event loop alone."""

    requests: Counter[str] = field(default_factory=Counter)
    attempts: int = 0
    retries: int = 0
    throttled: int = 0
    wait_seconds: float = 0.0

    def count_request(self, method: str) -> None:
        self.requests[method] += 1

    def count_attempt(self) -> None:
        self.attempts += 1

    def count_retry(self) -> None:
        self.retries += 1

    def count_throttled(self) -> None:
        self.throttled += 1

    def add_wait(self, seconds: float) -> None:
        self.wait_seconds += seconds

    def snapshot(self) -> StatsSnapshot:
        return StatsSnapshot(dict(self.requests), self.attempts, self.retries, self.throttled, self.wait_seconds)


@dataclass(frozen=True)
class Exchange:
    """One answered exchange, as the client's observers are told it (never a header or a body)."""

    method: str
    path: str  # the API path called, without its query
    params: Mapping[str, Any] | None  # the query sent (values that are None left out); None: the call had none
    status: int
    seconds: float  # from sending the request to its answer read
    attempt: int  # 1 for a call's first send, 2 for its first retry (after a 429, a 5xx, a failure)...

    @property
    def target(self) -> str:
        """The path with its query, as ``-v`` shows it: ``/v2/x?limit=100``."""
        return self.path if self.params is None else self.path + "?" + "&".join(
            f"{k}={v}" for k, v in self.params.items())

    @property
    def milliseconds(self) -> int:
        return round(self.seconds * 1000)

    def line(self) -> str:
        """``-v``'s line: ``GET /v2/x?limit=100 -> 200 (3 ms)``."""
        return f"{self.method} {self.target} -> {self.status} ({self.milliseconds} ms)"


@dataclass(frozen=True)
class _Failure:
    """A failed exchange that may be retried: an error answer or a transport exception."""

    message: str
    maybe_sent: bool  # the service may have acted on it
    response: httpx.Response | None = None  # for 5xx
    connect: bool = False  # no connection was made (refused, timed out): retried briefly
    final: bool = False  # retrying cannot help (DNS, TLS): given up at once


class ApiClient:
    """See the module docstring. The injected ``http`` client carries the base URL and the
    ``Authorization`` header (``build_http_client`` builds one); this class never logs headers.

    Every verb is a coroutine, run on the client's own event loop: ``run(coroutine)`` is the one
    way in from synchronous code (the CLI, ``watch``, tests)."""

    def __init__(
        self,
        http: Wire,
        *,
        read_only: bool = False,
        parallelism: int = DEFAULT_PARALLELISM,
        max_retries: int = 6,
        max_retry_after: float = 60.0,
        backoff_base: float = 0.2,
        on_event: Callable[[str], None] | None = None,
        trace: bool = False,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        runner: asyncio.Runner | None = None,
    ) -> None:
        if parallelism < 1:
            raise ValueError("parallelism must be at least 1")
        self.http = http
        self.read_only = read_only
        self.parallelism = parallelism
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self.backoff_base = backoff_base
        self.timeout = timeout
        self.stats = ClientStats()
        self._on_event = on_event
        self._trace = trace and on_event is not None  # -v: an event for every request too
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._clock = clock
        #: How many requests are on the wire at once: ``parallelism`` at most (``limit.AdaptiveLimit``).
        self.limit = AdaptiveLimit(parallelism)
        self._resume_at = float("-inf")
        # connection failures already reported (one line for an outage, not one per request in flight);
        # cleared by the next answer
        self._outage: set[str] = set()
        self._secrets = _secrets_of(http)
        self.pacer = Pacer(clock=clock, on_event=self._event)
        # what the httpx client already sends on every request need not be given again per request
        self._per_request_headers = http.headers.get("user-agent") != USER_AGENT
        self._per_request_timeout = http.timeout != timeout
        # the loop every call runs on: its own, made on first use and closed by ``close``, or one
        # shared with other clients (``runner``: several accounts read at once), closed by its owner
        self._runner = runner
        self._owns_runner = runner is None
        #: Told ``(method, path)`` after every exchange that got an answer (the CLI's progress display).
        self.on_request: Callable[[str, str], None] | None = None
        #: Told an ``Exchange`` after every exchange that got an answer, retries included (telemetry).
        self.observers: list[Callable[[Exchange], None]] = []
        #: What the workflow steps given this client report to (the run's ``telemetry.Telemetry``, set
        #: by ``workflow.connect``); the client itself never uses it.
        self.reporter: object | None = None

    def __repr__(self) -> str:
        return f"ApiClient(base_url={str(self.http.base_url)!r}, read_only={self.read_only})"

    # ------------------------------------------------------------------ the loop

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` to its end on this client's event loop (the same loop every time: the
        connections stay open between calls). From the main thread, a first Ctrl-C cancels it (the
        executor then finishes the calls in flight and returns its report; elsewhere it ends as
        ``KeyboardInterrupt``), a second aborts."""
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(work)

    def close(self) -> None:
        """Close the connections and the loop. Work an abort left on the loop (a second Ctrl-C) is
        cancelled first: nothing more is sent."""
        try:
            self.run(self._shutdown())
        finally:
            if self._runner is not None and self._owns_runner:
                self._runner.close()
                self._runner = None

    async def _shutdown(self) -> None:
        left = asyncio.all_tasks() - {asyncio.current_task()}
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        await self.http.aclose()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ verbs

    async def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return await self._call("GET", path, params=params)

    async def post(self, path: str, body: Any, *, recover: Recover | None = None) -> Any:
        return await self._call("POST", path, body=body, recover=recover)

    async def patch(self, path: str, body: Any, *, recover: Recover | None = None) -> Any:
        """PATCH is retried like any idempotent call, unless a ``recover`` is given: then the call
        is treated as a POST is (a PATCH that makes something new, such as a dataset version)."""
        return await self._call("PATCH", path, body=body, recover=recover)

    async def put(self, path: str, body: Any) -> Any:
        return await self._call("PUT", path, body=body)

    async def delete(self, path: str, body: Any = None, *, missing_ok: bool = False) -> Any:
        """DELETE (with an optional JSON body: dataset examples need one). Returns the decoded
        body, or None for 204 and for a 404 that counts as success (see the module docstring)."""
        return await self._call("DELETE", path, body=body, missing_ok=missing_ok)

    # ------------------------------------------------------------------ lists

    async def paginate(
        self, path: str, key: str, params: Mapping[str, Any] | None = None, *, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Every item of a cursor-paginated list (``pages``, joined)."""
        items: list[dict[str, Any]] = []
        async for page in self.pages(path, key, params, limit=limit):
            items.extend(page)
        return items

    async def pages(
        self, path: str, key: str, params: Mapping[str, Any] | None = None, *, limit: int = 100
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """The items of a cursor-paginated list, a page at a time (so a long list can be consumed
        as it arrives). Follows ``pagination.next_cursor`` while ``has_more`` is true, including
        across empty pages (authorization filtering may empty a page); a repeated or missing
        cursor while ``has_more`` is true is a ``PaginationError``."""
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            query: dict[str, Any] = {**(params or {}), "limit": limit}
            if cursor is not None:
                query["cursor"] = cursor
            page = await self.get(path, query)
            if not isinstance(page, dict) or not isinstance(page.get(key), list):
                raise PaginationError(f"the answer has no list {key!r}", method="GET", path=path)
            yield page[key]
            pagination = page.get("pagination")
            if not isinstance(pagination, dict) or not pagination.get("has_more"):
                return
            cursor = pagination.get("next_cursor")
            if not isinstance(cursor, str) or not cursor:
                raise PaginationError("has_more is true but next_cursor is missing", method="GET", path=path)
            if cursor in seen:
                raise PaginationError(
                    f"the list repeated a cursor after {len(seen) + 1} pages; stopping instead of looping",
                    method="GET", path=path,
                )
            seen.add(cursor)

    async def find_by_name(
        self, list_path: str, key: str, name: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """The item named exactly ``name``: the service's ``name`` filter is a case-insensitive
        substring match, so every page of its answer is checked on the client."""
        for item in await self.paginate(list_path, key, {**(params or {}), "name": name}):
            if item.get("name") == name:
                return item
        return None

    # ------------------------------------------------------------------ the retry policy

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        recover: Recover | None = None,
        missing_ok: bool = False,
    ) -> Any:
        if self.read_only and method != "GET":
            raise ReadOnlyError("refused: this client is read-only (drift never writes)", method=method, path=path)
        if (problem := api_path_problem(path)) is not None:  # never another host, never out of /v2
            raise ConfigError(f"refused to send {method} {path!r}: the path {problem}")
        self.stats.count_request(method)
        failures = 0
        throttled = 0
        ambiguous = False  # an earlier attempt may have taken effect
        first_sent = self._clock()
        attempt = 0
        while True:
            await self._wait_for_gate()
            attempt += 1
            sent_at, outcome = await self._exchange(method, path, params, body, attempt)
            if isinstance(outcome, httpx.Response):
                status = outcome.status_code
                if status == 429:
                    self.pacer.throttled(sent_at, _retry_after(outcome))
                else:
                    self.pacer.answered(sent_at)
                if 200 <= status < 300:
                    return self._decode(outcome, method, path)
                if status == 429:
                    throttled += 1
                    if throttled > MAX_THROTTLED:
                        raise self._problem(outcome, method, path)
                    await self._throttle(outcome, method, path)
                    self.stats.count_retry()
                    continue
                if status == 404 and method == "DELETE" and (missing_ok or ambiguous):
                    return None
                if status == 409 and method == "POST" and ambiguous and recover is not None:
                    found = await self._recover(recover, method, path)
                    if found is not None:
                        return found
                if status < 500:
                    raise self._problem(outcome, method, path)
                failure = _Failure(_status_line(outcome), maybe_sent=True, response=outcome)
            else:
                failure = outcome
            failures += 1
            if failure.final or (failure.connect and (
                    failures > min(self.max_retries, MAX_CONNECT_RETRIES)
                    or self._clock() - first_sent >= self._connect_budget())):
                self._exhausted(failure, method, path, failures)
            if (method == "POST" or recover is not None) and failure.maybe_sent:
                if recover is None:
                    raise AmbiguousWriteError(
                        f"{self._redact(failure.message)}; the create may or may not have taken effect "
                        "(re-run plan to see)", method=method, path=path)
                if failures <= self.max_retries:
                    await self._backoff(failures, failure, method, path)
                found = await self._recover(recover, method, path)
                if found is not None:
                    self._event(f"{method} {path}: the earlier attempt had taken effect; not sending it again")
                    return found
                if failures > self.max_retries:
                    self._exhausted(failure, method, path, failures)
            else:
                if failures > self.max_retries:
                    self._exhausted(failure, method, path, failures)
                await self._backoff(failures, failure, method, path)
            ambiguous = ambiguous or failure.maybe_sent
            self.stats.count_retry()

    async def _exchange(
        self, method: str, path: str, params: Mapping[str, Any] | None, body: Any, attempt: int
    ) -> tuple[float, httpx.Response | _Failure]:
        """One request on the wire, in a slot of the adaptive limit and then of the pace (taken last,
        so a pace learnt while it waited for the limit applies to it); returns when its slot of the
        pace was reserved, and the answer. httpx exceptions become a ``_Failure`` (retryable) or a
        ``TransportError`` (not retryable) here and nowhere else."""
        headers: dict[str, str] = {"User-Agent": USER_AGENT} if self._per_request_headers else {}
        kwargs: dict[str, Any] = {"timeout": self.timeout} if self._per_request_timeout else {}
        sent_params = {k: v for k, v in params.items() if v is not None} if params else {}
        target = _target(path, sent_params)
        if body is not None:
            headers["Content-Type"] = "application/json"
            kwargs["content"] = _json_chunks(body) if _streamed(body) else _dumps(body).encode()
        if headers:
            kwargs["headers"] = headers
        self.stats.count_attempt()
        await self.limit.acquire()
        rtt: float | None = None
        overloaded = False
        try:
            sent_at = await self._paced()
            try:
                started = time.perf_counter()
                response = await self.http.request(method, target, **kwargs)
                seconds = rtt = time.perf_counter() - started
            except httpx.PoolTimeout as exc:  # our own pool was busy: nothing to say about the host
                return sent_at, _Failure(_describe(exc), maybe_sent=False)
            except _NOT_SENT as exc:
                cause, final = connect_cause(exc, self.http.base_url)
                return sent_at, _Failure(cause, maybe_sent=False, connect=True, final=final)
            except _MAYBE_SENT as exc:
                return sent_at, _Failure(_describe(exc), maybe_sent=True)
            except _HTTPX_ERRORS as exc:
                raise TransportError(self._redact(_describe(exc)), method=method, path=path) from None
            overloaded = response.status_code == 429 or response.status_code >= 500
        finally:
            self.limit.release(rtt, overloaded=overloaded)
        self._outage.clear()
        if self.on_request is not None:
            self.on_request(method, path)
        if self.observers or self._trace:
            exchange = Exchange(method, path, sent_params if params else None, response.status_code, seconds,
                                attempt)
            for observe in self.observers:
                observe(exchange)
            if self._trace:  # -v: every request, as sent (no body, no header)
                self._event(exchange.line())
        return sent_at, response

    async def _recover(self, recover: Recover, method: str, path: str) -> Any | None:
        try:
            return await recover()
        except ApiError as exc:
            raise AmbiguousWriteError(
                f"the create may or may not have taken effect, and re-reading to find out failed ({exc})",
                method=method, path=path) from None

    def _connect_budget(self) -> float:
        connect = self.timeout.connect
        return DEFAULT_CONNECT_TIMEOUT if connect is None else connect

    def _exhausted(self, failure: _Failure, method: str, path: str, attempts: int) -> NoReturn:
        if failure.response is not None:
            raise self._problem(failure.response, method, path)
        tail = "" if attempts == 1 else f" (gave up after {attempts} attempts)"
        raise TransportError(f"{self._redact(failure.message)}{tail}", method=method, path=path)

    # ------------------------------------------------------------------ waiting

    async def _paced(self) -> float:
        """Wait for a slot of the pace (``pacing.Pacer``); returns when it was reserved. A slot given
        before the pace changed (a collision, a slow start's doubling) while it was awaited is asked
        for again, at the new pace."""
        while True:
            reserved = self._clock()
            if (paced := self.pacer.acquire() - reserved) > 0:
                await self._sleep(paced)
                self.stats.add_wait(paced)
            if not self.pacer.changed_since(reserved):
                return reserved

    async def _wait_for_gate(self) -> None:
        """Pause while a 429's Retry-After runs for every request (before the pacer has a rate)."""
        while (delay := self._resume_at - self._clock()) > 0:
            await self._sleep(delay)
            self.stats.add_wait(delay)

    async def _throttle(self, response: httpx.Response, method: str, path: str) -> None:
        """A 429: its request waits the ``Retry-After`` (capped at ``max_retry_after``). Until the
        pacer has learnt a rate every other request waits too; once it has one, they keep to the
        pace (the pacer has already given them one slot's pause)."""
        self.stats.count_throttled()
        asked = _retry_after(response)
        if asked is None:
            wait_s = self._jittered(self.stats.throttled)
            note = "no valid Retry-After; backing off"
        elif asked > self.max_retry_after:
            wait_s = self.max_retry_after
            note = f"Retry-After {asked:g}s capped"
        else:
            wait_s = asked
            note = "Retry-After"
        self._event(f"429 on {method} {path}: waiting {wait_s:g}s ({note})")
        if self.pacer.rate is None:
            self._resume_at = max(self._resume_at, self._clock() + wait_s)
        else:
            await self._sleep(wait_s)
            self.stats.add_wait(wait_s)

    async def _backoff(self, failures: int, failure: _Failure, method: str, path: str) -> None:
        delay = self._jittered(failures)
        if failure.response is not None:
            asked = _retry_after(failure.response)
            if asked is not None:
                delay = min(asked, self.max_retry_after)
        if failure.connect:  # the host, not the request: said once for every request that meets it
            if failure.message not in self._outage:
                self._outage.add(failure.message)
                self._event(f"{self._redact(failure.message)}: retrying for up to {self._connect_budget():g}s")
        else:
            self._event(f"{self._redact(failure.message)} on {method} {path}: retrying in {delay:.2f}s "
                        f"(retry {failures} of {self.max_retries})")
        await self._sleep(delay)
        self.stats.add_wait(delay)

    def _jittered(self, n: int) -> float:
        ceiling = min(MAX_BACKOFF, self.backoff_base * 2.0 ** (max(n, 1) - 1))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    # ------------------------------------------------------------------ answers

    def _decode(self, response: httpx.Response, method: str, path: str) -> Any:
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise TransportError(f"{response.status_code} answer is not JSON", method=method, path=path) from None

    def _problem(self, response: httpx.Response, method: str, path: str) -> ProblemError:
        """A non-2xx answer as a ``ProblemError``: from its problem+json body when it has one,
        else with what is known (status, reason phrase, a short excerpt of the body)."""
        title = response.reason_phrase or "HTTP error"
        detail: str | None = None
        type_: str | None = None
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("title"), str):
            title = body["title"]
            detail = body.get("detail") if isinstance(body.get("detail"), str) else None
            type_ = body.get("type") if isinstance(body.get("type"), str) else None
        elif response.content:
            # redact first, then cut: a secret the body echoes (raw or encoded) is gone before
            # whitespace is collapsed or the text shortened, and a cut that leaves its beginning is
            # redacted too (always: the gateway may have cut its own echo)
            text = self._redact(response.text[:MAX_ERROR_BODY], cut=True)
            excerpt = " ".join(text.split())
            excerpt = self._redact(excerpt[:EXCERPT], cut=True) if len(excerpt) > EXCERPT else excerpt
            detail = f"non-problem error body: {excerpt}" if excerpt else None
        if 300 <= response.status_code < 400 and response.headers.get("location"):
            detail = f"unexpected redirect to {response.headers['location']}"
        return ProblemError(
            status=response.status_code,
            title=self._redact(title, cut=True),
            detail=self._redact(detail, cut=True) if detail is not None else None,
            method=method,
            path=path,
            type=self._redact(type_) if type_ is not None else None,
        )

    # ------------------------------------------------------------------ secrets and events

    def hide(self, *values: str) -> None:
        """Also redact these values (a manifest's secrets, once resolved) from every error and
        event of this client: a service may echo a request body in a problem's detail."""
        # a value of 1-3 characters would garble every message, and show by the pattern
        fresh = {v for v in values if len(v) >= MIN_REDACTED} - set(self._secrets)
        if fresh:
            self._secrets = tuple(sorted({*self._secrets, *fresh}, key=len, reverse=True))

    def redact(self, text: str) -> str:
        """``text`` without any secret this client knows (as its own messages are)."""
        return self._redact(text)

    def _redact(self, text: str, *, cut: bool = False) -> str:
        """``text`` without any secret this client knows, raw or in any encoding a gateway may echo
        it in (``redaction.redact``: JSON, backslash and HTML escapes, percent-encoding, nested).
        With ``cut`` (the text may have been shortened), a text that ends with the beginning of one
        (at least ``redaction.MIN_PREFIX`` characters) ends with ``(sensitive)`` instead."""
        return _redacted(text, self._secrets, cut=cut)

    def _event(self, line: str) -> None:
        if self._on_event is not None:
            self._on_event(self._redact(line))


#: Shorter values are not searched for in messages (they would match everywhere).
MIN_REDACTED = 4

#: How much of a non-problem error body is read for its excerpt, and the excerpt's length.
MAX_ERROR_BODY = 64 * 1024
EXCERPT = 200


def _secrets_of(http: Wire) -> tuple[str, ...]:
    """The credential the client carries, so that no message can ever repeat it."""
    auth = http.headers.get("authorization", "")
    token = auth.partition(" ")[2].strip()
    found = {s for s in (auth, token) if len(s) >= MIN_REDACTED}
    return tuple(sorted(found, key=len, reverse=True))


def _describe(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what caused it (httpx wraps httpcore, which wraps the OSError)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def connect_cause(exc: Exception, base_url: httpx.URL) -> tuple[str, bool]:
    """A failed connection in words a user can act on, naming the host, and whether it is final
    (retrying cannot help): DNS, TLS, refused, or timeout."""
    import errno
    import socket

    where = base_url.host + (f":{base_url.port}" if base_url.port else "")
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain).lower()
    if isinstance(exc, httpx.ConnectTimeout) or any(isinstance(e, TimeoutError) for e in chain[1:]):
        return (f"cannot reach {where}: timed out connecting (no answer; --timeout SECONDS waits longer)", False)
    if any(isinstance(e, ssl.SSLError) for e in chain) or "[ssl" in text or "certificate verify" in text:
        reason = next((getattr(e, "verify_message", None) or getattr(e, "reason", None)
                       for e in chain if isinstance(e, ssl.SSLError)), None) or "handshake failed"
        return (f"cannot reach {where}: TLS failed ({reason}); for a private CA pass --ca-file FILE "
                "(or set SSL_CERT_FILE)", True)
    if any(isinstance(e, socket.gaierror) for e in chain) or "name or service not known" in text \
            or "name resolution" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return f"cannot reach {where}: DNS lookup failed (the host name does not resolve)", True
    if any(isinstance(e, OSError) and e.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH) for e in chain) \
            or "no route to host" in text or "network is unreachable" in text:
        return (f"cannot reach {where}: no route to host (check the address, the network and any firewall or "
                "proxy)", True)
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return f"cannot reach {where}: connection refused (nothing listens there)", False
    return f"cannot reach {where}: {_describe(exc)}", False


def _target(path: str, params: Mapping[str, Any]) -> str:
    """``path`` with ``params`` as its query, encoded as httpx encodes ``params`` (``QueryParams``:
    ``urlencode`` of each value as text, ``true``/``false`` for booleans). The common case (a path
    without a query, scalar values) is built here; the rest is merged by httpx's ``URL``."""
    if not params:
        return path
    query = _query_string(path, params)
    return str(httpx.URL(path).copy_merge_params(params)) if query is None else path + "?" + query


def _query_string(path: str, params: Mapping[str, Any]) -> str | None:
    """``urlencode`` of ``params``; None when httpx must merge them (the path has a query of its
    own, or a value is a list)."""
    if "?" in path:
        return None
    pairs: list[tuple[str, str]] = []
    for k, v in params.items():
        if v is True:
            text = "true"
        elif v is False:
            text = "false"
        elif isinstance(v, str):
            text = v
        elif isinstance(v, list | tuple):
            return None
        else:
            text = str(v)
        pairs.append((str(k), text))
    return urlencode(pairs)


def _status_line(response: httpx.Response) -> str:
    return f"{response.status_code} {response.reason_phrase}".strip()


def _retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds (the spec: an integer of at least 0); None when absent or not a number."""
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    if value != value or value < 0 or value == float("inf"):  # NaN, negative, infinite
        return None
    return value


#: A JSON body with a list longer than this (a dataset's examples) is encoded and sent a chunk at
#: a time, so a million examples are never one string in memory (then once more as bytes).
STREAM_ITEMS = 10_000


def _streamed(body: Any) -> bool:
    return isinstance(body, dict) and any(isinstance(v, list) and len(v) > STREAM_ITEMS for v in body.values())


def _dumps(value: Any) -> str:
    """JSON as httpx encodes a ``json=`` body (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


async def _json_chunks(body: dict[str, Any]) -> AsyncIterator[bytes]:
    """``_dumps(body).encode()``, a piece at a time: long lists in chunks of ``STREAM_ITEMS``."""
    yield b"{"
    for n, (key, value) in enumerate(body.items()):
        yield (("," if n else "") + _dumps(key) + ":").encode()
        if isinstance(value, list) and len(value) > STREAM_ITEMS:
            yield b"["
            for i in range(0, len(value), STREAM_ITEMS):
                yield (("," if i else "") + _dumps(value[i:i + STREAM_ITEMS])[1:-1]).encode()
            yield b"]"
        else:
            yield _dumps(value).encode()
    yield b"}"


def build_http_client(
    base_url: str,
    api_key: str,
    *,
    parallelism: int = DEFAULT_PARALLELISM,
    transport: httpx.AsyncBaseTransport | None = None,
    ca_file: str | None = None,
    timeout: httpx.Timeout = DEFAULT_TIMEOUT,
) -> Wire:
    """The HTTP client ``ApiClient`` expects: base URL, bearer key, User-Agent, TLS verified
    (against ``ca_file`` when given, else ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set, else the
    certifi bundle), timeouts, connections for ``parallelism`` requests in flight, no redirects
    followed. An endpoint reached directly gets ``lean.LeanClient``; a given ``transport``, or a
    proxy of the environment, an ``httpx.AsyncClient``. A loopback endpoint is always reached
    directly: ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` would send the key (in clear text over
    http) to a proxy, which cannot reach this machine's loopback anyway."""
    headers = {"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT, "Accept": "application/json"}
    host = httpx.URL(base_url).host
    loopback = bool(host) and is_loopback(host)
    if transport is None and (loopback or not urllib.request.getproxies()):
        from reconciler.client.lean import LeanClient

        https = base_url.lower().startswith("https://")
        context = (_tls_context(ca_file) if ca_file else httpx.create_ssl_context()) if https else None
        return LeanClient(base_url, headers=headers, timeout=timeout, ssl_context=context, keep=parallelism)
    return httpx.AsyncClient(  # a given transport turns the environment's proxies off
        base_url=base_url,
        headers=headers,
        timeout=timeout,
        verify=_tls_context(ca_file) if ca_file else True,
        follow_redirects=False,
        limits=httpx.Limits(max_connections=parallelism, max_keepalive_connections=parallelism),
        transport=transport,
    )


def _tls_context(ca_file: str) -> Any:
    """A verifying TLS context that trusts the CA certificates in ``ca_file`` (PEM)."""
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a PEM certificate file"
        raise ConfigError(f"--ca-file {ca_file}: cannot load the CA certificates ({reason})") from None


def open_client(
    endpoint: Endpoint,
    api_key: str,
    *,
    read_only: bool = False,
    parallelism: int = DEFAULT_PARALLELISM,
    on_event: Callable[[str], None] | None = None,
    trace: bool = False,
    ca_file: str | None = None,
    connect_timeout: float | None = None,
    runner: asyncio.Runner | None = None,
) -> ApiClient:
    """An ``ApiClient`` for an endpoint: a real base URL over httpx's own transport (TLS verified,
    proxies from the environment honoured except for a loopback endpoint), or the emulator persisted in ``endpoint.emulator_db``
    served in-process (``inprocess.InProcessTransport``), on ``runner``'s loop when given (shared with
    other clients). ``close()`` the client when done."""
    timeout = DEFAULT_TIMEOUT if connect_timeout is None else httpx.Timeout(30.0, connect=connect_timeout)
    if endpoint.emulator_db is not None:
        from reconciler.client.inprocess import emulator_transport

        http = build_http_client(EMULATOR_BASE_URL, api_key, parallelism=parallelism,
                                 transport=emulator_transport(endpoint.emulator_db))
    elif endpoint.base_url is not None:
        http = build_http_client(endpoint.base_url, api_key, parallelism=parallelism, ca_file=ca_file, timeout=timeout)
    else:
        raise ConfigError(HOW_TO_CONFIGURE)
    return ApiClient(http, read_only=read_only, parallelism=parallelism, on_event=on_event, trace=trace,
                     timeout=timeout, runner=runner)
