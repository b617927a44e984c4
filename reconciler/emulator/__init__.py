"""An emulator of the management API: an ASGI app (starlette) over a SQLite store.

``create_app(settings)`` builds the app (``reconciler.emulator.app``); ``serve(settings)`` runs it
with uvicorn (``reconciler.emulator.server``). The emulator uses the provider table and the models,
never the planner.
``seed(store, account)`` fills a store with an account given as plain API objects (a replica).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from reconciler.errors import ConfigError

if TYPE_CHECKING:
    from reconciler.emulator.core import Store

#: The emulator's server stack: the ``emulator`` extra, left out of a plain ``pip install reconciler``.
SERVER_STACK = ("starlette", "uvicorn", "httptools", "uvloop")
INSTALL_HINT = "pip install 'reconciler[emulator]'"


@contextmanager
def server_stack(what: str) -> Iterator[None]:
    """Imports of the server stack for ``what`` (``--emulator FILE``, ``reconciler emulator``): when
    it is not installed, an error that says how to install it."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in SERVER_STACK:
            raise
        raise ConfigError(f"{what} needs the emulator's server stack, which is not installed ({exc.name} is "
                          f"missing): {INSTALL_HINT}") from None


def seed(store: Store, account: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Fill ``store`` with an account given as plain API objects (``reconciler.emulator.seeding``)."""
    from reconciler.emulator.seeding import seed as _seed

    _seed(store, account)
