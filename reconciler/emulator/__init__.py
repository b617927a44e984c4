"""An emulator of the management API: an ASGI app (starlette) over a SQLite store.

``create_app(settings)`` builds the app (``reconciler.emulator.app``); ``serve(settings)`` runs it
with uvicorn (``reconciler.emulator.server``). The emulator uses the provider table and the models,
never the planner.
``seed(store, account)`` fills a store with an account given as plain API objects (a replica).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.emulator.core import Store


def seed(store: Store, account: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Fill ``store`` with an account given as plain API objects (``reconciler.emulator.seeding``)."""
    from reconciler.emulator.seeding import seed as _seed

    _seed(store, account)
