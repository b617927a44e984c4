"""An emulator of the management API: an ASGI app (starlette) over a SQLite store.

``create_app(settings)`` builds the app (``reconciler.emulator.app``); ``serve(settings)`` runs it
with uvicorn (``reconciler.emulator.server``). The emulator uses the provider table and the models,
never the planner.
"""
