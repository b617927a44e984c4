"""Whether the running command may end without the interpreter's teardown (see ``fast_exit``):
``deny`` when a command starts, ``allow`` from a command that holds nothing to close, ``leave`` at
the end. Apart from ``fast_exit.entry`` so that the CLI and the commands import it, not the entry."""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn

_allowed = True  # until a command runs: --version, --help, a usage error


def deny() -> None:
    """A command is about to run: exit normally unless it says otherwise."""
    global _allowed
    _allowed = False


def allow() -> None:
    """The running command holds nothing that needs the interpreter's shutdown."""
    global _allowed
    _allowed = True


def leave(code: str | int | None) -> NoReturn:
    """Exit with ``code`` (as ``SystemExit`` would), at once when that is safe."""
    threading = sys.modules.get("threading")  # not imported: no thread was started with it
    if _allowed and not isinstance(code, str) and (threading is None or threading.active_count() == 1):
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - e.g. a closed pipe: the normal exit reports it
            sys.exit(code)
        os._exit(code or 0)
    sys.exit(code)
