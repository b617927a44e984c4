"""The reconciler's only way to the service: connection settings, the HTTP client with its retry,
pagination and error policy, and the live-state reader.

    settings   where the API is and which key to use (flags and environment, one place)
    http       ApiClient over an injected httpx.Client; open_client builds one for an endpoint
    inprocess  the emulator app served in-process (``--emulator FILE``)
    live       read_live (what the manifests need) and essence (what the planner compares)

Import the module you need (``reconciler.client.settings`` alone, the CLI's defaults, imports
neither httpx nor the live models); the package itself imports nothing.
"""
