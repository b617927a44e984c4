"""Completion of file names: PATH arguments and file options answer click's completion protocol
with a ``file`` item, which the scripts ``reconciler`` generates turn into the shell's own file-name
completion (bash: ``compopt -o default``; zsh: ``_path_files -f``; fish: ``__fish_complete_path``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("reconciler")


def complete(shell: str, words: str, cword: str, cwd: Path) -> list[str]:
    if not SCRIPT.exists():
        pytest.skip("the reconciler console script is not installed next to this Python")
    env = {**os.environ, "_RECONCILER_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
    done = subprocess.run([str(SCRIPT)], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def source(shell: str) -> str:
    env = {**os.environ, "_RECONCILER_COMPLETE": f"{shell}_source"}
    return subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60).stdout


@pytest.mark.parametrize("command", ["validate", "plan", "drift", "apply", "watch"])
def test_a_path_argument_completes_file_names_in_bash(command: str, tmp_path: Path) -> None:
    assert complete("bash", f"reconciler {command} man", "2", tmp_path) == ["file,man"]


@pytest.mark.parametrize(("words", "cword"), [("reconciler plan manifests --var-file va", "4"),
                                               ("reconciler plan --emulator .demo/st", "3"),
                                               ("reconciler apply --api-key-file ke", "3")])
def test_file_options_complete_file_names(words: str, cword: str, tmp_path: Path) -> None:
    assert complete("bash", words, cword, tmp_path)[0].startswith("file,")


def test_zsh_and_fish_get_a_file_item_too(tmp_path: Path) -> None:
    assert complete("zsh", "reconciler validate man", "2", tmp_path)[:2] == ["file", "man"]
    assert complete("fish", "reconciler validate man", "man", tmp_path) == ["file,man"]
    assert "_path_files -f" in source("zsh")
    assert "__fish_complete_path" in source("fish")


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_the_bash_script_asks_bash_for_file_names(tmp_path: Path) -> None:
    """Source the generated script and run its completion function as bash would on TAB: it asks
    for bash's default (file-name) completion, which offers the directory."""
    if not SCRIPT.exists():
        pytest.skip("the reconciler console script is not installed next to this Python")
    (tmp_path / "manifests").mkdir()
    (tmp_path / "script.bash").write_text(source("bash"), encoding="utf-8")
    probe = f"""
compopt() {{ echo "compopt $1 $2"; }}   # outside a real TAB, record what the script asks of bash
PATH={SCRIPT.parent}:$PATH
source script.bash
COMP_WORDS=(reconciler validate man); COMP_CWORD=2
_reconciler_completion reconciler validate man
echo "reply=${{COMPREPLY[*]}}"
compgen -o default -- man   # what bash's default completion then offers
"""
    done = subprocess.run(["bash", "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["compopt -o default", "reply=", "manifests"], done.stderr
