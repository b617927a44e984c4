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


# ---------------------------------------------------------------------- the same checks, in process


def bound_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A tree of two manifests, a var file and a policy file in ``tmp_path`` (the current
    directory), and the plan saved from it (``plan --out``)."""
    from reconciler.plan.model import Plan, PlanOptions
    from reconciler.saved import with_sources

    monkeypatch.chdir(tmp_path)
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "a.yaml").write_text("kind: Prompt\n")
    (tmp_path / "manifests" / "b.yaml").write_text("kind: Dataset\n")
    (tmp_path / "vars.yaml").write_text("x: 1\n")
    (tmp_path / "policy.yaml").write_text("kind: Policy\n")
    plan = Plan(manifests=("manifests",), options=PlanOptions(var_files=("vars.yaml",), policies=("policy.yaml",)))
    return with_sources(plan, str(tmp_path))


def refusal(call: Callable[[], Any]) -> str:
    from reconciler.errors import PlanError

    with pytest.raises(PlanError) as refused:
        call()
    return str(refused.value)


def test_a_saved_plan_records_the_digest_of_each_file_it_was_made_from(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from reconciler.saved import Bound, bound_sources

    plan = bound_tree(tmp_path, monkeypatch)

    assert plan.workdir == str(tmp_path)
    assert plan.sources == {name: "sha256:" + hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
                            for name in ("manifests/a.yaml", "manifests/b.yaml", "policy.yaml", "vars.yaml")}
    assert bound_sources(plan, "plan.json") == Bound((f"{tmp_path}/manifests",), (f"{tmp_path}/vars.yaml",),
                                                     (f"{tmp_path}/policy.yaml",))


def test_a_saved_plan_is_found_from_where_it_was_made_and_checked_inside_the_tree_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.saved import bound_sources, from_workdir

    plan = bound_tree(tmp_path, monkeypatch)
    monkeypatch.chdir("/")

    assert bound_sources(plan, "plan.json", tree="/").manifests == (f"{tmp_path}/manifests",)  # the root holds all
    assert bound_sources(plan, "plan.json", tree=str(tmp_path)).manifests == (f"{tmp_path}/manifests",)
    assert from_workdir(plan, "elsewhere.yaml") == "elsewhere.yaml"  # not there: as given
    assert from_workdir(plan, "/abs/a.yaml") == "/abs/a.yaml"


def test_every_file_that_differs_is_missing_or_was_added_is_named(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.saved import bound_sources

    plan = bound_tree(tmp_path, monkeypatch)
    (tmp_path / "manifests" / "a.yaml").write_text("kind: Prompt\nname: changed\n")
    (tmp_path / "manifests" / "b.yaml").unlink()
    (tmp_path / "manifests" / "c.yaml").write_text("kind: Evaluator\n")
    (tmp_path / "policy.yaml").unlink()

    assert refusal(lambda: bound_sources(plan, "plan.json")) == (
        "plan.json: refused before any request: the plan is bound to the files it was made from, and these are "
        "not them (make the plan again from this tree):\n"
        "  manifests/a.yaml: differs from the file the plan was made from\n"
        "  manifests/c.yaml: not among the files the plan was made from (added since?)\n"
        "  manifests/b.yaml: missing\n"
        "  policy.yaml: missing")


def test_a_file_of_the_plan_outside_the_working_tree_is_refused(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.saved import bound_sources

    plan = bound_tree(tmp_path, monkeypatch)
    (tmp_path / "work").mkdir()

    assert refusal(lambda: bound_sources(plan, "plan.json", tree=str(tmp_path / "work"))).endswith(
        f"  manifests/a.yaml: lies outside the working tree ({tmp_path / 'work'})\n"
        f"  manifests/b.yaml: lies outside the working tree ({tmp_path / 'work'})\n"
        f"  policy.yaml: lies outside the working tree ({tmp_path / 'work'})\n"
        f"  vars.yaml: lies outside the working tree ({tmp_path / 'work'})")


def test_a_plan_without_manifests_digests_or_with_unsigned_variables_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from reconciler.saved import PLAN_KEY_ENV, bound_sources

    monkeypatch.delenv(PLAN_KEY_ENV, raising=False)
    plan = bound_tree(tmp_path, monkeypatch)
    refused = "plan.json: refused before any request: "

    assert refusal(lambda: bound_sources(replace(plan, manifests=("-",)), "plan.json")) == refused + (
        "the plan file names no manifest files it can be checked against (made from standard input?): plan and "
        "apply from the manifests")
    assert refusal(lambda: bound_sources(replace(plan, manifests=()), "plan.json")).startswith(
        refused + "the plan file names no manifest files")
    assert refusal(lambda: bound_sources(replace(plan, sources={}), "plan.json")) == refused + (
        "the plan file records no digests of its manifests, var files and policies (made by an older reconciler, "
        "or edited): make the plan again")
    with_variables = replace(plan, options=replace(plan.options, variables=("a=1", "b=x=y")))
    assert refusal(lambda: bound_sources(with_variables, "plan.json")) == refused + (
        "the plan file sets variables (--var a, --var b): an unsigned plan file cannot choose values the manifests "
        "use; put them in a var file (bound by its digest), or sign plans (RECONCILER_PLAN_KEY)")
    monkeypatch.setenv(PLAN_KEY_ENV, "k")
    assert bound_sources(with_variables, "plan.json").manifests == (f"{tmp_path}/manifests",)


def test_a_plan_made_from_standard_input_records_no_digest_of_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    from reconciler.plan.model import Plan
    from reconciler.saved import sources_of

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text("kind: Prompt\n")
    (tmp_path / "-").write_text("kind: Dataset\n")  # a file of that name is not what "-" stands for
    assert sources_of(Plan(manifests=("-", "a.yaml", "gone.yaml"))) == {
        "a.yaml": "sha256:" + hashlib.sha256(b"kind: Prompt\n").hexdigest()}


# ---------------------------------------------------------------------- signing, in process


def test_the_plan_key_is_read_stripped_and_an_empty_one_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.errors import ConfigError
    from reconciler.saved import PLAN_KEY_ENV, plan_key

    monkeypatch.delenv(PLAN_KEY_ENV, raising=False)
    assert plan_key() is None
    monkeypatch.setenv(PLAN_KEY_ENV, " k3y \n")
    assert plan_key() == b"k3y"
    monkeypatch.setenv(PLAN_KEY_ENV, " \n")
    with pytest.raises(ConfigError) as refused:
        plan_key()
    assert str(refused.value) == ("RECONCILER_PLAN_KEY is set but empty: set it to the shared signing key, or "
                                  "unset it")


def test_a_signature_is_an_hmac_of_the_plan_files_bytes_written_beside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib
    import hmac

    from reconciler.saved import PLAN_KEY_ENV, signature_path, signed_files

    monkeypatch.setenv(PLAN_KEY_ENV, "k")
    assert signed_files('{"é": 1}') == ((".sig", "hmac-sha256:" + hmac.new(
        b"k", '{"é": 1}'.encode(), hashlib.sha256).hexdigest() + "\n"),)
    assert signature_path("out/plan.json") == Path("out/plan.json.sig")
    monkeypatch.delenv(PLAN_KEY_ENV)
    assert signed_files("{}") == ()


def test_a_plan_file_must_match_its_signature_when_a_key_is_set(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.saved import PLAN_KEY_ENV, check_signature, signed_files

    planfile, data = tmp_path / "plan.json", b'{"operations": []}'
    sig = tmp_path / "plan.json.sig"
    monkeypatch.delenv(PLAN_KEY_ENV, raising=False)
    check_signature(str(planfile), data)  # no key: nothing to check
    monkeypatch.setenv(PLAN_KEY_ENV, "k")

    assert refusal(lambda: check_signature(str(planfile), data)) == (
        f"{planfile}: refused before any request: RECONCILER_PLAN_KEY is set and the plan file is not signed "
        "(plan.json.sig not found next to it): make and save the plan with the same key (plan --out)")
    good = signed_files(data.decode())[0][1]
    sig.write_text(good)
    check_signature(str(planfile), data)
    assert refusal(lambda: check_signature(str(planfile), data + b" ")) == (
        f"{planfile}: refused before any request: the plan file does not match its signature (plan.json.sig): it "
        "was altered after it was saved, or signed with another key")
    sig.write_text(good + " " * (200 - len(good)) + "and what follows")  # 200 characters read: the rest ignored
    check_signature(str(planfile), data)
    sig.write_bytes(b"\xff\xfe" + good.encode())  # not ASCII: refused, not a crash
    assert "does not match its signature" in refusal(lambda: check_signature(str(planfile), data))


# ---------------------------------------------------------------------- each operation against the plan made again


def live_named() -> Any:
    from reconciler.model import (
        DatasetObject,
        EvaluatorObject,
        LiveDataset,
        LiveEvaluator,
        LiveIntegration,
        LivePrompt,
        LiveSpace,
        LiveState,
        PromptObject,
    )

    return LiveState(
        spaces=[LiveSpace.read({"id": "S1", "name": "research"})],
        integrations={("LLM", "vendor"): LiveIntegration.read({"id": "I1", "type": "LLM", "name": "vendor"})},
        prompts={("S1", "p"): LivePrompt(PromptObject.read({"id": "P1", "name": "p"}))},
        datasets={("S9", "d"): LiveDataset(DatasetObject.read({"id": "D1", "name": "d"}))},  # a space not read
        evaluators={("S1", "e"): LiveEvaluator(EvaluatorObject.read({"id": "E1", "name": "e"}))})


def op(id: str, method: str = "PATCH", path: str = "/v2/prompts/P1", **fields: Any) -> Any:
    from reconciler.plan.model import Operation

    labels = {"address": "Prompt/research/p", "action": "update", "kind": "Prompt", "name": "p", "space": "research"}
    return Operation(id=id, method=method, path=path, **{**labels, **fields})


def test_each_operation_unlike_the_plan_made_again_is_named_with_what_it_does_to_which_object() -> None:
    from reconciler.plan.model import Change, Plan
    from reconciler.saved import unplanned

    fresh = Plan((op("u", "PATCH", "/v2/prompts/P1", body={"description": "new"},
                     changes=(Change("description", "old", "new"),)),
                  op("m", "PATCH", "/v2/prompts/P1", note="n"),
                  op("same", "POST", "/v2/prompts"),
                  op("later", "POST", "/v2/evaluators/E1/versions")))
    saved = Plan((op("u", "DELETE", "/v2/integrations/I1", body={"description": "new"},
                     changes=(Change("description", "old", "other"),)),
                  op("m", "PATCH", "/v2/prompts/P1", note="n", depends_on=("u",)),
                  op("same", "POST", "/v2/prompts"),
                  op("x", "DELETE", "/v2/datasets/D1", action="delete"),
                  op("y", "DELETE", "/v2/spaces/unknown")))

    assert unplanned(saved, fresh, live_named()) == [
        "operation 'u': DELETE /v2/integrations/I1 (on Integration/vendor): its method, path, changes differ from "
        "the call the manifests plan",
        "operation 'm': PATCH /v2/prompts/P1 (on Prompt/research/p): its depends_on differ from the call the "
        "manifests plan",
        "operation 'x': DELETE /v2/datasets/D1 (on Dataset/S9/d), labelled delete Prompt/research/p: the manifests "
        "plan no such call against live state",
        "operation 'y': DELETE /v2/spaces/unknown, labelled update Prompt/research/p: the manifests plan no such "
        "call against live state",
        "operation 'later': planned against live state now, not in the plan file"]
    assert unplanned(fresh, fresh, live_named()) == []


def test_an_operation_is_compared_field_by_field_and_change_by_change() -> None:
    from reconciler.plan.model import Change, Plan
    from reconciler.saved import unplanned

    def differs(**fields: Any) -> list[str]:
        base = {"body": {"a": 1}, "secrets": {"/a": "env:A"}, "note": "n", "changes": (Change("a", 0, 1),)}
        call = {"method": "PATCH", "path": "/v2/prompts/P1", **base}
        mine, theirs = op("o", **call), op("o", **{**call, **fields})
        found = unplanned(Plan((mine,)), Plan((theirs,)), live_named())
        return [line.split("its ")[1].split(" differ")[0] for line in found]

    assert differs() == []
    assert differs(body={"a": 2}) == ["body"]
    assert differs(secrets={"/a": "env:B"}) == ["secrets"]
    assert differs(note="m") == ["note"]
    assert differs(changes=(Change("a", 0, 2),)) == ["changes"]
    assert differs(changes=(Change("b", 0, 1),)) == ["changes"]
    assert differs(changes=(Change("a", 5, 1),)) == ["changes"]
    assert differs(path="/v2/prompts/P2") == ["path"]
    assert differs(space="other", name="q", kind="Dataset") == ["kind, name, space"]
    assert differs(address="Prompt/research/q", action="create") == ["action, address"]


# ---------------------------------------------------------------------- planned again, with the plan's options


def test_a_saved_plan_is_planned_again_with_its_own_options(cli: Cli, tree: Path, tmp_path: Path) -> None:
    """A plan made with --prune deletes what the manifests no longer declare: planned again without
    it, its delete would be a call the manifests do not plan."""
    applied_tree(cli, tree)
    (tree / "research" / "evaluators.yaml").unlink()
    planfile = tmp_path / "plan.json"
    made = cli("plan", str(tree), "--prune", "--allow-empty", "--out", str(planfile))
    assert made.exit_code == 0, made.output

    result = cli("apply", str(planfile))

    assert result.exit_code == 0, result.output
    assert "Apply complete" in result.output


def test_a_plan_file_stale_for_several_resources_names_each(cli: Cli, tree: Path, tmp_path: Path,
                                                            server: tuple[str, Any]) -> None:
    import httpx

    planfile, _ = update_plan(cli, tree, tmp_path)
    listed = httpx.get(f"{server[0]}/v2/integrations", headers=EMULATOR_ADMIN).json()["integrations"]
    for i in listed:
        if i["name"] in ("vendor-a-prod", "self-hosted-nim"):
            httpx.patch(f"{server[0]}/v2/integrations/{i['id']}", headers=EMULATOR_ADMIN,
                        json={"type": "LLM", "name": i["name"] + "-x"}).raise_for_status()

    result = cli("apply", str(planfile))

    assert result.exit_code == 1
    assert (f"the plan file {planfile} is stale: live state changed since it was made for "
            "Integration/self-hosted-nim, Integration/vendor-a-prod. Make a new plan.") in result.output


@pytest.mark.parametrize(("extra", "more"), [(21, ["  ... and 1 more"]), (20, [])])
def test_a_refusal_shows_twenty_operations_at_most(cli: Cli, tree: Path, tmp_path: Path, extra: int,
                                                   more: list[str]) -> None:
    planfile, plan = update_plan(cli, tree, tmp_path)
    real = plan["operations"][0]
    plan["operations"] += [{**real, "id": f"{real['address']}#copy-{i:02d}"} for i in range(extra)]
    planfile.write_text(json.dumps(plan))

    result = cli("apply", str(planfile))

    assert result.exit_code == 1
    lines = result.output.splitlines()
    start = lines.index(next(line for line in lines if "its operations are not what its manifests plan" in line))
    assert lines[start].endswith(f"{planfile}: refused before any write: its operations are not what its manifests "
                                 "plan against live state (the file was edited, or live state moved since: make the "
                                 "plan again):")
    shown = lines[start + 1:start + 22]
    assert [line for line in shown if line.startswith("  operation")] == [
        f"  operation '{real['address']}#copy-{i:02d}': PATCH {real['path']} (on {real['address']}), labelled "
        f"update {real['address']}: the manifests plan no such call against live state" for i in range(min(extra, 20))]
    assert [line for line in shown if line.startswith("  ...")] == more
