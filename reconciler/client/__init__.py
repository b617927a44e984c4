"""The reconciler's only way to the service: connection settings, the HTTP client with its retry,
pagination and error policy, and the live-state reader.

    settings   where the API is and which key to use (flags and environment, one place)
    http       ApiClient over an injected HTTP client (``Wire``), run on its own event loop;
               build_http_client and open_client build one for an endpoint
    limit      how many requests are in flight at once (adaptive, ``--parallelism`` the ceiling)
    pacing     the pace learnt from 429s
    lean       HTTP/1.1 with h11 on the loop, a connection per request in flight (an endpoint
               reached directly; behind a proxy and in-process, httpx)
    redaction  secrets out of every message the client makes
    paths      a request path stays under /v2 on the endpoint
    inprocess  the emulator app served on the client's loop (``--emulator FILE``)
    replica    a live read as an in-process emulator's account (``--rehearse``)
    live       read_live (what the manifests need; essence, what a comparison looks at, is reconciler.essence)

Import the module you need (``reconciler.client.settings`` alone, the CLI's defaults, imports
neither httpx nor the live models); the package itself imports nothing.
"""
