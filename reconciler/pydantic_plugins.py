"""No pydantic plugin discovery when plugins are disabled (issue 25: start-up).

pydantic looks for plugins (the ``pydantic`` entry points of every installed package) when it
builds its first validator. Its loader, ``pydantic.plugin._loader``, imports ``importlib.metadata``
(email, zipfile, csv...: about 30 ms of CPU, 0.4x of ``import click``) even when
``PYDANTIC_DISABLE_PLUGINS`` says there is nothing to find, and every command that reads a
manifest paid for it. No plugin has anything to see in the manifest models, so the CLI disables
them (the variable can enable them again) and registers a stand-in for that module first: its
``get_plugins`` finds none while plugins stay disabled; anything else (plugins enabled, any other
name pydantic asks the module for) is answered by the real module, loaded then.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterable
from typing import Any

LOADER = "pydantic.plugin._loader"
#: the values of PYDANTIC_DISABLE_PLUGINS with which pydantic itself loads no plugin
DISABLED = ("__all__", "1", "true")


class _StandIn(types.ModuleType):
    _real: types.ModuleType | None = None

    def real(self) -> types.ModuleType:
        if self._real is None:
            import pydantic.plugin

            spec = importlib.machinery.PathFinder.find_spec(LOADER, list(pydantic.plugin.__path__))
            if spec is None or spec.loader is None:
                raise ImportError(f"no module named {LOADER}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self._real = module
        return self._real

    def get_plugins(self) -> Iterable[Any]:
        if os.getenv("PYDANTIC_DISABLE_PLUGINS") in DISABLED:
            return ()
        plugins: Iterable[Any] = self.real().get_plugins()
        return plugins

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.real(), name)


def skip_discovery() -> None:
    """Disable plugins unless the environment says otherwise, and when they are disabled and
    pydantic has not looked for them yet, register the stand-in loader."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] in DISABLED and LOADER not in sys.modules:
        sys.modules[LOADER] = _StandIn(LOADER, __doc__)
