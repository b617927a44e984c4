"""The ``cli`` fixture of the pull tests: the command line over an emulator persisted in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.pull.helpers import ENV, Cli


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cli:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    for k in [k for k in os.environ if k.startswith("RECONCILER_VAR_")]:
        monkeypatch.delenv(k)
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> Result:
        offline = args[0] == "validate"
        return CliRunner().invoke(main, [*args, *(() if offline else ("--emulator", str(tmp_path / "live.db")))],
                                  catch_exceptions=False)

    return run
