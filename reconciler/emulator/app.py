"""The emulator's ASGI app: the resource modules' routes behind one authentication gate and one
problem boundary, so that every answer (including unknown routes, wrong methods and crashes) is
``application/problem+json`` like the service's.

The stack, outermost first::

    middleware.wrap  (rate limit, faults, stats)
    _ProblemBoundary (an unexpected exception becomes a 500 problem, never an HTML/plain page)
    _AuthGate        (401 on every /v2 path but the OpenAPI document; 403 for writes by non-admins)
    ExceptionMiddleware (Problem and starlette's HTTPException 404/405 rendered as problems)
    Router

Authentication runs before routing, so an unknown /v2 path answers 401 to a caller without a key
and 404 only to an authenticated one: nothing about the API's shape leaks to strangers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.emulator import (
    datasets,
    directory,
    evaluators,
    experiments,
    integrations,
    middleware,
    openapi,
    prompts,
    restrictions,
)
from reconciler.emulator.core import Emulator, Principal, Problem, Seed
from reconciler.kinds import DATASET, EVALUATOR, INTEGRATION, PROMPT, RESTRICTION

log = logging.getLogger("reconciler.emulator")

#: The route modules, in the order their routes are tried; openapi.py reads the same list.
ROUTE_MODULES = (integrations, directory, prompts, datasets, evaluators, experiments, restrictions)


class KindModule(Protocol):
    """What the emulator module of a resource kind offers besides its routes: ``seed``, how a
    replica's objects of the kind are stored (``core.Seed``; ``core.stored_as_listed`` when the module
    stores each object as its list answers it)."""

    @property
    def seed(self) -> Seed: ...


#: The emulator module of each resource kind (``reconciler.kinds``), keyed by the kind's name: seeding
#: a replica stores the kind's objects through it (``seeding.seed``).
KIND_MODULES: Mapping[str, KindModule] = {
    INTEGRATION.name: integrations, PROMPT.name: prompts, DATASET.name: datasets, EVALUATOR.name: evaluators,
    RESTRICTION.name: restrictions,
}

#: Paths answered without a key (the API description is public, as the service's is).
PUBLIC_PATHS = frozenset({"/v2/openapi.json"})

#: Writes a space key may attempt (the restrictions module then checks the space itself);
#: every other write by a non-admin key is 403 here.
SPACE_KEY_WRITE_PREFIXES = ("/v2/resource-restrictions",)

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class EmulatorApp(Starlette):
    """A Starlette app whose middleware stack is the emulator's own (see the module docstring);
    Starlette's ``user_middleware`` and ``exception_handlers`` are not used."""

    def __init__(self, emu: Emulator, routes: list[BaseRoute]) -> None:
        super().__init__(routes=routes)
        self.router.redirect_slashes = False  # /v2/prompts/ is an unknown route (404), not a redirect
        self.emu = emu

    def build_middleware_stack(self) -> ASGIApp:
        emu = self.emu

        async def on_problem(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, Problem)
            return emu.problem(exc)

        async def on_http_exception(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, HTTPException)
            path = request.url.path
            headers = dict(exc.headers or {})
            if exc.status_code == 405:
                # Each method of a path may be its own Route; Allow names them all.
                headers["Allow"] = ", ".join(sorted({m for r in self.routes if isinstance(r, Route)
                                                     and r.path_regex.match(path) for m in r.methods or ()}))
            detail = {404: f"no route for {path}", 405: f"method {request.method} is not allowed on {path}"}
            return emu.problem(Problem(exc.status_code, detail.get(exc.status_code, exc.detail), headers))

        app: ASGIApp = ExceptionMiddleware(self.router, handlers={Problem: on_problem,
                                                                  HTTPException: on_http_exception})
        app = _AuthGate(app, emu)
        app = _ProblemBoundary(app, emu)
        wrapped: ASGIApp = middleware.wrap(app, emu)
        return wrapped


def create_app(emu: Emulator) -> Starlette:
    """The emulator's app over ``emu`` (``app.state.emulator``)."""
    routes: list[BaseRoute] = [*openapi.routes(emu, ROUTE_MODULES)]
    for module in ROUTE_MODULES:
        routes.extend(module.routes(emu))
    app = EmulatorApp(emu, routes)
    app.state.emulator = emu
    # Build now, not on the first request: a bad middleware setting (e.g. --faults) fails at start.
    app.middleware_stack = app.build_middleware_stack()
    return app


async def _send_problem(emu: Emulator, exc: Problem, scope: Scope, receive: Receive, send: Send) -> None:
    await emu.problem(exc)(scope, receive, send)


class _AuthGate:
    """401 before anything else on /v2; non-admin writes are 403. The principal is left in
    ``scope["state"]["principal"]`` for handlers (``emu.principal(request)`` reads it)."""

    def __init__(self, app: ASGIApp, emu: Emulator) -> None:
        self.app = app
        self.emu = emu

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if (path == "/v2" or path.startswith("/v2/")) and path not in PUBLIC_PATHS:
            try:
                principal = self.emu.principal(Request(scope))
                _check_write(principal, scope["method"], path)
            except Problem as exc:
                await _send_problem(self.emu, exc, scope, receive, send)
                return
            scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def _check_write(principal: Principal, method: str, path: str) -> None:
    if method in _READ_METHODS or principal.can_write:
        return
    if principal.role == "space" and path.startswith(SPACE_KEY_WRITE_PREFIXES):
        return
    raise Problem(403, f"this API key may not {method} {path}")


class _ProblemBoundary:
    """Any exception that escapes a handler becomes a 500 problem (logged with its traceback);
    if the response had already started, the connection is left to the server to close."""

    def __init__(self, app: ASGIApp, emu: Emulator) -> None:
        self.app = app
        self.emu = emu

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await _send_problem(self.emu, Problem(500, f"internal error ({type(exc).__name__})"),
                                scope, receive, send)

