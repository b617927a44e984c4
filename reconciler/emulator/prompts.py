"""Emulator routes: prompts (not yet implemented)."""

from __future__ import annotations

from typing import Any


def routes(emu: Any) -> list[Any]:
    return []
