"""The steps the commands share (reconciler/workflow.py), called as the CLI and ``watch`` call them:
the client a connection gives, the checks made before any request (``--rotate``, the secrets a plan
sends, a replacement without ``--allow-replace``), the integration guard, the apply step and what it
says when apply did not converge. In-process: the emulator behind the client, no socket."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reconciler.apply.executor import APPLIED, FAILED, ApplyReport, Outcome
from reconciler.client.http import ApiClient
from reconciler.errors import ConfigError, PlanError, SecretError
from reconciler.model import ManifestSet
from reconciler.plan.model import Change, Operation, Plan, PlanOptions, Verdict
from reconciler.telemetry import Telemetry
from reconciler.workflow import (
    Connection,
    apply_and_confirm,
    check_plan_secrets,
    check_replacements,
    connect,
    is_plan_file,
    judge,
    load,
    not_converged,
    plan_against,
    prepare_options,
    reporter,
)


def write(tmp_path: Path, text: str, name: str = "tree") -> Path:
    tree = tmp_path / name
    tree.mkdir(exist_ok=True)
    (tree / "manifests.yaml").write_text(text.lstrip())
    return tree


def op(address: str, method: str = "PATCH", path: str = "/v2/x/1", *, action: str = "update",
       changes: tuple[Change, ...] = (), secrets: dict[str, str] | None = None, op_id: str | None = None) -> Operation:
    kind, _, name = address.partition("/")
    return Operation(id=op_id or f"{address}#{action}", address=address, action=action, kind=kind, name=name,
                     method=method, path=path, changes=changes, secrets=secrets or {})


# ---------------------------------------------------------------------- what apply says when it did not converge


def test_a_plan_left_after_apply_names_each_field_that_still_differs() -> None:
    plan = Plan(operations=(op("Prompt/research/p", changes=(Change(path="description"), Change(path="tags"))),
                            op("Integration/a", changes=(Change(path=""),), path="/v2/integrations/I1")))
    assert str(not_converged(plan)) == (
        "apply did not converge; these still differ after re-reading:\n"
        "  Prompt/research/p: description\n  Prompt/research/p: tags\n  Integration/a: PATCH /v2/integrations/I1")


def test_a_plan_left_after_apply_without_field_changes_names_each_call() -> None:
    plan = Plan(operations=(op("Dataset/research/d", "POST", "/v2/datasets/D1/examples"),
                            op("Integration/a", "DELETE", "/v2/integrations/I1", action="delete")))
    assert str(not_converged(plan)) == (
        "apply did not converge; these still differ after re-reading:\n"
        "  Dataset/research/d: POST /v2/datasets/D1/examples\n  Integration/a: DELETE /v2/integrations/I1")


# ---------------------------------------------------------------------- replacements


def test_a_replacement_is_refused_without_allow_replace_naming_each_resource_once() -> None:
    ops = (op("Integration/b", "DELETE", action="replace", op_id="b1"), op("Integration/b", "POST", action="replace"),
           op("Integration/a", "DELETE", action="replace", op_id="a1"), op("Prompt/s/p"))
    with pytest.raises(PlanError) as refused:
        check_replacements(Plan(operations=ops))
    assert str(refused.value) == ("the plan replaces Integration/a, Integration/b (delete, then create); "
                                  "re-run with --allow-replace to allow it")
    check_replacements(Plan(operations=ops, options=PlanOptions(allow_replace=True)))
    check_replacements(Plan(operations=(op("Prompt/s/p"), op("Integration/a", "DELETE", action="delete"))))


# ---------------------------------------------------------------------- a plan file or manifests


def test_a_saved_plan_is_told_from_manifests_by_its_head(tmp_path: Path) -> None:
    saved = tmp_path / "plan.json"
    saved.write_text('\n  {"format_version": 1, "operations": []}')
    assert is_plan_file([str(saved)])
    assert not is_plan_file([str(saved), str(saved)])  # several paths are manifests
    assert not is_plan_file(["-"])
    assert not is_plan_file([str(tmp_path)])  # a directory
    assert not is_plan_file([str(tmp_path / "absent.json")])
    other = tmp_path / "other.json"
    other.write_text('{"kind": "Prompt", "name": "p"}')
    assert not is_plan_file([str(other)])
    yaml = tmp_path / "m.yaml"
    yaml.write_text('kind: Prompt  # "format_version"\n')
    assert not is_plan_file([str(yaml)])
    late = tmp_path / "late.json"
    late.write_text('{"operations": [' + " " * 600 + '], "format_version": 1}')
    assert not is_plan_file([str(late)])  # only the head is read


# ---------------------------------------------------------------------- --rotate


ROTATE = """
kind: Integration
name: vendor-a-prod
type: LLM
config: {provider: VENDOR_A, api_key: {env: ROTATE_KEY}}
---
kind: Integration
name: vendor-b-prod
type: LLM
config: {provider: VENDOR_A, api_key: {env: ROTATE_KEY}}
---
kind: Prompt
space: research
name: p
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
"""


@pytest.fixture
def rotating(tmp_path: Path) -> ManifestSet:
    return load([str(write(tmp_path, ROTATE))])


def test_rotate_names_each_resource_once_by_its_address(rotating: ManifestSet) -> None:
    options = prepare_options(rotating, PlanOptions(rotate=("Integration/vendor-b-prod", "Integration/vendor-a-prod",
                                                            "Integration/vendor-b-prod")))
    assert options.rotate == ("Integration/vendor-a-prod", "Integration/vendor-b-prod")
    assert options.resend == ()
    assert prepare_options(rotating, PlanOptions()) == PlanOptions()


@pytest.mark.parametrize(("target", "message"), [
    ("Integration/vendor-a-prd", "--rotate Integration/vendor-a-prd: no such resource in the manifests; "
                                 "did you mean Integration/vendor-a-prod?"),
    ("Nothing/alike", "--rotate Nothing/alike: no such resource in the manifests"),
    ("Prompt/research/p", "--rotate Prompt/research/p: a Prompt has no write-only secrets (only integrations do)"),
    ("Prompt/p", "--rotate Prompt/p: a Prompt has no write-only secrets (only integrations do)"),
])
def test_rotate_of_a_resource_without_secrets_or_not_declared_is_refused(
        rotating: ManifestSet, target: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        prepare_options(rotating, PlanOptions(rotate=(target,)))
    assert str(refused.value) == message


# ---------------------------------------------------------------------- the secrets a plan sends


def test_a_saved_plan_whose_secrets_do_not_resolve_is_refused_naming_each_use(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNSET_A", raising=False)
    monkeypatch.delenv("UNSET_B", raising=False)
    monkeypatch.setenv("SET_C", "canary-set-c")
    one = Plan(operations=(op("Integration/a", secrets={"/config/api_key": "env:UNSET_A"}),
                           op("Integration/c", secrets={"/config/api_key": "env:SET_C"})))
    with pytest.raises(SecretError) as refused:
        check_plan_secrets(one, None)
    message = str(refused.value)
    assert message.startswith("cannot apply: 1 secret the plan sends does not resolve (nothing was sent):\n  ")
    assert message.endswith("; used by Integration/a (config.api_key)") and "UNSET_A" in message
    two = Plan(operations=(
        op("Integration/a", secrets={"/config/headers/X-B": "env:UNSET_B", "/config/api_key": "env:UNSET_A"}),
        op("Integration/b", secrets={"/config/api_key": "env:UNSET_A"})))
    with pytest.raises(SecretError) as refused:
        check_plan_secrets(two, None)
    lines = str(refused.value).splitlines()
    assert lines[0] == "cannot apply: 2 secrets the plan sends do not resolve (nothing was sent):"
    assert len(lines) == 3 and "canary" not in str(refused.value)
    assert lines[1].endswith("; used by Integration/a (config.api_key), Integration/b (config.api_key)")
    assert lines[2].endswith("; used by Integration/a (config.headers.X-B)")


def test_a_plan_that_sends_no_secret_or_only_resolved_ones_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SET_C", "canary-set-c")
    check_plan_secrets(Plan(operations=(op("Prompt/s/p"),)), None)
    check_plan_secrets(Plan(operations=(op("Integration/c", secrets={"/config/api_key": "env:SET_C"}),)), None)


# ---------------------------------------------------------------------- policies


def test_a_saved_plan_without_its_manifests_keeps_the_verdicts_it_recorded() -> None:
    plan = Plan(operations=(op("Integration/a", "DELETE", action="delete"),),
                policy=(Verdict(rule="r", effect="deny", address="Integration/a"),))
    assert judge(plan, None) is plan


# ---------------------------------------------------------------------- the client a connection gives


@pytest.fixture
def emulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Connection:
    monkeypatch.setenv("RECONCILER_API_KEY", "admin-key")
    return Connection(emulator=str(tmp_path / "state.db"), parallelism=3)


@pytest.mark.parametrize(("trace", "traced"), [(None, True), (True, True), (False, False)])
def test_a_client_with_a_listener_traces_every_request_unless_told_not_to(
        emulated: Connection, trace: bool | None, traced: bool) -> None:
    heard: list[str] = []
    with connect(emulated, on_event=heard.append, trace=trace) as client:
        client.run(client.get("/v2/spaces"))
        assert client.parallelism == 3 and not client.read_only and reporter(client) is None
    assert any("GET" in line and "/v2/spaces" in line for line in heard) is traced


def test_a_read_only_client_refuses_to_write(emulated: Connection) -> None:
    with connect(emulated, read_only=True) as client:
        assert client.read_only
        with pytest.raises(Exception, match="read-only"):
            client.run(client.post("/v2/integrations", {"name": "x"}))


def test_under_json_logs_each_request_is_an_event_not_a_line(emulated: Connection) -> None:
    stream = io.StringIO()
    telemetry = Telemetry(log_format="json", stream=stream)
    heard: list[str] = []
    with connect(emulated, on_event=heard.append, telemetry=telemetry) as client:
        assert reporter(client) is telemetry
        client.run(client.get("/v2/spaces"))
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(e["event"], e["method"], e["path"]) for e in events if e["event"] == "request"] == [
        ("request", "GET", "/v2/spaces")]
    assert not any("/v2/spaces" in line for line in heard)


def test_text_logs_keep_each_request_a_line(emulated: Connection) -> None:
    stream = io.StringIO()
    heard: list[str] = []
    with connect(emulated, on_event=heard.append, telemetry=Telemetry(stream=stream)) as client:
        client.run(client.get("/v2/spaces"))
    assert any("/v2/spaces" in line for line in heard)
    assert '"request"' not in stream.getvalue()


def test_the_key_is_read_from_the_variable_an_environment_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "unknown-key-0000")
    monkeypatch.setenv("STAGING_KEY", "admin-key")
    with connect(Connection(emulator=str(tmp_path / "s.db"), api_key_env="STAGING_KEY")) as client:
        assert client.run(client.get("/v2/spaces"))["spaces"]
    monkeypatch.setenv("RECONCILER_API_KEY", "admin-key")
    monkeypatch.setenv("STAGING_KEY", "unknown-key-0000")  # another variable is not read in its place
    with pytest.raises(ConfigError) as refused:
        connect(Connection(emulator=str(tmp_path / "s.db"), api_key_env="STAGING_KEY"))
    assert "unknown-key-0000" not in str(refused.value)


# ---------------------------------------------------------------------- the apply step


class Executed:
    """A stand-in for ``run_apply``: the report it is given, and what it was called with."""

    def __init__(self, report: ApplyReport) -> None:
        self.report = report
        self.calls: list[dict[str, Any]] = []

    def __call__(self, plan: Plan, client: ApiClient, **kwargs: Any) -> ApplyReport:
        self.calls.append(kwargs)
        return self.report


GUARDED = """
kind: Ownership
name: support
spaces: [research]
integrations: ["support-*"]
---
kind: Integration
name: support-llm
type: LLM
config: {provider: PROVIDER, api_key: {env: SUPPORT_KEY}}
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: INTEGRATION, model_name: m}
"""


@pytest.fixture
def account(emulated: Connection, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiClient]:
    monkeypatch.setenv("SUPPORT_KEY", "canary-support-key")
    with connect(emulated) as client:
        yield client


def applied(client: ApiClient, tree: Path, **options: Any) -> tuple[ManifestSet, Plan]:
    manifests = load([str(tree)])
    live, plan = plan_against(manifests, client, PlanOptions(**options))
    report, again = apply_and_confirm(plan, client, manifests, live, parallelism=2)
    assert report.ok and again is not None and again.empty
    return manifests, plan


def test_apply_hands_over_its_report_and_confirms_convergence_by_reading_again(
        account: ApiClient, tmp_path: Path) -> None:
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    manifests = load([str(tree)])
    live, plan = plan_against(manifests, account, PlanOptions())
    heard: list[ApplyReport] = []
    report, again = apply_and_confirm(plan, account, manifests, live, parallelism=2, on_report=heard.append)
    assert heard == [report] and report.ok and len(report.of(APPLIED)) == len(plan.operations) == 2
    assert again is not None and again.empty


def test_a_rotation_is_not_sent_again_by_the_plan_that_confirms_it(account: ApiClient, tmp_path: Path) -> None:
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    manifests, _ = applied(account, tree)
    for options in ({"rotate": ("Integration/support-llm",)}, {"rotate_secrets": True}):
        live, plan = plan_against(manifests, account, prepare_options(manifests, PlanOptions(**options)))
        assert [o.method for o in plan] == ["PATCH"]
        report, again = apply_and_confirm(plan, account, manifests, live, parallelism=2)
        assert report.ok and again is not None and again.empty, again


def test_an_apply_is_not_confirmed_when_interrupted_without_manifests_or_with_failures(
        account: ApiClient, tmp_path: Path) -> None:
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    manifests = load([str(tree)])
    live, plan = plan_against(manifests, account, PlanOptions())
    failed = ApplyReport(outcomes=[Outcome(op=plan.operations[0], status=FAILED, detail="500")])
    for report, given in ((ApplyReport(interrupted=True), manifests), (ApplyReport(), None), (failed, manifests)):
        execute = Executed(report)
        assert apply_and_confirm(plan, account, given, live, parallelism=7, fail_fast=True,
                                 execute=execute) == (report, None)
        assert execute.calls[0]["parallelism"] == 7 and execute.calls[0]["fail_fast"] is True
        assert execute.calls[0]["live"] is live
    # watch re-reads after failed calls too: its gauges show what is left
    report, again = apply_and_confirm(plan, account, manifests, live, parallelism=2, execute=Executed(failed),
                                      confirm_failed=True)
    assert report is failed and again is not None and len(again.operations) == 2


# ---------------------------------------------------------------------- the integration guard


def test_an_integration_a_live_evaluator_uses_is_not_deleted(account: ApiClient, tmp_path: Path) -> None:
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    manifests, _ = applied(account, tree)
    pruned = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm")
                   .split("---")[0], "pruned")
    with pytest.raises(PlanError) as refused:
        plan_against(load([str(pruned)]), account, PlanOptions(prune=True, allow_empty=True))
    assert str(refused.value) == (
        "cannot plan:\n  Integration/support-llm: the plan would delete it, and it is used by evaluator judge in "
        "space research; move that evaluator to another integration first")


def test_an_integration_a_live_evaluator_uses_is_not_replaced(account: ApiClient, tmp_path: Path) -> None:
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    applied(account, tree)
    (tree / "manifests.yaml").write_text(GUARDED.replace("PROVIDER", "VENDOR_C").replace("INTEGRATION", "support-llm"))
    with pytest.raises(PlanError, match="support-llm: the plan would replace it, and it is used by evaluator judge"):
        plan_against(load([str(tree)]), account, PlanOptions(allow_replace=True))


def test_a_delete_waits_for_the_evaluator_moved_off_the_integration_in_the_same_plan(
        account: ApiClient, tmp_path: Path) -> None:
    both = GUARDED + """
