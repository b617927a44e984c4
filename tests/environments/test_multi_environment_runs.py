"""plan, apply and drift over the environments of reconciler.yaml (--all, --env), end to end over
loopback sockets: three environments, two accounts, one of them holding two as spaces."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from click.testing import Result

from tests.conftest import EMULATOR_ADMIN
from tests.environments.conftest import prompts_in, stats


def rows(output: str) -> dict[str, list[str]]:
    """The table environment x action of a text plan: the lines after ``Environments:``."""
    table = output.split("Environments:\n", 1)[1].splitlines()
    return {line.split()[0]: line.split()[1:] for line in table[1:]}


def test_plan_all_plans_each_environment_in_a_section_and_counts_them_in_one_table(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    result = cli("plan", "--all")

    assert result.exit_code == 0, result.output
    for env, space in project["spaces"].items():
        assert f"=== environment {env}\n" in result.output
        assert f"Prompt/{space}/summarize-ticket" in result.output
    assert rows(result.output) == {env: ["1", "0", "0", "0", "0"] for env in ("staging", "production", "research")}
    assert cli("plan", "--all", "--detailed-exitcode").exit_code == 2


def test_two_environments_of_one_account_share_one_client(
        project: dict[str, Any], cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.cli import common

    opened: list[str] = []

    def counted(conn: Any, **kw: Any) -> Any:
        opened.append(conn.base_url)
        return common.connect(conn, **kw)

    monkeypatch.setattr("reconciler.cli.main.connect", counted)
    assert cli("plan", "--all").exit_code == 0
    assert sorted(opened) == sorted(project["accounts"].values())  # main's two environments: one client


def test_plan_all_as_json_is_one_document_with_a_plan_per_environment(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    result = cli("plan", "--all", "--format", "json")

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert list(document["environments"]) == ["staging", "production", "research"]
    for env, plan in document["environments"].items():
        assert [op["address"] for op in plan["operations"]] == [f"Prompt/{project['spaces'][env]}/summarize-ticket"]
        assert plan["summary"]["create"] == 1
    assert [row["environment"] for row in document["table"]] == ["staging", "production", "research"]


def test_plan_all_as_markdown_starts_with_the_table(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    result = cli("plan", "--all", "--format", "markdown")

    assert result.exit_code == 0, result.output
    head = result.output.split("## Environment", 1)[0]
    assert "| environment | create | update | delete | replace | unmanaged |" in head
    assert "| `production` | 1 | 0 | 0 | 0 | 0 |" in head
    assert result.output.count("### reconciler plan\n") == 3


def test_env_plans_only_the_environments_named(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    result = cli("plan", "--env", "research", "--env", "staging")

    assert result.exit_code == 0, result.output
    assert list(rows(result.output)) == ["staging", "research"]  # the file's order
    assert project["spaces"]["production"] not in result.output


def test_plan_all_rehearses_each_environment(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    result = cli("plan", "--all", "--rehearse")

    assert result.exit_code == 0, result.output
    assert result.output.count("Rehearsal: passed: 1 of 1 call accepted") == 3, result.output


def test_apply_all_rehearses_each_environment_before_writing_it(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    result = cli("apply", "--all", "--auto-approve", "--rehearse")

    assert result.exit_code == 0, result.output
    assert result.output.count("Rehearsal: passed: 1 of 1 call accepted") == 3, result.output
    assert result.output.split("Environments:\n", 1)[1].count("converged") == 3


def test_apply_all_stops_what_comes_after_a_failed_environment_and_finishes_the_independent_one(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    main_url, lab_url = project["accounts"]["main"], project["accounts"]["lab"]
    spaces = project["spaces"]
    httpx.post(f"{main_url}/_emulator/faults", headers=EMULATOR_ADMIN,
               json={"route": "POST /v2/prompts", "status": 422, "times": 1}).raise_for_status()

    result = cli("apply", "--all", "--auto-approve")

    assert result.exit_code == 1, result.output
    report = result.output.split("Environments:\n", 1)[1]
    assert "  staging: failed: " in report
    assert "  production: not started: it comes after staging, which did not converge" in report
    assert "  research: converged" in report
    assert prompts_in(main_url, spaces["production"]) == []  # untouched
    assert prompts_in(main_url, spaces["staging"]) == []
    assert prompts_in(lab_url, spaces["research"]) == ["summarize-ticket"]

    again = cli("apply", "--all", "--auto-approve")  # the fault is spent: everything converges, in order

    assert again.exit_code == 0, again.output
    assert again.output.index("=== environment staging") < again.output.index("=== environment production")
    assert again.output.split("Environments:\n", 1)[1].count("converged") == 3
    assert prompts_in(main_url, spaces["production"]) == ["summarize-ticket"]


def test_drift_all_says_one_line_per_environment_and_exits_2_when_one_drifted(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    assert cli("apply", "--env", "staging", "--auto-approve").exit_code == 0

    result = cli("drift", "--all")

    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0] == "staging: in sync"
    assert lines[1].startswith("production: drift: Plan: 1 to create")
    assert lines[2].startswith("research: drift: ")
    assert len(lines) == 3

    assert cli("apply", "--all", "--auto-approve").exit_code == 0
    synced = cli("drift", "--all")
    assert (synced.exit_code, synced.output) == (0, "staging: in sync\nproduction: in sync\nresearch: in sync\n")



def test_quiet_shows_only_the_environments_with_changes_drift_or_errors(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    assert cli("apply", "--env", "staging", "--auto-approve").exit_code == 0

    planned = cli("plan", "--all", "-q")
    assert planned.exit_code == 0, planned.output
    assert "=== environment staging" not in planned.output
    assert "=== environment production" in planned.output and "=== environment research" in planned.output
    assert set(rows(planned.output)) == {"staging", "production", "research"}  # the table counts them all
    drifted = cli("drift", "--all", "-q")
    assert drifted.exit_code == 2
    assert [line.split(":")[0] for line in drifted.output.splitlines()] == ["production", "research"]

    assert cli("apply", "--all", "--auto-approve").exit_code == 0
    for command in ("plan", "drift"):
        for fmt in ("text", "markdown", "json"):
            quiet = cli(command, "--all", "-q", "--format", fmt)
            assert (quiet.exit_code, quiet.output) == (0, ""), (command, fmt)

def test_plan_all_markdown_shows_an_environment_that_failed_in_its_section(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    config = project["root"] / "reconciler.yaml"
    config.write_text(config.read_text().replace(project["accounts"]["lab"], "http://127.0.0.1:9"))

    result = cli("plan", "--all", "--format", "markdown", "--timeout", "0.5")

    assert result.exit_code == 1, result.output
    assert "| `research` | error |" in result.output
    assert "## Environment `research`\n\n**Error:** " in result.output
    assert "## Environment `staging`\n\n### reconciler plan" in result.output


def test_drift_all_exits_1_when_an_environment_cannot_be_read(
        project: dict[str, Any], cli: Callable[..., Result], monkeypatch: Any) -> None:
    config = project["root"] / "reconciler.yaml"
    config.write_text(config.read_text().replace(project["accounts"]["lab"], "http://127.0.0.1:9"))

    result = cli("drift", "--all", "--timeout", "0.5")

    assert result.exit_code == 1, result.output
    assert "research: error: " in result.output
    assert "staging: drift: " in result.output


# ------------------------------------------------------------------ bad input: refused before any request


def requests_to(project: dict[str, Any]) -> int:
    return sum(sum(stats(url).values()) for url in project["accounts"].values())


def refused(project: dict[str, Any], cli: Callable[..., Result], *args: str) -> str:
    before = requests_to(project)
    result = cli(*args)
    assert result.exit_code == 1, result.output
    assert requests_to(project) == before  # nothing was sent to either account
    return result.output


def test_an_unknown_environment_is_refused_with_a_did_you_mean_and_the_list(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    output = refused(project, cli, "plan", "--env", "prod")
    assert "--env prod: no environment 'prod'; did you mean 'production'? (environments: staging, production, " \
           "research)" in output


def test_env_with_paths_or_connection_flags_is_refused(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    assert "--env and --all take the paths from reconciler.yaml: give no PATH" in refused(
        project, cli, "plan", "--all", "base")
    assert "--base-url: with --env and --all each environment's endpoint and key come from reconciler.yaml" in \
        refused(project, cli, "drift", "--env", "staging", "--base-url", project["accounts"]["main"])
    assert "--emulator: with --env" in refused(project, cli, "apply", "--all", "--auto-approve", "--emulator", "x.db")


def test_metrics_file_is_refused_with_environments(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    assert "--metrics-file with --env or --all: not yet" in refused(project, cli, "drift", "--all", "--metrics-file",
                                                                    "run.prom")


def test_an_unset_key_variable_is_named_before_any_request(
        project: dict[str, Any], cli: Callable[..., Result], monkeypatch: Any) -> None:
    monkeypatch.delenv("LAB_API_KEY")
    output = refused(project, cli, "apply", "--all", "--auto-approve")
    assert "environment research: its key variable LAB_API_KEY is not set (api_key at " in output
    assert prompts_in(project["accounts"]["main"], project["spaces"]["staging"]) == []


def test_a_project_file_holding_a_key_is_refused_at_its_line(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    config = project["root"] / "reconciler.yaml"
    config.write_text(config.read_text().replace("{env: LAB_API_KEY}", "lab-key-0123456789"))
    output = refused(project, cli, "plan", "--all")
    assert "reconciler.yaml:15:14: environments.research.api_key: a secret must be a reference" in output
    assert "lab-key-0123456789" not in output


def test_a_cycle_in_after_is_refused_at_its_line(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    config = project["root"] / "reconciler.yaml"
    config.write_text(config.read_text().replace("var_files: [vars/staging.yaml]",
                                                 "var_files: [vars/staging.yaml]\n    after: [production]"))
    output = refused(project, cli, "apply", "--all", "--auto-approve")
    assert "reconciler.yaml:13:13: environments.production.after.0: a cycle in after: production after staging " \
           "after production" in output


def test_an_unknown_name_in_after_is_refused_at_its_line_with_a_did_you_mean(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    config = project["root"] / "reconciler.yaml"
    config.write_text(config.read_text().replace("after: [staging]", "after: [stagng]"))
    output = refused(project, cli, "apply", "--all", "--auto-approve")
    assert "reconciler.yaml:12:13: environments.production.after.0: no environment 'stagng'; did you mean " \
           "'staging'? (environments: staging, production, research)" in output


def test_two_environments_naming_one_account_and_space_are_refused(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    config = project["root"] / "reconciler.yaml"
    config.write_text(config.read_text().replace("vars/production.yaml", "vars/staging.yaml"))
    output = refused(project, cli, "plan", "--all")
    assert f"environments staging and production name one account and the space {project['spaces']['staging']}" \
        in output
    assert cli("plan", "--env", "production").exit_code == 0  # alone, it is one environment of that space


def test_plan_all_out_saves_a_plan_per_environment_and_apply_dir_applies_them_in_order(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    saved = cli("plan", "--all", "--out", "plans")

    assert saved.exit_code == 0, saved.output
    assert sorted(p.name for p in (project["root"] / "plans").iterdir()) == [
        "environments.json", "production.json", "research.json", "staging.json"]
    assert oct((project["root"] / "plans" / "staging.json").stat().st_mode & 0o777) == "0o600"

    applied = cli("apply", "plans")

    assert applied.exit_code == 0, applied.output
    assert applied.output.index("=== environment staging") < applied.output.index("=== environment production")
    assert applied.output.split("Environments:\n", 1)[1].count("converged") == 3
    for env, space in project["spaces"].items():
        assert prompts_in(project["accounts"][project["homes"][env]], space) == ["summarize-ticket"]
    assert cli("plan", "--all", "--detailed-exitcode").exit_code == 0


def test_apply_dir_refuses_a_stale_plan_and_stops_what_comes_after_it(
        project: dict[str, Any], cli: Callable[..., Result]) -> None:
    assert cli("plan", "--all", "--out", "plans").exit_code == 0
    assert cli("apply", "--env", "staging", "--auto-approve").exit_code == 0  # live state moved since

    result = cli("apply", "plans")

    assert result.exit_code == 1, result.output
    report = result.output.split("Environments:\n", 1)[1]
    assert "  staging: failed: " in report
    assert "  production: not started: it comes after staging, which did not converge" in report
    assert "  research: converged" in report


def test_apply_dir_refuses_endpoint_flags(project: dict[str, Any], cli: Callable[..., Result]) -> None:
    assert cli("plan", "--all", "--out", "plans").exit_code == 0
    output = refused(project, cli, "apply", "plans", "--base-url", project["accounts"]["main"])
    assert "--base-url: apply plans applies each environment's plan against its endpoint" in output
