"""The product's promises end to end, over a real socket: create from empty, one call per changed
resource, drift, stale plan files, partial failure and re-run, export round trip."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from click.testing import Result

from tests.conftest import EMULATOR_ADMIN
from tests.e2e.conftest import ENV

Cli = Callable[..., Result]


def writes(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if not k.startswith("GET ")}


def test_apply_from_empty_creates_everything_and_then_plans_empty(cli: Cli, tree: Path) -> None:
    first = cli("apply", str(tree), "--auto-approve")
    assert first.exit_code == 0, first.output
    assert "Apply complete: live state matches the manifests." in first.stdout
    again = cli("plan", str(tree), "--detailed-exitcode")
    assert again.exit_code == 0, again.output
    assert "No changes." in again.stdout


def test_apply_without_auto_approve_refuses_when_stdin_is_not_a_terminal(cli: Cli, tree: Path) -> None:
    result = cli("apply", str(tree))
    assert result.exit_code == 1
    assert "not a terminal" in result.stderr


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def test_one_changed_field_of_each_kind_is_one_call_each(cli: Cli, tree: Path, stats: Any,
                                                         reset_stats: Callable[[], None]) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    edit(tree / "integrations/llm.yaml", "is_function_calling_enabled: true", "is_function_calling_enabled: false")
    edit(tree / "integrations/agents.yaml", "description: Replays support conversations", "description: Replays")
    edit(tree / "research/prompts.yaml", "description: Summarize a support ticket", "description: Summaries")
    edit(tree / "research/evaluators.yaml", "include_explanations: true", "include_explanations: false")
    edit(tree / "research/data/golden-tickets.jsonl", '"expected": "bug"', '"expected": "defect"')
    reset_stats()
    result = cli("apply", str(tree), "--auto-approve", "--version-name", "v2")
    assert result.exit_code == 0, result.output
    assert writes(stats()) == {
        "PATCH /v2/integrations/{integration_id}": 2,  # one per changed integration
        "PATCH /v2/prompts/{prompt_id}": 1,
        "POST /v2/evaluators/{evaluator_id}/versions": 1,
        "PATCH /v2/datasets/{dataset_id}/examples": 1,  # the update, in a new version
    }
    counts = stats()
    # The plan read the lists once; the convergence check re-read only the touched resources.
    assert counts["GET /v2/integrations"] == 2  # LLM and AGENT, one page each
    assert counts["GET /v2/integrations/{integration_id}"] == 2
    assert counts["GET /v2/prompts/{prompt_id}"] == 1 and counts["GET /v2/evaluators/{evaluator_id}"] == 2


def test_plan_verbose_prints_the_request_count_of_the_live_read(cli: Cli, tree: Path, stats: Any,
                                                                 reset_stats: Callable[[], None]) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    reset_stats()
    result = cli("plan", str(tree), "-v")
    assert result.exit_code == 0
    sent = sum(stats().values())
    # 2 integration lists + spaces + organizations + restrictions + 3 lists in `research`
    # + 1 prompt versions list + 1 examples page + 1 experiments page + 1 evaluator GET
    assert sent == 12
    assert f"Live read: {sent} requests (0 retries)." in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("GET /v2/")]
    assert len(lines) == sent and all(" -> 200 (" in line for line in lines)  # -v: one line a request


def test_out_of_band_change_is_drift_and_drift_only_reads(cli: Cli, tree: Path, server: tuple[str, Any],
                                                          stats: Any, reset_stats: Callable[[], None]) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    assert cli("drift", str(tree)).exit_code == 0
    api = httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"})
    agent = next(i for i in api.get("/v2/integrations", params={"type": "AGENT"}).json()["integrations"]
                 if i["name"] == "support-agent")
    api.patch(f"/v2/integrations/{agent['id']}", json={"type": "AGENT", "description": "changed by hand"}
              ).raise_for_status()
    reset_stats()
    result = cli("drift", str(tree), "--format", "json")
    assert result.exit_code == 2, result.output
    ops = json.loads(result.stdout)["operations"]
    assert [(op["address"], op["changes"][0]["path"]) for op in ops] == [("Integration/support-agent", "description")]
    assert all(key.startswith("GET ") for key in stats()), stats()


def test_stale_plan_file_is_refused_and_says_what_changed(cli: Cli, tree: Path, server: tuple[str, Any],
                                                          tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    edit(tree / "research/prompts.yaml", "description: Summarize a support ticket", "description: New")
    planfile = tmp_path / "plan.json"
    assert cli("plan", str(tree), "--out", str(planfile)).exit_code == 0
    saved = planfile.read_text()
    assert ENV["VENDOR_A_KEY"] not in saved and ENV["AGENT_TOKEN"] not in saved
    api = httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"})
    nim = next(i for i in api.get("/v2/integrations", params={"type": "LLM"}).json()["integrations"]
               if i["name"] == "self-hosted-nim")
    api.patch(f"/v2/integrations/{nim['id']}", json={"type": "LLM", "config": {"model_names": ["x"]}}
              ).raise_for_status()
    result = cli("apply", str(planfile))
    assert result.exit_code == 1
    assert "stale" in result.stderr and "Integration/self-hosted-nim" in result.stderr


def test_saved_plan_applies_when_live_did_not_move(cli: Cli, tree: Path, tmp_path: Path) -> None:
    planfile = tmp_path / "plan.json"
    assert cli("plan", str(tree), "--out", str(planfile)).exit_code == 0
    result = cli("apply", str(planfile))
    assert result.exit_code == 0, result.output
    assert cli("plan", str(tree), "--detailed-exitcode").exit_code == 0


def test_partial_failure_reports_applied_failed_skipped_and_a_rerun_converges(
        cli: Cli, tree: Path, server: tuple[str, Any]) -> None:
    httpx.post(f"{server[0]}/_emulator/faults", headers=EMULATOR_ADMIN, json={"route": "POST /v2/prompts", "status": 500, "times": 20}
               ).raise_for_status()
    result = cli("apply", str(tree), "--auto-approve", "--parallelism", "2")
    assert result.exit_code == 1
    assert "Failed: 1" in result.stdout and "Skipped: 2" in result.stdout and "Applied: 6" in result.stdout
    assert "500 Internal server error" in result.stdout
    httpx.delete(f"{server[0]}/_emulator/faults", headers=EMULATOR_ADMIN).raise_for_status()
    rerun = cli("apply", str(tree), "--auto-approve")
    assert rerun.exit_code == 0, rerun.output
    assert "Applied: 3" in rerun.stdout  # only what had not been done
    api = httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"})
    names = [i["name"] for i in api.get("/v2/integrations", params={"type": "LLM", "limit": 100}).json()["integrations"]]
    assert sorted(names) == ["self-hosted-nim", "vendor-a-prod"]  # nothing created twice


def test_export_round_trip_plans_empty(cli: Cli, tree: Path, tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    out = tmp_path / "exported"
    result = cli("export", "--out", str(out))
    assert result.exit_code == 0, result.output
    secrets_file = (out / "secrets.env.example").read_text()
    env_names = [line.split("=")[0] for line in secrets_file.splitlines() if line and not line.startswith("#")]
    import yaml

    agent = next(d for d in yaml.safe_load_all((out / "integrations.yaml").read_text()) if d["type"] == "AGENT")
    assert "headers" not in agent["config"]  # their names are invisible: left unmanaged, never made up
    assert "# Integration/support-agent (AGENT) has headers live" in secrets_file
    import os

    for name in env_names:
        os.environ[name] = "anything"
    try:
        again = cli("plan", str(out), "--detailed-exitcode")
    finally:
        for name in env_names:
            os.environ.pop(name, None)
    assert again.exit_code == 0, again.output


def test_target_limits_the_run_to_a_resource_and_what_it_depends_on(cli: Cli, tree: Path) -> None:
    result = cli("plan", str(tree), "--target", "Evaluator/research/faithfulness", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert sorted({op["address"] for op in data["operations"]}) == [
        "Evaluator/research/faithfulness", "Integration/vendor-a-prod"]
    assert any("--target" in w for w in data["warnings"])


def test_prune_deletes_only_undeclared_resources_of_named_kinds(cli: Cli, tree: Path, server: tuple[str, Any]) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    api = httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"})
    space = next(s for s in api.get("/v2/spaces").json()["spaces"] if s["name"] == "research")
    api.post("/v2/prompts", json={"space_id": space["id"], "name": "stray", "version": {
        "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
    ).raise_for_status()
    plain = cli("plan", str(tree), "--detailed-exitcode")
    assert plain.exit_code == 0  # nothing is deleted without --prune
    pruned = cli("apply", str(tree), "--prune", "--auto-approve")
    assert pruned.exit_code == 0, pruned.output
    assert "Prompt/research/stray" in pruned.stdout
    names = [p["name"] for p in api.get("/v2/prompts", params={"space_id": space["id"]}).json()["prompts"]]
    assert names == ["summarize-ticket"]


def test_provider_change_is_a_replacement_that_runs_only_with_allow_replace(cli: Cli, tree: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    edit(tree / "integrations/llm.yaml", "provider: NIM_F", "provider: CUSTOM")  # no evaluator uses it
    planned = cli("plan", str(tree))
    assert "-/+ Integration/self-hosted-nim" in planned.stdout and "--allow-replace" in planned.stdout
    refused = cli("apply", str(tree), "--auto-approve")
    assert refused.exit_code == 1 and "--allow-replace" in refused.stderr
    replaced = cli("apply", str(tree), "--auto-approve", "--allow-replace")
    assert replaced.exit_code == 0, replaced.output
    assert cli("plan", str(tree), "--detailed-exitcode").exit_code == 0


def test_text_shaped_like_a_reference_is_sent_as_written_and_converges(cli: Cli, tree: Path,
                                                                       server: tuple[str, Any]) -> None:
    """A template's ``${name}`` placeholder and ``$${var.x}``'s literal are the manifest's text, not
    values apply fills in: shown, sent and read back as written."""
    (tree / "research" / "templated.yaml").write_text(
        "kind: Prompt\nspace: research\nname: templated\n"
        'description: "literal $${var.env} beside ${name}"\n'
        "version:\n  commit_message: first\n  provider: VENDOR_A\n  model: model-large\n"
        '  messages:\n    - {role: user, content: "Hello ${user_name}, about ${ticket:id}"}\n')
    planned = cli("plan", str(tree))
    assert 'description = "literal ${var.env} beside ${name}"' in planned.stdout, planned.output
    assert "Hello ${user_name}, about ${ticket:id}" in planned.stdout
    applied = cli("apply", str(tree), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    prompts = httpx.get(f"{server[0]}/v2/prompts", headers={"Authorization": f"Bearer {ENV['RECONCILER_API_KEY']}"},
                        params={"name": "templated"}).json()["prompts"]
    assert [p["description"] for p in prompts] == ["literal ${var.env} beside ${name}"]
    again = cli("plan", str(tree), "--detailed-exitcode")
    assert again.exit_code == 0, again.output
