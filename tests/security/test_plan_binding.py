"""A plan file's labels are tied to what its operations do, and the file is
bound to the manifests, var files and policies it was made from (and, with RECONCILER_PLAN_KEY, to
its signature). Each refusal: exit 1, one error, no traceback, nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.conftest import EMULATOR_ADMIN
from tests.security.test_plan_file import Cli, saved_plan

WRITES = ("POST", "PATCH", "PUT", "DELETE")


def writes(stats: Callable[[], dict[str, int]]) -> dict[str, int]:
    return {k: v for k, v in stats().items() if k.split(" ")[0] in WRITES}


def applied_tree(cli: Cli, tree: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0


def update_plan(cli: Cli, tree: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The quickstart tree applied, then a prompt's description changed: a plan of one update."""
    applied_tree(cli, tree)
    prompts = tree / "research" / "prompts.yaml"
    prompts.write_text(prompts.read_text().replace("description: ", "description: Changed. ", 1))
    planfile, plan = saved_plan(cli, tree, tmp_path)
    assert [op["action"] for op in plan["operations"]] == ["update"], plan["operations"]
    return planfile, plan


def apply_file(cli: Cli, planfile: Path, plan: dict[str, Any] | None, reset_stats: Callable[[], None],
               *extra: str) -> Result:
    if plan is not None:
        planfile.write_text(json.dumps(plan))
    reset_stats()
    return cli("apply", str(planfile), *extra)


# ---------------------------------------------------------------------- high 1: labels and bodies


def test_a_delete_labelled_as_a_prompt_update_is_refused_before_any_request(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None]) -> None:
    planfile, plan = update_plan(cli, tree, tmp_path)
    plan["operations"][0].update(method="DELETE", path="/v2/integrations/SW50ZWdyYXRpb246MQ", body=None)

    result = apply_file(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1 and "Traceback" not in result.output
    op = plan["operations"][0]
    assert (f"operation {op['id']!r}: labelled update Prompt ({op['address']}), but DELETE "
            "/v2/integrations/SW50ZWdyYXRpb246MQ is the delete or replace of an Integration") in result.output
    assert stats() == {}


def test_a_truthfully_labelled_delete_the_manifests_do_not_plan_is_refused(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None], server: tuple[str, Any]) -> None:
    """Labelled as what it is, a protected integration's delete still never runs: apply plans again
    from the manifests (protect, the integration guard, the policies) and the file must be that plan."""
    import httpx

    planfile, plan = update_plan(cli, tree, tmp_path)
    listed = httpx.get(f"{server[0]}/v2/integrations", headers=EMULATOR_ADMIN).json()
    vendor = next(i for i in listed["integrations"] if i["name"] == "vendor-a-prod")
    plan["operations"].append({
        "id": "Integration/vendor-a-prod#delete", "address": "Integration/vendor-a-prod", "action": "delete",
        "kind": "Integration", "name": "vendor-a-prod", "method": "DELETE",
        "path": f"/v2/integrations/{vendor['id']}", "body": None, "changes": [], "depends_on": []})

    result = apply_file(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert (f"operation 'Integration/vendor-a-prod#delete': DELETE /v2/integrations/{vendor['id']} (on "
            "Integration/vendor-a-prod), labelled delete Integration/vendor-a-prod: the manifests plan no such "
            "call against live state") in result.output
    assert writes(stats) == {}


def test_a_declared_secret_in_a_body_that_moves_the_agent_elsewhere_is_refused(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None]) -> None:
    planfile, plan = saved_plan(cli, tree, tmp_path)
    op = next(o for o in plan["operations"] if o["address"] == "Integration/support-agent")
    assert op["secrets"]
    op["body"]["config"]["endpoint"] = "https://collector.example.net/steal"

    result = apply_file(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"operation {op['id']!r}: POST /v2/integrations: its body differ from the call the manifests plan" \
        in result.output
    assert "canary" not in result.output
    assert writes(stats) == {}


def test_a_label_changed_on_a_real_call_is_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                  stats: Callable[[], dict[str, int]],
                                                  reset_stats: Callable[[], None]) -> None:
    """The same call under another resource's name (what protect and the policies go by)."""
    planfile, plan = update_plan(cli, tree, tmp_path)
    op = plan["operations"][0]
    op.update(address="Prompt/research/some-other-prompt", name="some-other-prompt")

    result = apply_file(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1 and "its name, address differ from the call the manifests plan" in result.output
    assert writes(stats) == {}


def test_a_central_policy_given_to_apply_judges_what_the_operations_really_do(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None]) -> None:
    planfile, _ = update_plan(cli, tree, tmp_path)
    central = tmp_path / "central.yaml"
    central.write_text("kind: Policy\nname: central\nrules:\n  - name: no-prompt-changes\n"
                       "    match: {kinds: [Prompt]}\n    effect: deny\n")

    result = apply_file(cli, planfile, None, reset_stats, "--policy", str(central))

    assert result.exit_code == 1 and "no-prompt-changes" in result.output
    assert writes(stats) == {}


