"""Emulator middleware: rate limit, faults, request stats (not yet implemented)."""

from __future__ import annotations

from typing import Any


def wrap(app: Any, emu: Any) -> Any:
    return app
