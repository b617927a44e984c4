"""An emulator of the management API: an ASGI app (starlette) over a SQLite store.

``create_app(settings)`` builds the app (``reconciler.emulator.app``); ``serve(settings)`` runs it
with uvicorn (``reconciler.emulator.server``). The emulator uses the provider table and the models,
never the planner.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from reconciler.errors import ConfigError

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
