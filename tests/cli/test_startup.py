"""Start-up: a command imports only what it uses. ``--version``, ``--help`` and a TAB
(shell completion runs the program) load click and a few light modules; the HTTP stack, pydantic,
prometheus_client and the emulator wait for a command that needs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("httpx", "pydantic", "prometheus_client", "reconciler.emulator", "starlette", "uvicorn", "deepdiff",
         "yaml", "rich", "jsonschema")


def imported(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules ``python -X importtime -m reconciler ARGS`` imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "reconciler", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:") and "self [us]" not in line}


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("plan", "--help"), ("watch", "--help")])
def test_version_and_help_import_no_http_stack_pydantic_prometheus_or_emulator(args: tuple[str, ...]) -> None:
    modules = imported(*args)
    assert "click" in modules and "reconciler.cli" in modules  # the measurement saw the program
    assert heavy(modules) == []


def test_a_completion_request_imports_none_of_them_either() -> None:
    modules = imported(env={"_RECONCILER_COMPLETE": "bash_complete", "COMP_WORDS": "reconciler pl", "COMP_CWORD": "1"})
    assert heavy(modules) == []


def test_validate_imports_no_http_stack_prometheus_differ_or_emulator() -> None:
    modules = imported("validate", "manifests", env={"VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"})
    assert "pydantic" in modules and "yaml" in modules  # what validate does need
    assert [m for m in heavy(modules) if not m.startswith(("pydantic", "yaml"))] == []


def test_validate_imports_neither_the_planner_the_client_nor_python_jsonschema_for_a_valid_tree() -> None:
    """The quickstart tree declares an AGENT integration: its input schema and presets are checked
    (jsonschema-rs decides a valid one; python-jsonschema, 70 ms of imports, only words a problem)."""
    modules = imported("validate", "manifests", env={"VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"})
    assert "reconciler.manifests.input_schema" in modules
    # its Policy has no CEL condition: the rules are checked, nothing is evaluated, no CEL is parsed
    unused = ("reconciler.plan", "reconciler.apply", "reconciler.policy.evaluate", "celpy", "lark", "reconciler.watch",
              "reconciler.pull", "reconciler.client.live", "reconciler.client.http", "jsonschema", "attr", "referencing",
              "rich")
    assert sorted(m for m in modules if any(m == u or m.startswith(u + ".") for u in unused)) == []


def test_the_program_prints_everything_and_keeps_its_exit_codes(tmp_path: Path) -> None:
    """The entry point is click's own: output whole, exit codes as the commands say."""
    env = {**os.environ, "VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "reconciler", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=60, env=env)

    done = run("validate", "manifests")
    assert (done.returncode, done.stdout) == (0, "7 resources valid in 8 files\n")
    (tmp_path / "bad.yaml").write_text("kind: Prompt\nname: p\n", encoding="utf-8")
    bad = run("validate", str(tmp_path))
    assert bad.returncode == 1 and "bad.yaml:1:1" in bad.stderr and bad.stderr.endswith("not valid\n")
    usage = run("validate")
    assert usage.returncode == 1 and "Missing argument" in usage.stderr


def test_running_a_command_leaves_the_process_environment_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """A program or a test that calls ``main()`` keeps its settings (pydantic's plugins among them),
    and so do the processes it starts."""
    from click.testing import CliRunner

    from reconciler.cli.main import main

    monkeypatch.setenv("VENDOR_A_KEY", "k")
    monkeypatch.setenv("AGENT_TOKEN", "t")
    before = dict(os.environ)
    result = CliRunner().invoke(main, ["validate", str(ROOT / "manifests")])
    assert result.exit_code == 0, result.output
    assert dict(os.environ) == before
