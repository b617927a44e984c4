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

from typing import NoReturn

from reconciler.teardown import allow as allow  # the commands' side, kept apart: the CLI imports it
from reconciler.teardown import deny as deny
from reconciler.teardown import leave


def entry() -> NoReturn:
    """``reconciler`` (the console script) and ``python -m reconciler``."""
    from reconciler.cli import main

    try:
        main(prog_name="reconciler")  # usage, errors and shell completion say "reconciler"
    except SystemExit as exc:
        leave(exc.code)
    leave(0)
