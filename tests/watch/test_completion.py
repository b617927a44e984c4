"""Shell completion as README documents it: ``_RECONCILER_COMPLETE={bash,zsh,fish}_source reconciler``
prints the script, and a completion request (what the script sends back) returns the commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.cli.main import main

COMMANDS = sorted(main.commands)


def reconciler(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("reconciler")
    if not script.exists():
        pytest.skip("the reconciler console script is not installed next to this Python")
    return subprocess.run([str(script)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("shell", "marker"), [
    ("bash", "complete -o nosort -F _reconciler_completion reconciler"),
    ("zsh", "#compdef reconciler"),
    ("fish", "complete --no-files --command reconciler"),
])
def test_the_completion_script_is_produced(shell: str, marker: str) -> None:
    result = reconciler({"_RECONCILER_COMPLETE": f"{shell}_source"})
    assert result.returncode == 0 and marker in result.stdout, result.stdout + result.stderr


def test_a_bash_completion_request_returns_every_command() -> None:
    result = reconciler({"_RECONCILER_COMPLETE": "bash_complete", "COMP_WORDS": "reconciler ", "COMP_CWORD": "1"})
    assert result.returncode == 0
    assert sorted(line.split(",", 1)[1] for line in result.stdout.splitlines()) == COMMANDS
    assert "watch" in COMMANDS


def test_zsh_and_fish_completion_requests_return_commands_and_options() -> None:
    zsh = reconciler({"_RECONCILER_COMPLETE": "zsh_complete", "COMP_WORDS": "reconciler wa", "COMP_CWORD": "1"})
    assert zsh.stdout.splitlines()[:2] == ["plain", "watch"]
    fish = reconciler({"_RECONCILER_COMPLETE": "fish_complete", "COMP_WORDS": "reconciler watch --metrics",
                       "COMP_CWORD": "--metrics"})
    assert fish.stdout.startswith("plain,--metrics-addr")
    plan = reconciler({"_RECONCILER_COMPLETE": "bash_complete", "COMP_WORDS": "reconciler plan --log",
                       "COMP_CWORD": "2"})
    assert "plain,--log-format" in plan.stdout.splitlines()
