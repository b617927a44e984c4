"""The program's entry point, which leaves a short command without tearing the interpreter down
(issue 25: start-up).

A command that read manifests holds some hundred thousand objects (every module, the pydantic
models and their validators); Python's shutdown frees them one by one and collects their cycles,
which cost ``validate`` about a quarter of its CPU, more than importing click. A run that owns
nothing to close (no thread, connection or file of its own) may end at once instead: ``--version``,
``--help`` and a usage error (no command ran), and the commands that call :func:`allow`
(``validate``, ``schema``). Then the exit handlers (``atexit``) run and stdout and stderr are
flushed as at a normal exit, and ``os._exit`` ends the process with the same code. Anything else
(another command, a thread still running, a stream that cannot be flushed) exits normally.

Only the console script and ``python -m reconciler`` go through :func:`entry`; ``main`` itself
(click's test runner, a program importing the CLI) always exits normally.
"""

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


def entry() -> NoReturn:
    """``reconciler`` (the console script) and ``python -m reconciler``."""
    from reconciler.cli import main

    try:
        main(prog_name="reconciler")  # usage, errors and shell completion say "reconciler"
    except SystemExit as exc:
        leave(exc.code)
    leave(0)