def test_a_policy_that_cannot_be_evaluated_refuses_the_apply(cli: Cli, tree: Path, tmp_path: Path,
                                                            stats: Callable[[], dict[str, int]],
                                                            reset_stats: Callable[[], None]) -> None:
    planfile, _ = update_plan(cli, tree, tmp_path)
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Policy\nname: broken\nrules:\n  - name: r\n    condition: 'op.nope +'\n"
                      "    effect: deny\n")
    for policy in (str(broken), str(tmp_path / "absent.yaml")):
        result = apply_file(cli, planfile, None, reset_stats, "--policy", policy)

        assert result.exit_code == 1 and "Traceback" not in result.output
        assert policy in result.output
        assert stats() == {}


def test_an_honest_plan_file_applies_and_converges(cli: Cli, tree: Path, tmp_path: Path) -> None:
    planfile, _ = update_plan(cli, tree, tmp_path)
    result = cli("apply", str(planfile))
    assert result.exit_code == 0, result.output
    assert "Apply complete" in result.output


# ---------------------------------------------------------------------- high 2: bound to its files


@pytest.mark.parametrize("form", ["manifests", "manifests/", "./manifests", "manifests/../manifests"])
def test_a_plan_made_from_relative_paths_applies_in_its_tree(cli: Cli, tree: Path, tmp_path: Path,
                                                              form: str) -> None:
    assert tree.parent == tmp_path and tree.name == "manifests"  # the CLI runs in tmp_path
    planfile = tmp_path / "plan.json"
    assert cli("plan", form, "--out", str(planfile)).exit_code == 0
    result = cli("apply", str(planfile))
    assert result.exit_code == 0, result.output


def test_a_manifest_changed_after_the_plan_is_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                      stats: Callable[[], dict[str, int]],
                                                      reset_stats: Callable[[], None]) -> None:
    planfile, _ = saved_plan(cli, tree, tmp_path)
    agents = tree / "integrations" / "agents.yaml"
    agents.write_text(agents.read_text() + "\n")

    result = apply_file(cli, planfile, None, reset_stats)

    assert result.exit_code == 1
    assert f"{agents}: differs from the file the plan was made from" in result.output
    assert stats() == {}


def test_a_file_added_to_a_manifest_directory_is_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                         stats: Callable[[], dict[str, int]],
                                                         reset_stats: Callable[[], None]) -> None:
    """An artifact dropped in the tree cannot declare a variable of the runner's as a secret."""
    planfile, _ = saved_plan(cli, tree, tmp_path)
    extra = tree / "integrations" / "zz-extra.yaml"
    extra.write_text("kind: Integration\nname: support-x\ntype: LLM\nscopings: []\n"
                     "config: {provider: VENDOR_A, api_key: {env: CI_DEPLOY_TOKEN}}\n")

    result = apply_file(cli, planfile, None, reset_stats)

    assert result.exit_code == 1
    assert f"{extra}: not among the files the plan was made from" in result.output
    assert stats() == {}