---
kind: Integration
name: support-next
type: LLM
config: {provider: VENDOR_A, api_key: {env: SUPPORT_KEY}}
"""
    tree = write(tmp_path, both.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    applied(account, tree)
    moved = both.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-next")
    (tree / "manifests.yaml").write_text(moved.replace("name: support-llm", "name: support-gone"))
    manifests = load([str(tree)])
    live, plan = plan_against(manifests, account, PlanOptions(prune=True))
    ids = [o.id for o in plan]
    delete = next(o for o in plan if o.method == "DELETE" and o.address == "Integration/support-llm")
    move = next(o for o in plan if o.kind == "Evaluator")
    assert move.id in delete.depends_on and ids.index(move.id) < ids.index(delete.id)
    report, again = apply_and_confirm(plan, account, manifests, live, parallelism=4)
    assert report.ok and again is not None and again.empty


def test_an_evaluator_moved_to_the_integration_that_replaces_the_deleted_one_is_still_refused(
        account: ApiClient, tmp_path: Path) -> None:
    """The new integration's id is known only after the delete: the evaluator cannot move there first."""
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    applied(account, tree)
    changed = GUARDED.replace("PROVIDER", "VENDOR_C").replace("INTEGRATION", "support-llm")
    (tree / "manifests.yaml").write_text(changed.replace("commit_message: first", "commit_message: second")
                                         .replace("model_name: m", "model_name: m2"))
    with pytest.raises(PlanError, match="support-llm: the plan would replace it"):
        plan_against(load([str(tree)]), account, PlanOptions(allow_replace=True))


