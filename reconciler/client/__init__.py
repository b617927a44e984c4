"""The reconciler's only way to the service: connection settings, the HTTP client with its retry,
pagination and error policy, and the live-state reader.

    settings   where the API is and which key to use (flags and environment, one place)
    http       ApiClient over an injected httpx.Client; open_client builds one for an endpoint
    inprocess  the emulator app served in-process (``--emulator FILE``)
    live       read_live (what the manifests need) and essence (what the planner compares)

The names below are imported on first use (PEP 562), so ``reconciler.client.settings`` alone (the CLI's
defaults) does not import httpx and the live models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.client.http import (
        USER_AGENT,
        ApiClient,
        StatsSnapshot,
        build_http_client,
        open_client,
        path_segment,
    )
    from reconciler.client.live import essence, minimum_requests, read_live
    from reconciler.client.settings import (
        GLOBAL_HOST,
        REGIONAL_HOST_TEMPLATE,
        REGIONS,
        Endpoint,
        read_api_key,
        resolve_endpoint,
    )

_HOME = {
    "USER_AGENT": "http", "ApiClient": "http", "StatsSnapshot": "http", "build_http_client": "http",
    "open_client": "http", "path_segment": "http",
    "essence": "live", "minimum_requests": "live", "read_live": "live",
    "GLOBAL_HOST": "settings", "REGIONAL_HOST_TEMPLATE": "settings", "REGIONS": "settings", "Endpoint": "settings",
    "read_api_key": "settings", "resolve_endpoint": "settings",
}

__all__ = [
    "GLOBAL_HOST",
    "REGIONAL_HOST_TEMPLATE",
    "REGIONS",
    "USER_AGENT",
    "ApiClient",
    "Endpoint",
    "StatsSnapshot",
    "build_http_client",
    "essence",
    "minimum_requests",
    "open_client",
    "path_segment",
    "read_api_key",
    "read_live",
    "resolve_endpoint",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'reconciler.client' has no attribute {name!r}")
    return getattr(importlib.import_module(f"reconciler.client.{module}"), name)
