"""``plan --rehearse`` and ``apply --rehearse`` (README.md, "Rehearsal") through the CLI
against the emulator over a real socket: the refusal of the issue's scenario (an integration
scoped to space fern, an evaluator in space moss using it) found before anything is written, in
names and at the manifest line that causes it; the report in text, Markdown and JSON; no request
to the real API beyond the plan's own reads; and the better error of a plain apply."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.core import Emulator
from reconciler.emulator.middleware import request_stats
from reconciler.plan.schema import plan_json_schema

ENV = {"RECONCILER_API_KEY": "admin-key", "FERN_KEY": "canary-fern-4e1d", "VENDOR_A_KEY": "canary-vendor-a-0b2c",
       "AGENT_TOKEN": "canary-agent-77d0"}
ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """\
kind: Integration
name: fern-llm
type: LLM
scopings: [{space: fern}]
config:
  provider: VENDOR_A
  api_key: {env: FERN_KEY}
---
kind: Evaluator
space: moss
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} good?"
  classification_choices: {good: 1, bad: 0}
  llm_config:
    integration: fern-llm
    model_name: model-large
"""
INTEGRATION_LINE = "tree.yaml:18"  # `integration: fern-llm`, not `llm_config:` above it


@pytest.fixture
def served(emulator_factory: Callable[..., tuple[str, Emulator]]) -> tuple[str, Emulator]:
    return emulator_factory(spaces=("fern", "moss"))


@pytest.fixture
def run(served: tuple[str, Emulator], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[..., Result]]:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tree.yaml").write_text(SCENARIO, encoding="utf-8")

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--base-url", served[0]], catch_exceptions=False)

    yield invoke


def requests(emu: Emulator) -> dict[str, int]:
    return request_stats(emu).snapshot()


def reset(emu: Emulator) -> None:
    request_stats(emu).reset()


def test_plan_rehearse_finds_the_refusal_in_names_at_the_line_that_causes_it(
        run: Callable[..., Result], served: tuple[str, Emulator]) -> None:
    result = run("plan", "tree.yaml", "--rehearse")
    assert result.exit_code == 1
    out = result.output
    assert "Rehearsal: FAILED" in out
    assert "1 of 2 calls accepted" in out
    refused = next(line for line in out.splitlines() if line.strip().startswith("refused:"))
    assert "Evaluator/moss/judge POST /v2/evaluators" in refused
    assert "404" in refused and "'fern-llm'" in refused and "'moss'" in refused
    assert f"template_config.llm_config.integration at {INTEGRATION_LINE}" in refused
    space_ids = [doc["id"] for _, doc in served[1].store.scan("space")]
    assert not any(space_id in out for space_id in space_ids)  # names, not ids
    assert "did NOT converge" in out
    assert "placeholder" in out  # what a replica cannot know is said
    assert served[1].store.count("integration") == 0  # the replica, not the account, took the create


def test_apply_rehearse_writes_nothing_when_the_rehearsal_fails(
        run: Callable[..., Result], served: tuple[str, Emulator]) -> None:
    reset(served[1])
    result = run("apply", "tree.yaml", "--rehearse", "--auto-approve")
    assert result.exit_code == 1
    assert "nothing was applied" in result.output
    assert all(key.startswith("GET ") for key in requests(served[1])), requests(served[1])
    assert served[1].store.count("integration") == 0 and served[1].store.count("evaluator") == 0


def test_a_rehearsal_sends_no_request_beyond_the_plans_own_reads(
        run: Callable[..., Result], served: tuple[str, Emulator]) -> None:
    reset(served[1])
    assert run("plan", "tree.yaml").exit_code == 0
    plain = requests(served[1])
    reset(served[1])
    assert run("plan", "tree.yaml", "--rehearse").exit_code == 1
    assert requests(served[1]) == plain
    assert all(key.startswith("GET ") for key in plain)


def test_the_rehearsal_is_the_rehearsal_key_of_a_json_plan(run: Callable[..., Result]) -> None:
    result = run("plan", "tree.yaml", "--rehearse", "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    rehearsal = data["rehearsal"]
    assert rehearsal["ok"] is False and rehearsal["calls"] == 2 and rehearsal["accepted"] == 1
    assert rehearsal["converged"] is False
    [refusal] = rehearsal["refused"]
    assert refusal["status"] == 404
    assert refusal["address"] == "Evaluator/moss/judge"
    assert "'fern-llm'" in refusal["detail"] and "'moss'" in refusal["detail"]
    assert refusal["sources"] == [f"template_config.llm_config.integration at {INTEGRATION_LINE}"]
    assert rehearsal["unknown"]
    assert [op["action"] for op in data["operations"]] == ["create", "create"]  # the plan itself is intact
    schema = plan_json_schema()
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(data))
    assert "rehearsal" in schema["properties"]


def test_the_rehearsal_is_a_line_at_the_top_of_a_markdown_plan(run: Callable[..., Result]) -> None:
    result = run("plan", "tree.yaml", "--rehearse", "--format", "markdown")
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines[0] == "### reconciler plan"
    assert lines[1].startswith("**Rehearsal: FAILED")
    assert "'fern-llm'" in result.stdout and INTEGRATION_LINE in result.stdout


def test_a_plain_apply_names_the_refusal_by_name_at_the_line_of_the_integration(
        run: Callable[..., Result], served: tuple[str, Emulator]) -> None:
    result = run("apply", "tree.yaml", "--auto-approve")
    assert result.exit_code == 1
    integration_id = served[1].store.scan("integration")[0][1]["id"]
    assert integration_id not in result.output
    assert "no LLM integration 'fern-llm' is visible from space 'moss'" in result.output
    assert f"template_config.llm_config.integration at {INTEGRATION_LINE}" in result.output


def test_a_sound_plan_rehearses_clean_and_apply_rehearse_then_applies(
        emulator_factory: Callable[..., tuple[str, Emulator]], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    url, emu = emulator_factory()
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    tree = tmp_path / "manifests"
    shutil.copytree(ROOT / "manifests", tree)

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--base-url", url], catch_exceptions=False)

    planned = invoke("plan", str(tree), "--rehearse", "--detailed-exitcode")
    assert planned.exit_code == 2, planned.output
    assert "Rehearsal: passed" in planned.output and "the replica converged" in planned.output
    assert emu.store.count("prompt") == 0
    applied = invoke("apply", str(tree), "--rehearse", "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert "Rehearsal: passed" in applied.output
    assert "Apply complete" in applied.output
    again = invoke("plan", str(tree), "--rehearse", "--detailed-exitcode")
    assert again.exit_code == 0, again.output
    assert "nothing to rehearse" in again.output


def test_rehearsal_of_changes_to_existing_resources_converges(
        emulator_factory: Callable[..., tuple[str, Emulator]], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """Updates, new versions, label moves, example changes and restrictions on an account that
    exists: the replica (same ids) takes every call and converges."""
    url, emu = emulator_factory()
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    tree = tmp_path / "manifests"
    shutil.copytree(ROOT / "manifests", tree)
    assert CliRunner().invoke(main, ["apply", str(tree), "--auto-approve", "--base-url", url]).exit_code == 0
    for path in tree.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("You summarize support tickets.", "You summarize tickets tersely.")
                        .replace("temperature: 0.2", "temperature: 0.3"), encoding="utf-8")
    for path in tree.rglob("*.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        path.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")  # one example deleted
    result = CliRunner().invoke(main, ["plan", str(tree), "--rehearse", "--base-url", url])
    assert result.exit_code == 0, result.output
    assert "Rehearsal: passed" in result.output, result.output


def test_a_rehearsal_that_does_not_converge_fails(run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    import reconciler.rehearse as rehearse_module

    real = rehearse_module.make_plan

    def stubborn(manifests: Any, live: Any, options: Any) -> Any:  # the re-plan still wants the first call
        plan = real(manifests, live, options)
        return plan if plan.operations else real(manifests, type(live)(spaces=live.spaces), options)

    monkeypatch.setattr(rehearse_module, "make_plan", stubborn)
    (Path.cwd() / "tree.yaml").write_text(SCENARIO.split("---")[0].replace("{space: fern}", "{space: moss}"),
                                          encoding="utf-8")
    result = run("plan", "tree.yaml", "--rehearse")
    assert result.exit_code == 1
    assert "1 of 1 call accepted" in result.output and "did NOT converge" in result.output
    assert "still differs after the replica's apply: Integration/fern-llm" in result.output


def test_a_plain_plan_warns_that_the_integration_is_not_visible_from_the_evaluators_space(
        run: Callable[..., Result]) -> None:
    result = run("plan", "tree.yaml")
    assert result.exit_code == 0
    assert ("Warning: Evaluator/moss/judge: template_config.llm_config.integration: the LLM integration "
            "'fern-llm' is scoped to space 'fern', so it is not visible from space 'moss': the API will refuse "
            f"the evaluator (404) ({INTEGRATION_LINE})") in result.output
    (Path.cwd() / "tree.yaml").write_text(SCENARIO.replace("{space: fern}", "{space: moss}"), encoding="utf-8")
    visible = run("plan", "tree.yaml", "--rehearse")
    assert visible.exit_code == 0, visible.output
    assert "Warning" not in visible.output and "Rehearsal: passed" in visible.output


def test_apply_of_a_saved_plan_rehearses_it_and_writes_nothing_when_it_fails(
        run: Callable[..., Result], served: tuple[str, Emulator]) -> None:
    assert run("plan", "tree.yaml", "--out", "plan.json").exit_code == 0
    reset(served[1])
    result = run("apply", "plan.json", "--rehearse")
    assert result.exit_code == 1
    assert "refused: Evaluator/moss/judge" in result.output and "'fern-llm'" in result.output
    assert "nothing was applied" in result.output
    assert all(key.startswith("GET ") for key in requests(served[1]))
    assert served[1].store.count("integration") == 0
