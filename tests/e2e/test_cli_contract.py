"""The CLI's contract (README.md) at its edges, over a real socket: usage errors are errors (exit 1, never
the 2 of "changes"), each change points at its own manifest line, a saved plan applies from
anywhere and with ``--allow-replace``, errors only live state reveals name their line, and bad
paths are messages, not tracebacks."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.e2e.test_cli_e2e import edit

Cli = Callable[..., Result]


@pytest.mark.parametrize("args,message", [
    (["plan", "manifests", "--api-key", "x"], "No such option '--api-key'. Did you mean '--api-key-file'?"),
    (["plan", "manifests", "--format", "yaml"], "Invalid value for '--format': 'yaml' is not one of"),
    (["drift", "manifests", "--bogus"], "No such option '--bogus'."),
    (["drift"], "Missing argument 'PATHS...'."),
    (["validate"], "Missing argument 'PATHS...'."),
    (["export", "--space"], "Option '--space' requires an argument."),
    (["no-such-command"], "No such command 'no-such-command'."),
])
def test_a_usage_error_exits_1_not_the_2_of_changes_or_drift(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert f"Error: {message}" in result.output  # the reason, not any line that says "Error"


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_every_change_of_an_update_points_at_its_own_line(cli: Cli, tree: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    evaluators, agents = tree / "research/evaluators.yaml", tree / "integrations/agents.yaml"
    edit(evaluators, "include_explanations: true", "include_explanations: false")
    edit(evaluators, "direction: maximize", "direction: minimize")
    edit(agents, "description: deterministic replay", "description: cold replay")
    result = cli("plan", str(tree), "--format", "json")
    assert result.exit_code == 0, result.output
    sources = {c["path"]: c["source"] for op in json.loads(result.stdout)["operations"] for c in op["changes"]}
    assert sources["template_config.include_explanations"] == f"{evaluators}:{line_of(evaluators, 'include_explanations')}"
    assert sources["template_config.direction"] == f"{evaluators}:{line_of(evaluators, 'direction:')}"
    assert sources["config.request_presets.cold.description"] == f"{agents}:{line_of(agents, 'cold replay')}"


def test_an_example_change_points_at_its_line_in_the_examples_file(cli: Cli, tree: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    jsonl = tree / "research/data/golden-tickets.jsonl"
    edit(jsonl, '"expected": "bug"', '"expected": "defect"')
    result = cli("plan", str(tree), "--format", "json")
    changes = [c for op in json.loads(result.stdout)["operations"] for c in op["changes"]
               if c["path"].startswith("examples[")]
    assert [c["source"] for c in changes] == [f"{jsonl}:{line_of(jsonl, 'defect')}"]


def test_a_saved_replacement_applies_with_allow_replace_given_to_apply(cli: Cli, tree: Path, tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    edit(tree / "integrations/llm.yaml", "provider: NIM_F", "provider: CUSTOM")  # no evaluator uses it
    planfile = tmp_path / "replace.json"
    assert cli("plan", str(tree), "--out", str(planfile)).exit_code == 0
    refused = cli("apply", str(planfile))
    assert refused.exit_code == 1 and "--allow-replace" in refused.stderr
    applied = cli("apply", str(planfile), "--allow-replace")
    assert applied.exit_code == 0, applied.output
    assert "Apply complete" in applied.stdout


def test_a_saved_plan_applies_in_its_working_tree_and_is_refused_outside_it(
        cli: Cli, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan file is bound to the files it was made from, inside the working tree apply runs in
    (docs/security.md): applied from a directory that does not hold them, it is refused."""
    monkeypatch.chdir(tree.parent)
    planfile = tmp_path / "plan.json"
    assert cli("plan", tree.name, "--out", str(planfile)).exit_code == 0
    assert json.loads(planfile.read_text())["manifests"] == [tree.name]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    refused = cli("apply", str(planfile))
    assert refused.exit_code == 1
    assert f"{tree.name}/ownership.yaml: lies outside the working tree ({elsewhere.resolve()})" in refused.output
    monkeypatch.chdir(tree.parent)
    result = cli("apply", str(planfile))
    assert result.exit_code == 0, result.output
    assert "Apply complete: live state matches the manifests." in result.stdout


def test_a_saved_plan_never_takes_other_manifests_of_the_same_path_and_refuses_plan_options(
        cli: Cli, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    planfile = tmp_path / "plan.json"
    assert cli("plan", tree.name, "--out", str(planfile)).exit_code == 0
    decoy = tmp_path / "elsewhere"
    (decoy / tree.name).mkdir(parents=True)  # the same relative path here holds other manifests
    (decoy / tree.name / "other.yaml").write_text(
        "kind: Prompt\nspace: research\nname: unrelated\nversion: {commit_message: c, provider: VENDOR_A, "
        "messages: [{role: user, content: hi}]}\n")
    monkeypatch.chdir(decoy)
    refused = cli("apply", str(planfile), "--prune")
    assert refused.exit_code == 1 and "--prune: options of plan" in refused.stderr
    result = cli("apply", str(planfile))
    assert result.exit_code == 1 and "lies outside the working tree" in result.output
    (tmp_path / "plan.json").write_text(planfile.read_text().replace(f'"workdir": "{tree.parent}"', '"workdir": ""'))
    result = cli("apply", str(planfile))  # found here: not the files the plan was made from
    assert result.exit_code == 1
    assert f"{tree.name}/other.yaml: not among the files the plan was made from" in result.output
    assert f"{tree.name}/ownership.yaml: missing" in result.output


def test_a_restriction_is_matched_by_id_whatever_type_the_service_reports(cli: Cli, tree: Path) -> None:
    (tree / "restrictions.yaml").write_text(
        "kind: ResourceRestriction\nname: ops-board\nresource_type: DASHBOARD\nresource_id: ops-board-7\n")
    applied = cli("apply", str(tree), "--auto-approve")
    assert applied.exit_code == 0, applied.output  # the emulator reads ops-board-7 as a PROJECT id
    again = cli("plan", str(tree), "--detailed-exitcode")
    assert again.exit_code == 0, again.output
    assert "resource_type is DASHBOARD, but the service reports ops-board-7 as a PROJECT" in again.output


def test_an_unknown_space_is_reported_at_its_line(cli: Cli, tree: Path) -> None:
    prompts = tree / "research/prompts.yaml"
    edit(prompts, "space: research", "space: nowhere")
    (tree / "ownership.yaml").unlink()  # else the space is refused offline: it is not an owned one
    result = cli("plan", str(tree))
    assert result.exit_code == 1
    assert f"{prompts}:{line_of(prompts, 'space: nowhere')}:" in result.stderr
    assert "space: no space named (or with the id) 'nowhere' exists" in result.stderr


def test_bad_paths_are_messages_not_tracebacks(cli: Cli, tree: Path, tmp_path: Path) -> None:
    out = cli("plan", str(tree), "--out", str(tmp_path / "missing" / "plan.json"))
    assert out.exit_code == 1 and "does not exist" in out.stderr
    for name, value in {"RECONCILER_API_KEY": "admin-key", "VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"}.items():
        os.environ.setdefault(name, value)
    (tmp_path / "a-file").write_text("")  # a missing directory is made; one under a file cannot be
    emulated = CliRunner().invoke(main, ["plan", str(tree), "--emulator", str(tmp_path / "a-file" / "state.db")])
    assert emulated.exit_code == 1
    assert "cannot create its directory" in emulated.output and "Traceback" not in emulated.output
