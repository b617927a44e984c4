"""A short command ends without the interpreter's teardown (issue 25: start-up), and nothing a
user sees changes: the output is whole, the exit code the same, exit handlers run. A command that
may own something to close, or a thread still running, exits normally."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"}


def run(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", textwrap.dedent(code)] if code else [sys.executable, "-m", "reconciler", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, **SECRETS})


def test_validate_prints_everything_and_keeps_its_exit_codes(tmp_path: Path) -> None:
    done = run("validate", "manifests")
    assert (done.returncode, done.stdout) == (0, "7 resources valid in 8 files\n")
    (tmp_path / "bad.yaml").write_text("kind: Prompt\nname: p\n", encoding="utf-8")
    bad = run("validate", str(tmp_path))
    assert bad.returncode == 1 and "bad.yaml:1:1" in bad.stderr and bad.stderr.endswith("not valid\n")
    usage = run("validate")
    assert usage.returncode == 1 and "Missing argument" in usage.stderr


PROGRAM = """
    import atexit, sys, threading, time
    from reconciler import fast_exit

    class Teardown:
        def __del__(self):
            sys.stderr.write("torn down\\n")

    kept = Teardown()  # freed only by the interpreter's teardown
    atexit.register(lambda: sys.stderr.write("exit handler\\n"))
    sys.stdout.write("buffered, no newline")
    {setup}
    fast_exit.leave(3)
"""


def test_a_fast_exit_flushes_and_runs_the_exit_handlers_but_skips_the_teardown() -> None:
    done = run(code=PROGRAM.format(setup="pass"))
    assert (done.returncode, done.stdout) == (3, "buffered, no newline")
    assert done.stderr == "exit handler\n"


def test_after_a_command_that_did_not_allow_it_the_exit_is_normal() -> None:
    done = run(code=PROGRAM.format(setup="fast_exit.deny()"))
    assert (done.returncode, done.stdout) == (3, "buffered, no newline")
    assert done.stderr == "exit handler\ntorn down\n"


def test_a_thread_still_running_gets_a_normal_exit() -> None:
    setup = "threading.Thread(target=lambda: (time.sleep(0.2), print(' and the thread'))).start()"
    done = run(code=PROGRAM.format(setup=setup))
    assert (done.returncode, done.stdout) == (3, "buffered, no newline and the thread\n")
    assert "torn down" in done.stderr