def test_a_file_named_dash_is_still_standard_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("-").write_text('{"format_version": 1, "operations": []}')
    assert not is_plan_file(["-"])
    assert is_plan_file(["./-"])


@pytest.mark.parametrize(("padding", "saved"), [(495, True), (496, False)])
def test_a_saved_plan_says_its_format_in_the_first_512_bytes(tmp_path: Path, padding: int, saved: bool) -> None:
    head = "{" + " " * padding + '"format_version": 1}'  # the key's closing quote at byte 511 or 512
    (tmp_path / "plan.json").write_text(head)
    assert is_plan_file([str(tmp_path / "plan.json")]) is saved


# ---------------------------------------------------------------------- --since


AGENT = """
kind: Integration
name: agent-one
type: AGENT
description: "${var.team} agent from ${var.place}"
config:
  endpoint: https://agent.example.com/run
  headers: {X-Agent-Token: {env: AGENT_TOKEN}}
  input_schema: {type: object, properties: {q: {type: string}}}
"""


def test_since_resends_the_secrets_declared_since_that_revision_with_the_same_variables(tmp_path: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main",
                        *args], cwd=tmp_path, check=True, capture_output=True, timeout=60)

    tree = write(tmp_path, AGENT)
    (tmp_path / "vars.yaml").write_text("place: berlin\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "agent")
    (tree / "manifests.yaml").write_text(AGENT.replace("{X-Agent-Token: {env: AGENT_TOKEN}}",
                                                       "{X-Agent-Token: {env: AGENT_TOKEN}, X-New: {env: NEW_TOKEN}}"))
    variables, var_files = ("team=support",), (str(tmp_path / "vars.yaml"),)
    manifests = load([str(tree)], var_assignments=variables, var_files=var_files)
    options = prepare_options(manifests, PlanOptions(since="HEAD", variables=variables, var_files=var_files))
    assert options.resend == ("Integration/agent-one config.headers",)  # a header map is sent whole
    assert options.since == "HEAD" and options.variables == variables


# ---------------------------------------------------------------------- the secrets a plan sends, from manifests


SECRETS = """
kind: Integration
name: a
type: LLM
config: {provider: VENDOR_A, api_key: {env: UNSET_A}}
---
kind: Integration
name: b
type: LLM
config: {provider: VENDOR_A, api_key: {env: UNSET_A}}
---
kind: Integration
name: c
type: LLM
config: {provider: VENDOR_A, api_key: {env: SET_C}}
---
kind: Integration
name: d
type: AGENT
config:
  endpoint: https://agent.example.com/run
  headers: {X-One: {env: SET_C}, X-Two: {env: UNSET_D}}
  input_schema: {type: object, properties: {q: {type: string}}}
"""


@pytest.fixture
def declared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ManifestSet:
    for name in ("UNSET_A", "UNSET_D"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SET_C", "canary-set-c")
    return load([str(write(tmp_path, SECRETS))])


def test_a_secret_the_plan_sends_that_does_not_resolve_is_named_with_every_line_using_it(
        declared: ManifestSet) -> None:
    plan = Plan(operations=(op("Integration/a", secrets={"/config/api_key": "env:UNSET_A"}),))
    with pytest.raises(SecretError) as refused:
        check_plan_secrets(plan, declared)
    message = str(refused.value)
    assert "UNSET_A" in message and "manifests.yaml:4:" in message and "manifests.yaml:9:" in message
    assert "UNSET_D" not in message and "canary" not in message


def test_a_header_map_holding_a_secret_that_does_not_resolve_is_refused_when_sent(declared: ManifestSet) -> None:
    plan = Plan(operations=(op("Integration/d", secrets={"/config/headers/X-Two": "env:UNSET_D"}),))
    with pytest.raises(SecretError, match="UNSET_D"):
        check_plan_secrets(plan, declared)
    whole = Plan(operations=(op("Integration/d", secrets={"/config/headers": "env:UNSET_D"}),))
    with pytest.raises(SecretError, match="UNSET_D"):
        check_plan_secrets(whole, declared)


def test_secrets_the_plan_does_not_send_are_not_checked(declared: ManifestSet) -> None:
    check_plan_secrets(Plan(operations=(op("Integration/c", secrets={"/config/api_key": "env:SET_C"}),)), declared)
    check_plan_secrets(Plan(operations=(op("Integration/a"), op("Integration/b"))), declared)


def test_a_header_map_is_sent_whole_so_each_of_its_secrets_must_resolve(declared: ManifestSet) -> None:
    plan = Plan(operations=(op("Integration/d", secrets={"/config/headers/X-One": "env:SET_C"}),))
    with pytest.raises(SecretError, match="UNSET_D"):
        check_plan_secrets(plan, declared)


def test_an_oversized_header_map_the_plan_sends_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tree").mkdir()
    big = tmp_path / "tree" / "big"
    big.write_text("x" * 20000)
    monkeypatch.setenv("SET_C", "canary-set-c")
    headers = ", ".join(f"X-H{i}: {{file: {big}}}" for i in range(60))
    manifests = load([str(write(tmp_path, SECRETS.split("---")[3].replace(
        "{X-One: {env: SET_C}, X-Two: {env: UNSET_D}}", "{" + headers + "}")))])
    plan = Plan(operations=(op("Integration/d", secrets={"/config/headers/X-H1": f"file:{big}"}),))
    with pytest.raises(SecretError) as refused:
        check_plan_secrets(plan, manifests)
    assert "header" in str(refused.value)
    check_plan_secrets(Plan(operations=(op("Integration/d"),)), manifests)


# ---------------------------------------------------------------------- what the steps report to telemetry


POLICED = """
kind: Policy
name: guard
rules:
  - name: no-new-integrations
    match: {actions: [create], kinds: [Integration]}
    effect: deny
    message: not today
---
kind: Integration
name: support-llm
type: LLM
config: {provider: VENDOR_A, api_key: {env: SUPPORT_KEY}}
"""


def test_a_plan_reports_its_verdicts_and_changes_to_the_telemetry_it_was_connected_with(
        emulated: Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPPORT_KEY", "canary-support-key")
    stream = io.StringIO()
    telemetry = Telemetry(log_format="json", stream=stream)
    manifests = load([str(write(tmp_path, POLICED))])
    with connect(emulated, telemetry=telemetry) as client:
        _, plan = plan_against(manifests, client, PlanOptions())
    assert [(v.rule, v.effect) for v in plan.policy] == [("no-new-integrations", "deny")]
    assert telemetry.registry.get_sample_value("reconciler_policy_verdicts_total", {"effect": "deny"}) == 1
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(e["event"], e.get("resource")) for e in events if e["event"] in ("plan", "policy")] == [
        ("policy", "Integration/support-llm"), ("plan", "Integration/support-llm")]
    assert telemetry.registry.get_sample_value("reconciler_resources", {"kind": "Integration", "state": "drifted"}) == 1


def test_an_apply_reports_each_outcome_to_the_telemetry_and_to_its_listener(
        emulated: Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.workflow import run_apply

    monkeypatch.setenv("SUPPORT_KEY", "canary-support-key")
    stream = io.StringIO()
    telemetry = Telemetry(log_format="json", stream=stream)
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    manifests = load([str(tree)])
    with connect(emulated, telemetry=telemetry) as client:
        live, plan = plan_against(manifests, client, PlanOptions())
        started: list[str] = []
        done: list[Outcome] = []
        report = run_apply(plan, client, parallelism=1, fail_fast=False, on_start=lambda o: started.append(o.id),
                           on_done=done.append, live=live)
        again = plan_against(manifests, client, PlanOptions())[1]
    assert report.ok and again.empty and started == [o.id for o in plan] and done == report.outcomes
    resources = [json.loads(line) for line in stream.getvalue().splitlines() if '"resource"' in line]
    assert [(e["event"], e["outcome"]) for e in resources if e["event"] == "resource"] == [("resource", APPLIED)] * 2


def test_an_apply_asked_to_stop_starts_no_call(emulated: Connection, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.workflow import run_apply

    monkeypatch.setenv("SUPPORT_KEY", "canary-support-key")
    manifests = load([str(write(tmp_path, POLICED.split("---")[1]))])
    with connect(emulated) as client:
        live, plan = plan_against(manifests, client, PlanOptions())
        report = run_apply(plan, client, parallelism=1, fail_fast=False, live=live, stop=lambda: True)
        assert not report.of(APPLIED) and report.interrupted
        assert not plan_against(manifests, client, PlanOptions())[1].empty


# ---------------------------------------------------------------------- where a connection goes, with which key


def test_a_connection_goes_to_the_endpoint_its_flags_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.client.settings import REGIONS

    monkeypatch.setenv("RECONCILER_API_KEY", "a-real-key")
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    region = sorted(REGIONS)[0]
    for conn, url in ((Connection(base_url="https://api.example.test/"), "https://api.example.test"),
                      (Connection(host="api.example.test:8443"), "https://api.example.test:8443"),
                      (Connection(region=region), None)):
        with connect(conn) as client:
            found = str(client.http.base_url).rstrip("/")
            assert found == url if url is not None else region in found


def test_a_connection_keeps_its_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "a-real-key")
    with connect(Connection(base_url="https://api.example.test", timeout=2.5)) as client:
        assert client.timeout.connect == 2.5
    with connect(Connection(base_url="https://api.example.test")) as client:
        assert client.timeout.connect != 2.5


def test_a_missing_ca_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "a-real-key")
    with pytest.raises(ConfigError, match="absent.pem"):
        connect(Connection(base_url="https://api.example.test", ca_file=str(tmp_path / "absent.pem")))


def test_the_key_of_an_environment_whose_variable_is_unset_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "a-real-key")
    monkeypatch.delenv("STAGING_KEY", raising=False)
    with pytest.raises(ConfigError, match="no API key"):
        connect(Connection(base_url="https://api.example.test", api_key_env="STAGING_KEY"))


def test_a_key_file_is_read_before_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_API_KEY", "unknown-key-0000")
    key = tmp_path / "key"
    key.write_text("admin-key\n")
    with connect(Connection(emulator=str(tmp_path / "s.db"), api_key_file=str(key))) as client:
        assert client.run(client.get("/v2/spaces"))["spaces"]


def test_a_client_reports_only_to_telemetry(emulated: Connection) -> None:
    with connect(emulated) as client:
        client.reporter = object()
        assert reporter(client) is None


def test_manifests_are_loaded_from_standard_input_with_the_policies_given(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICED.split("---")[0].lstrip())
    manifests = load(["-"], io.StringIO(PROMPT_P.lstrip()), policy_paths=[str(policy)])
    assert [r.address for r in manifests] == ["Prompt/research/p"]
    assert [rule.name for rule in manifests.policies] == ["no-new-integrations"]


PROMPT_P = """
kind: Prompt
space: research
name: p
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
"""


def test_fail_fast_stops_an_apply_after_its_first_failure(emulated: Connection) -> None:
    from reconciler.workflow import run_apply

    plan = Plan(operations=(op("Prompt/research/p", "PATCH", "/v2/prompts/NOPE"),
                            op("Prompt/research/q", "DELETE", "/v2/prompts/NOPE2", action="delete")))
    with connect(emulated) as client:
        report = run_apply(plan, client, parallelism=1, fail_fast=True)
    assert [o.status for o in report.outcomes] == [FAILED, "skipped"]
    assert "--fail-fast" in report.outcomes[1].detail


def test_the_apply_step_passes_its_listeners_on(account: ApiClient, tmp_path: Path) -> None:
    tree = write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A").replace("INTEGRATION", "support-llm"))
    manifests = load([str(tree)])
    live, plan = plan_against(manifests, account, PlanOptions())
    execute = Executed(ApplyReport(interrupted=True))

    def done(outcome: Outcome) -> None:
        return None

    def stop() -> bool:
        return False

    apply_and_confirm(plan, account, manifests, live, parallelism=2, on_done=done, stop=stop, execute=execute)
    apply_and_confirm(plan, account, manifests, live, parallelism=2, execute=execute)
    assert execute.calls[0]["on_done"] is done and execute.calls[0]["stop"] is stop
    assert execute.calls[1]["fail_fast"] is False and execute.calls[1]["on_done"] is None
    assert execute.calls[1]["stop"]() is False


def test_after_an_apply_the_resource_gauges_show_what_converged(
        emulated: Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPPORT_KEY", "canary-support-key")
    telemetry = Telemetry(stream=io.StringIO())
    manifests = load([str(write(tmp_path, GUARDED.replace("PROVIDER", "VENDOR_A")
                                .replace("INTEGRATION", "support-llm")))])
    with connect(emulated, telemetry=telemetry) as client:
        live, plan = plan_against(manifests, client, PlanOptions())
        report, again = apply_and_confirm(plan, client, manifests, live, parallelism=2)
    assert report.ok and again is not None and again.empty
    for kind in ("Integration", "Evaluator"):
        assert telemetry.registry.get_sample_value("reconciler_resources", {"kind": kind, "state": "in_sync"}) == 1
        assert telemetry.registry.get_sample_value("reconciler_resources", {"kind": kind, "state": "drifted"}) == 0


def test_an_oversized_header_map_the_plan_does_not_send_is_not_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tree").mkdir()
    big = tmp_path / "tree" / "big"
    big.write_text("x" * 20000)
    monkeypatch.setenv("SET_C", "canary-set-c")
    headers = ", ".join(f"X-H{i}: {{file: {big}}}" for i in range(60))
    agent = SECRETS.split("---")[3].replace("{X-One: {env: SET_C}, X-Two: {env: UNSET_D}}", "{" + headers + "}")
    manifests = load([str(write(tmp_path, SECRETS.split("---")[2] + "---" + agent))])
    check_plan_secrets(Plan(operations=(op("Integration/c", secrets={"/config/api_key": "env:SET_C"}),)), manifests)


GUARDED_TWICE = """
kind: Ownership
name: support
spaces: [research]
integrations: ["support-*"]
---
kind: Integration
name: support-kept
type: LLM
config: {provider: VENDOR_A, api_key: {env: SUPPORT_KEY}}
---
kind: Integration
name: support-llm
type: LLM
config: {provider: VENDOR_A, api_key: {env: SUPPORT_KEY}}
---
kind: Integration
name: support-other
type: LLM
config: {provider: VENDOR_A, api_key: {env: SUPPORT_KEY}}
"""


def evaluator(name: str, integration: str) -> str:
    return GUARDED.split("---")[2].replace("name: judge\n", f"name: {name}\n").replace("INTEGRATION", integration)


def test_the_guard_names_every_integration_and_every_evaluator_that_uses_it(
        account: ApiClient, tmp_path: Path) -> None:
    tree = write(tmp_path, GUARDED_TWICE + "---" + evaluator("a-kept", "support-kept") + "---"
                 + evaluator("b-judge", "support-llm") + "---" + evaluator("c-judge", "support-llm") + "---"
                 + evaluator("d-judge", "support-other"))
    manifests, _ = applied(account, tree)
    pruned = write(tmp_path, GUARDED_TWICE.split("---\nkind: Integration\nname: support-llm")[0] + "---"
                   + evaluator("e-new", "support-kept"), "pruned")
    with pytest.raises(PlanError) as refused:
        plan_against(load([str(pruned)]), account, PlanOptions(prune=True, allow_empty=True))
    assert str(refused.value) == (
        "cannot plan:\n"
        "  Integration/support-llm: the plan would delete it, and it is used by evaluator b-judge in space research, "
        "evaluator c-judge in space research; move those evaluators to another integration first\n"
        "  Integration/support-other: the plan would delete it, and it is used by evaluator d-judge in space "
        "research; move that evaluator to another integration first")


def test_a_refusal_names_the_live_objects_it_is_about(account: ApiClient, tmp_path: Path) -> None:
    from reconciler.workflow import run_apply

    manifests = load([str(write(tmp_path, PROMPT_P))])
    live, _ = plan_against(manifests, account, PlanOptions())
    space_id = live.space_id("research")
    assert space_id is not None
    plan = Plan(operations=(replace(op("Prompt/research/p", "PATCH", f"/v2/prompts/{space_id}"),
                                    body={"description": "x"}),))
    report = run_apply(plan, account, parallelism=1, fail_fast=False, live=live)
    [failed] = report.of(FAILED)
    assert "'research'" in failed.detail and space_id not in failed.detail


def test_clients_given_one_runner_run_on_its_loop(emulated: Connection) -> None:
    import asyncio

    async def loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    with asyncio.Runner() as runner, connect(emulated, runner=runner) as a, connect(emulated, runner=runner) as b:
        assert a.run(loop()) is runner.get_loop() and b.run(loop()) is runner.get_loop()
    with connect(emulated) as own:
        assert own.run(loop()) is not None


def test_an_apply_on_one_worker_ends_each_call_before_it_starts_the_next(emulated: Connection) -> None:
    from reconciler.workflow import run_apply

    plan = Plan(operations=tuple(op(f"Prompt/research/p{i}", "PATCH", f"/v2/prompts/NOPE{i}") for i in range(4)))
    seen: list[str] = []
    with connect(emulated) as client:
        run_apply(plan, client, parallelism=1, fail_fast=False, on_start=lambda o: seen.append("start " + o.name),
                  on_done=lambda o: seen.append("done " + o.op.name))
    assert seen == [f"{step} research/p{i}" for i in range(4) for step in ("start", "done")]
