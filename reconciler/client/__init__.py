"""The reconciler's only way to the service: connection settings, the HTTP client with its retry,
pagination and error policy, and the live-state reader.

    settings   where the API is and which key to use (flags and environment, one place)
    http       ApiClient over an injected httpx.Client; open_client builds one for an endpoint
    inprocess  the emulator app served in-process (``--emulator FILE``)
    live       read_live (what the manifests need) and essence (what the planner compares)
"""

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
