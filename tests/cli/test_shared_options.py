"""The options several commands share are declared where each command is defined (``@observed``,
``@confined``, ``@environments``, ``@LOG_FORMAT``): every command lists ``--log-format``; plan, apply
and drift ``--metrics-file``; every command that loads manifests ``--allow-outside-tree``; those that
run on the environments of reconciler.yaml ``--env``, ``--all`` and ``--project``; and each one takes
effect when given. A new command is listed here by itself; ``RUNS`` must say how it is run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main

COMMANDS = sorted(main.commands)
METRICS_FILE_COMMANDS = ["apply", "drift", "plan"]  # the one-shot runs a cron job scrapes
#: The commands that run on the environments of reconciler.yaml.
ENVIRONMENT_COMMANDS = ["apply", "drift", "plan", "pull", "validate", "watch"]
ENV = {"VENDOR_A_KEY": "k", "AGENT_TOKEN": "t", "RECONCILER_LOG_FORMAT": None, "RECONCILER_ALLOW_OUTSIDE_TREE": None,
       "RECONCILER_BASE_URL": None, "RECONCILER_API_KEY": None}

#: A short run of each command: TREE is a tree of manifests, DB an emulator's file, OUT an empty directory.
RUNS = {
    "apply": ["TREE", "--emulator", "DB", "--auto-approve"],
    "drift": ["TREE", "--emulator", "DB"],
    "emulator": ["--space-key", "not-a-pair"],  # refused before it serves
    "export": ["--emulator", "DB", "--out", "OUT"],
    "plan": ["TREE", "--emulator", "DB"],
    "promote": ["staging", "production", "--project", "DB"],  # refused: no such project file
    "pull": ["TREE", "--emulator", "DB"],
    "schema": [],
    "validate": ["TREE"],
    "watch": ["TREE", "--emulator", "DB", "--once"],
}


def helped(command: str) -> str:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


#: Commands that load manifests without PATHs: promote loads its two environments' trees from reconciler.yaml.
LOADS_FROM_THE_PROJECT = ["promote"]


def loads_manifests(command: str) -> bool:
    # [PATHS]... where --env may stand for them
    return "PATHS" in helped(command).splitlines()[0] or command in LOADS_FROM_THE_PROJECT


def run(command: str, tmp_path: Path, *extra: str, tree: Path | None = None) -> Result:
    places = {"TREE": str(tree or Path(__file__).resolve().parents[2] / "manifests"), "DB": str(tmp_path / "state.db"),
              "OUT": str(tmp_path / "out")}
    args = [places.get(a, a) for a in RUNS[command]]
    return CliRunner(env=ENV).invoke(main, [command, *args, *extra], catch_exceptions=False)


def test_every_command_says_how_it_is_run_here() -> None:
    assert sorted(RUNS) == COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_lists_the_options_it_shares(command: str) -> None:
    text = helped(command)
    assert "--log-format" in text
    assert ("--metrics-file" in text) == (command in METRICS_FILE_COMMANDS)
    assert ("--allow-outside-tree" in text) == loads_manifests(command)
    for option in ("--env NAME", "--all", "--project FILE"):
        listed = re.search(rf"^\s+{option}\s", text, re.MULTILINE) is not None
        # promote names its two environments itself (FROM TO), and takes the project file
        assert listed == (command in ENVIRONMENT_COMMANDS or (command, option) == ("promote", "--project FILE")), option


def test_the_commands_that_load_manifests_are_the_ones_expected() -> None:
    assert [c for c in COMMANDS if loads_manifests(c)] == ["apply", "drift", "plan", "promote", "pull", "validate",
                                                           "watch"]


@pytest.mark.parametrize("command", COMMANDS)
def test_log_format_json_logs_the_run_as_events(command: str, tmp_path: Path) -> None:
    result = run(command, tmp_path, "--log-format", "json")
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert events, result.output
    if command == "watch":  # its own telemetry: a loop's events, no command event
        assert [e["event"] for e in events][:1] == ["start"] and events[-1]["event"] == "cycle"
    else:
        ended = next(e for e in events if e["event"] == "command")
        assert (ended["command"], ended["exit_code"]) == (command, result.exit_code)


@pytest.mark.parametrize("command", METRICS_FILE_COMMANDS)
def test_metrics_file_is_written(command: str, tmp_path: Path) -> None:
    written = tmp_path / "run.prom"
    result = run(command, tmp_path, "--metrics-file", str(written))
    assert result.exit_code in (0, 2), result.output  # 2: drift, an empty account against the tree
    assert "reconciler_cycles_total" in written.read_text()


@pytest.mark.parametrize("command", ["apply", "drift", "plan", "pull", "validate", "watch"])
def test_allow_outside_tree_lets_a_command_read_a_file_outside_the_tree(command: str, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "examples.jsonl").write_text('{"question": "q", "answer": "a"}\n')
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.yaml").write_text("kind: Dataset\nspace: research\nname: d\nexamples_file: ../elsewhere/examples.jsonl\n")

    refused = run(command, tmp_path, tree=tree)
    allowed = run(command, tmp_path, "--allow-outside-tree", tree=tree)

    assert "is outside the manifests' tree" in refused.output
    assert "is outside the manifests' tree" not in allowed.output
    assert allowed.exit_code in (0, 2), allowed.output  # 2: pull found the dataset to pull, drift it missing


@pytest.mark.parametrize("command", ENVIRONMENT_COMMANDS)
def test_env_takes_effect_on_each_command_that_lists_it(command: str, tmp_path: Path) -> None:
    """--env reads reconciler.yaml: named by --project, an unknown environment is refused by name."""
    (tmp_path / "reconciler.yaml").write_text("environments:\n  staging: {emulator: s.db, paths: [m]}\n")
    result = CliRunner(env=ENV).invoke(main, [command, "--env", "stageing", "--project",
                                              str(tmp_path / "reconciler.yaml")])
    assert result.exit_code == 1
    assert "--env stageing: no environment 'stageing'; did you mean 'staging'?" in result.output