def test_a_listed_manifest_outside_the_working_tree_is_refused(
        cli: Cli, tree: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        stats: Callable[[], dict[str, int]], reset_stats: Callable[[], None]) -> None:
    """The plan names an extra manifest elsewhere, with its true digest: it is not this tree's."""
    import hashlib

    planfile, plan = saved_plan(cli, tree, tmp_path)
    outside = tmp_path_factory.mktemp("artifact") / "extra.yaml"
    outside.write_text("kind: Prompt\nspace: research\nname: x\ndescription: d\n")
    plan["manifests"].append(str(outside))
    plan["sources"][str(outside)] = "sha256:" + hashlib.sha256(outside.read_bytes()).hexdigest()

    result = apply_file(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1
    assert f"{outside}: lies outside the working tree ({tmp_path.resolve()})" in result.output
    assert stats() == {}


def test_a_plan_file_without_digests_is_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                stats: Callable[[], dict[str, int]],
                                                reset_stats: Callable[[], None]) -> None:
    planfile, plan = saved_plan(cli, tree, tmp_path)
    del plan["sources"]

    result = apply_file(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1 and "records no digests" in result.output
    assert stats() == {}


def test_variables_written_in_an_unsigned_plan_file_are_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                               stats: Callable[[], dict[str, int]],
                                                               reset_stats: Callable[[], None]) -> None:
    """A --var value lives in the file: unsigned, it would choose what the bound manifests say."""
    planfile, _ = saved_plan(cli, tree, tmp_path)
    assert cli("plan", str(tree), "--out", str(planfile), "--var", "endpoint=https://x.example").exit_code == 0

    result = apply_file(cli, planfile, None, reset_stats)

    assert result.exit_code == 1 and "the plan file sets variables (--var endpoint)" in result.output
    assert "https://x.example" not in result.output
    assert stats() == {}


def test_a_signed_plan_applies_and_an_unsigned_or_altered_one_is_refused(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_PLAN_KEY", "shared-plan-key-0d1e")
    planfile, _ = saved_plan(cli, tree, tmp_path)
    sig = Path(f"{planfile}.sig")
    good, signature = planfile.read_bytes(), sig.read_text()
    assert signature.startswith("hmac-sha256:") and "shared-plan-key" not in signature

    planfile.write_bytes(good.replace(b'"operations": [', b'"operations":  [', 1))  # one byte more
    result = apply_file(cli, planfile, None, reset_stats)
    assert result.exit_code == 1 and "does not match its signature" in result.output
    assert stats() == {}

    planfile.write_bytes(good)
    sig.unlink()
    result = apply_file(cli, planfile, None, reset_stats)
    assert result.exit_code == 1 and "is not signed" in result.output
    assert "shared-plan-key" not in result.output
    assert stats() == {}

    sig.write_text(signature)
    result = apply_file(cli, planfile, None, reset_stats)
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------- low 12: hostile plan files


def test_a_five_thousand_digit_integer_is_a_clear_error(cli: Cli, tree: Path, tmp_path: Path,
                                                        stats: Callable[[], dict[str, int]],
                                                        reset_stats: Callable[[], None]) -> None:
    planfile, _ = saved_plan(cli, tree, tmp_path)
    text = planfile.read_text().rstrip()
    planfile.write_text(text[:-1] + ', "x": ' + "9" * 5000 + "}\n")

    result = apply_file(cli, planfile, None, reset_stats)

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "not a valid plan file: Exceeds the limit (4300 digits)" in result.output
    assert stats() == {}


def test_a_plan_file_over_the_size_cap_is_refused_unread(cli: Cli, tmp_path: Path,
                                                         stats: Callable[[], dict[str, int]],
                                                         reset_stats: Callable[[], None],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.plan import planfile as module

    monkeypatch.setattr(module, "MAX_PLAN_BYTES", 1000)
    big = tmp_path / "plan.json"
    big.write_text('{"format_version": "1.3.0", "operations": [], "pad": "' + "x" * 2000 + '"}')

    result = apply_file(cli, big, None, reset_stats)

    assert result.exit_code == 1 and "is over the 1,000-byte limit of a plan file" in result.output
    assert stats() == {}
