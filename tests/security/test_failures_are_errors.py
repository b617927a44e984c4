"""Every failure ends as a ``ReconcilerError``: exit 1 and one ``Error:`` naming the input and what is
wrong with it, never a Python traceback, and nothing sent. The CLI runs with click's runner
without catching exceptions, so a traceback fails these tests."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main

Cli = Callable[..., Result]


def first_secret(plan: dict[str, object]) -> dict[str, str]:
    ops = plan["operations"]
    assert isinstance(ops, list)
    secrets: dict[str, str] = next(op["secrets"] for op in ops if op.get("secrets"))
    return secrets


def vault_reference(plan: dict[str, object]) -> str:
    secrets = first_secret(plan)
    pointer = next(iter(secrets))
    secrets[pointer] = "vault:deploy/key"  # a source reconciler does not know
    return json.dumps(plan)


def future_version(plan: dict[str, object]) -> str:
    return json.dumps(plan | {"format_version": "2.1.0"})


def truncated(plan: dict[str, object]) -> str:
    text = json.dumps(plan, indent=2)
    return text[: len(text) // 2]


def broken_pins(plan: dict[str, object]) -> str:
    pins = plan["pins"]
    assert isinstance(pins, dict)
    return json.dumps(plan | {"pins": {address: [] for address in pins}})


@pytest.mark.parametrize("edit, says", [
    (vault_reference, "'vault:deploy/key' is not env:NAME or file:PATH"),
    (future_version, "format_version 2.1.0 is newer than this reconciler reads (1.x)"),
    (truncated, "(the file ends early: truncated?)"),
    (broken_pins, "pins: expected arrays of three strings"),
], ids=["unknown-secret-source", "future-format-version", "truncated-json", "malformed-pins"])
def test_a_bad_plan_file_is_one_clear_error_before_any_request(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None], edit: Callable[[dict[str, object]], str], says: str) -> None:
    planfile = tmp_path / "plan.json"
    assert cli("plan", str(tree), "--out", str(planfile)).exit_code == 0
    planfile.write_text(edit(json.loads(planfile.read_text())))
    reset_stats()

    result = cli("apply", str(planfile))

    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {planfile}") and says in result.output
    assert "Traceback" not in result.output
    assert stats() == {}  # refused before the stale check's reads


def test_plan_out_to_something_other_than_a_file_is_refused_before_any_request(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reset_stats()

    result = cli("plan", str(tree), "--out", str(fifo))

    assert result.exit_code == 1 and f"--out {fifo}: is not a regular file; refusing to replace it" in result.output
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still the FIFO it was
    assert stats() == {}


def test_an_emulator_database_that_cannot_be_opened_is_an_error(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    db.write_text("not a database, but long enough to hold a SQLite header and then some more text\n" * 2)

    result = CliRunner().invoke(main, ["emulator", "--db", str(db), "--port", "0"], catch_exceptions=False)

    assert result.exit_code == 1
    assert result.output.startswith(f"Error: --db {db}: cannot open the emulator's SQLite file")


def test_an_emulator_port_out_of_range_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["emulator", "--port", "99999"], catch_exceptions=False)
    assert result.exit_code == 1 and "99999 is not in the range 0<=x<=65535" in result.output


def test_an_emulator_port_in_use_is_an_error_not_a_server_exit_code() -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["emulator", "--port", str(port)], catch_exceptions=False)

    assert result.exit_code == 1
    assert result.output.startswith(f"Error: --host 127.0.0.1 --port {port}: cannot listen")
