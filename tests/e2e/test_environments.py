"""Environments and lifecycle (docs/manifests.md) through the CLI, over the emulator's socket:
one base tree with two overlays against two accounts, renames that keep ids, protection, variables
and their precedence, and every bad input refused before any request."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.core import Emulator
from tests.conftest import EMULATOR_ADMIN

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENTS = ROOT / "examples/environments"
SECRETS = {"RECONCILER_API_KEY": "admin-key", "VENDOR_A_KEY": "canary-vendor-a-6b1d"}


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    for k in [k for k in __import__("os").environ if k.startswith("RECONCILER_VAR_")]:
        monkeypatch.delenv(k)

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return invoke


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10)


def overlay(env: str) -> list[str]:
    return [str(ENVIRONMENTS / "base"), str(ENVIRONMENTS / "overlays" / env),
            "--var-file", str(ENVIRONMENTS / "overlays" / env / "vars.yaml")]


def test_one_base_tree_with_two_overlays_gives_each_environment_its_own_plan(
        run: Callable[..., Result], emulator_factory: Callable[..., tuple[str, Emulator]]) -> None:
    staging, _ = emulator_factory(spaces=("staging",))
    production, _ = emulator_factory(spaces=("production",))
    plans: dict[str, dict[str, Any]] = {}
    for env, url in (("staging", staging), ("production", production)):
        result = run("plan", *overlay(env), "--base-url", url, "--format", "json")
        assert result.exit_code == 0, result.output
        plans[env] = json.loads(result.stdout)
        applied = run("apply", *overlay(env), "--base-url", url, "--auto-approve")
        assert applied.exit_code == 0, applied.output
        assert run("plan", *overlay(env), "--base-url", url, "--detailed-exitcode").exit_code == 0

    def op(plan: dict[str, Any], address: str, method: str = "POST") -> dict[str, Any]:
        return next(o for o in plan["operations"] if o["address"] == address and o["method"] == method)

    stage, prod = plans["staging"], plans["production"]
    assert op(stage, "Prompt/staging/summarize-ticket")["body"]["version"]["model"] == "model-small"
    assert op(prod, "Prompt/production/summarize-ticket")["body"]["version"]["model"] == "model-large"
    assert op(prod, "Prompt/production/summarize-ticket")["body"]["description"] == "Summaries for production"
    assert op(stage, "Prompt/staging/summarize-ticket")["body"]["version"]["invocation_params"] == {"temperature": 0.7}
    assert [o["path"] for o in prod["operations"] if o["path"] == "/v2/resource-restrictions"]
    assert not [o for o in stage["operations"] if o["path"] == "/v2/resource-restrictions"]
    assert op(prod, "Integration/vendor-a-main")["body"]["config"]["is_function_calling_enabled"] is False
    assert op(stage, "Integration/vendor-a-main")["body"]["config"]["is_function_calling_enabled"] is True
    # each change says where its value came from: the base line, via the variable's line
    description = next(c for c in op(prod, "Prompt/production/summarize-ticket")["changes"]
                       if c["path"] == "description")
    assert description["source"].endswith("base/research.yaml:5 via "
                                           f"{ENVIRONMENTS}/overlays/production/vars.yaml:1")
    patched = next(c for c in op(prod, "Integration/vendor-a-main")["changes"]
                   if c["path"] == "config.is_function_calling_enabled")
    assert patched["source"] == f"{ENVIRONMENTS}/overlays/production/patches.yaml:12"
    with client(staging) as api:
        assert [s["name"] for s in api.get("/v2/spaces").json()["spaces"]] == ["default", "research", "staging"]


RENAME = """
kind: Integration
name: {name}
{aliases}
type: LLM
config: {{provider: VENDOR_A, api_key: {{env: VENDOR_A_KEY}}, is_function_calling_enabled: {calling}}}
---
kind: Evaluator
space: research
name: judge
commit_message: c
template_config:
  name: judge
  template: "Is {{{{output}}}} right?"
  classification_choices: {{right: 1, wrong: 0}}
  llm_config: {{integration: {name}, model_name: m}}
---
kind: Dataset
space: research
name: {dataset}
{dataset_aliases}
examples: [{{q: one}}]
"""


def write(root: Path, text: str, name: str = "tree") -> Path:
    tree = root / name
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    (tree / "manifests.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return tree


def test_renaming_an_integration_an_evaluator_uses_keeps_its_id_and_the_evaluator_reference(
        run: Callable[..., Result], server: tuple[str, Emulator], tmp_path: Path) -> None:
    url = server[0]
    first = write(tmp_path, RENAME.format(name="vendor-a-prod", aliases="", calling="true", dataset="golden",
                                          dataset_aliases=""))
    assert run("apply", str(first), "--base-url", url, "--auto-approve").exit_code == 0
    with client(url) as api:
        [before] = api.get("/v2/integrations", params={"type": "LLM"}).json()["integrations"]
        datasets_before = api.get("/v2/datasets").json()["datasets"]
    renamed = write(tmp_path, RENAME.format(name="vendor-a-main", aliases="aliases: [vendor-a-prod]",
                                            calling="false", dataset="golden-v2",
                                            dataset_aliases="aliases: [golden]"))
    planned = run("plan", str(renamed), "--base-url", url, "--format", "json")
    assert planned.exit_code == 0, planned.output
    ops = json.loads(planned.stdout)["operations"]
    assert [(o["action"], o["method"], o["path"]) for o in ops] == [
        ("update", "PATCH", f"/v2/integrations/{before['id']}"),
        ("update", "PATCH", f"/v2/datasets/{datasets_before[0]['id']}")]
    assert ops[0]["body"] == {"type": "LLM", "name": "vendor-a-main", "config": {"is_function_calling_enabled": False}}
    assert json.loads(planned.stdout)["summary"] == {"create": 0, "update": 2, "delete": 0, "replace": 0,
                                                      "unmanaged": 0}
    applied = run("apply", str(renamed), "--base-url", url, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    with client(url) as api:
        [after] = api.get("/v2/integrations", params={"type": "LLM"}).json()["integrations"]
        [evaluator] = api.get("/v2/evaluators").json()["evaluators"]
        version = api.get(f"/v2/evaluators/{evaluator['id']}").json()["version"]
        [dataset] = api.get("/v2/datasets").json()["datasets"]
    assert (after["id"], after["name"]) == (before["id"], "vendor-a-main")
    assert version["template_config"]["llm_config"]["ai_integration_id"] == before["id"]
    assert (dataset["id"], dataset["name"]) == (datasets_before[0]["id"], "golden-v2")
    assert run("plan", str(renamed), "--base-url", url, "--detailed-exitcode").exit_code == 0


def test_an_alias_and_its_name_both_live_is_an_error_naming_both_ids(
        run: Callable[..., Result], server: tuple[str, Emulator], tmp_path: Path) -> None:
    url = server[0]
    for name in ("old", "new"):
        tree = write(tmp_path, RENAME.format(name=name, aliases="", calling="true", dataset=f"d-{name}",
                                             dataset_aliases=""), name)
        assert run("apply", str(tree), "--base-url", url, "--auto-approve").exit_code == 0
    with client(url) as api:
        ids = {i["name"]: i["id"] for i in api.get("/v2/integrations", params={"type": "LLM"}).json()["integrations"]}
    both = write(tmp_path, RENAME.format(name="new", aliases="aliases: [old]", calling="true", dataset="d-new",
                                         dataset_aliases=""), "both")
    result = run("plan", str(both), "--base-url", url)
    assert result.exit_code == 1
    assert ids["new"] in result.stderr and ids["old"] in result.stderr


PROTECTED = """
kind: Ownership
name: prod
spaces: [research]
integrations: ["*"]
protect: ["Integration/*-prod"]
---
kind: Integration
name: vendor-a-prod
type: LLM
config: {{provider: {provider}, api_key: {{env: VENDOR_A_KEY}}}}
---
kind: Integration
name: scratch
type: LLM
protect: true
config: {{provider: VENDOR_A, api_key: {{env: VENDOR_A_KEY}}}}
"""


def test_protected_resources_survive_prune_allow_replace_and_a_removed_file(
        run: Callable[..., Result], server: tuple[str, Emulator], tmp_path: Path) -> None:
    url = server[0]
    tree = write(tmp_path, PROTECTED.format(provider="VENDOR_A"))
    assert run("apply", str(tree), "--base-url", url, "--auto-approve").exit_code == 0
    # --allow-replace: a provider change of a protected integration fails, naming the protecting line
    replaced = run("apply", str(write(tmp_path, PROTECTED.format(provider="VENDOR_C"))), "--base-url", url,
                   "--auto-approve", "--allow-replace")
    assert replaced.exit_code == 1
    assert "Integration/vendor-a-prod is protected" in replaced.stderr and "manifests.yaml:5" in replaced.stderr
    # a removed document: the Ownership's protect glob outlives it, so --prune keeps it and says why
    without = PROTECTED.format(provider="VENDOR_A").split("---")
    removed = write(tmp_path, "---".join([without[0], without[2]]))
    pruned = run("apply", str(removed), "--base-url", url, "--auto-approve", "--prune", "--allow-empty")
    assert pruned.exit_code == 0, pruned.output
    assert "Integration/vendor-a-prod: kept, not deleted by --prune: protected" in pruned.output
    assert "manifests.yaml:5" in pruned.output
    with client(url) as api:
        names = {i["name"] for i in api.get("/v2/integrations", params={"type": "LLM"}).json()["integrations"]}
    assert names == {"vendor-a-prod", "scratch"}
    # protect: true on a document: replacing it is refused too
    scratch = write(tmp_path, PROTECTED.format(provider="VENDOR_A").replace(
        "protect: true\nconfig: {provider: VENDOR_A", "protect: true\nconfig: {provider: VENDOR_C"))
    refused = run("plan", str(scratch), "--base-url", url, "--allow-replace")
    assert refused.exit_code == 1 and "Integration/scratch is protected" in refused.stderr
    assert "manifests.yaml:15" in refused.stderr


def test_retention_never_deletes_the_experiments_of_a_protected_dataset(
        run: Callable[..., Result], server: tuple[str, Emulator], tmp_path: Path) -> None:
    url = server[0]
    text = """
        kind: Dataset
        space: research
        name: kept
        protect: true
        examples: [{q: one}]
        experiment_retention: {keep_last: 0}
        """
    tree = write(tmp_path, text)
    assert run("apply", str(tree), "--base-url", url, "--auto-approve").exit_code == 0
    with client(url) as api:
        [dataset] = api.get("/v2/datasets").json()["datasets"]
        [example] = api.get(f"/v2/datasets/{dataset['id']}/examples").json()["examples"]
        api.post("/v2/experiments", json={"name": "e1", "dataset_id": dataset["id"], "experiment_runs": [
            {"example_id": example["id"], "output": "x"}]}).raise_for_status()
    planned = run("plan", str(tree), "--base-url", url, "--detailed-exitcode")
    assert planned.exit_code == 0, planned.output
    assert "kept, not deleted by retention" in planned.output


def test_variables_take_the_documented_precedence_and_an_unused_var_is_a_warning(
        run: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = write(tmp_path, """
        kind: Prompt
        space: research
        name: p
        description: "${var.a}-${var.b}-${var.c}"
        version: {commit_message: c, provider: VENDOR_A, messages: [{role: user, content: hi}],
                  invocation_params: {n: {var: n}}}
        """)
    (tree / "vars").mkdir()
    (tree / "vars" / "one.yaml").write_text("a: file-one\nb: file-one\nn: 3\n")
    (tmp_path / "two.yaml").write_text("b: file-two\nc: file-two\n")
    monkeypatch.setenv("RECONCILER_VAR_a", "env")
    monkeypatch.setenv("RECONCILER_VAR_c", "env")
    result = run("plan", str(tree), "--var-file", str(tree / "vars/one.yaml"), "--var-file", str(tmp_path / "two.yaml"),
                 "--var", "c=flag", "--var", "unused=1", "--emulator", str(tmp_path / "s.db"), "--format", "json")
    assert result.exit_code == 0, result.output  # vars/one.yaml sits in the tree: never loaded as a manifest
    [op] = [o for o in json.loads(result.stdout)["operations"] if o["method"] == "POST"]
    assert op["body"]["description"] == "file-one-file-two-flag"
    assert op["body"]["version"]["invocation_params"] == {"n": 3}
    assert "Warning: --var unused is not used by any manifest" in result.stderr


BAD_INPUT = [
    ("kind: Prompt\nspace: research\nname: p\ndescription: '${var.nope}'\n"
     "version: {commit_message: c, provider: VENDOR_A, messages: [{role: user, content: hi}]}\n",
     ":4:", "undefined variable 'nope'; the defined ones are: known"),
    ("kind: Integration\nname: i\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {var: known}}\n",
     ":4:", "a variable is never a secret"),
    ("kind: Patch\ntarget: Integration/nothing\npatch: {config: {is_function_calling_enabled: false}}\n",
     ":2:", "no Integration named 'nothing' is loaded before this patch"),
    ("kind: Integration\nname: i\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n---\n"
     "kind: Patch\ntarget: Integration/i\npatch: {kind: Prompt}\n", ":8:", "a Patch cannot change 'kind'"),
    ("kind: Integration\nname: i\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n---\n"
     "kind: Patch\ntarget: Integration/i\npatch: {name: j}\n", ":8:", "a Patch cannot change 'name'"),
    ("kind: Patch\npatch: {description: x}\n", ":1:", "a Patch needs 'target: KIND/NAME'"),
    ("kind: Integration\nname: a\naliases: [b]\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n---\n"
     "kind: Integration\nname: b\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n",
     ":3:", "'b' is declared as a resource of its own"),
    ("kind: Integration\nname: a\naliases: [old]\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n---\n"
     "kind: Integration\nname: b\naliases: [old]\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n",
     ":9:", "'old' is an alias of Integration/a too"),
    ("kind: Integration\nname: a\nprotect: yes-please\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n",
     ":3:", "protect: expected a boolean (true or false), got a string"),
    ("kind: Prompt\nspace: research\nname: p\naliases: [q]\n"
     "version: {commit_message: c, provider: VENDOR_A, messages: [{role: user, content: hi}]}\n",
     ":4:", "a rename there is a replacement"),
]


@pytest.mark.parametrize("text,line,message", BAD_INPUT)
def test_bad_input_is_refused_at_its_line_before_any_request(
        run: Callable[..., Result], server: tuple[str, Emulator], tmp_path: Path, text: str, line: str,
        message: str) -> None:
    url = server[0]
    tree = tmp_path / "bad"
    tree.mkdir()
    (tree / "m.yaml").write_text(text, encoding="utf-8")
    result = run("plan", str(tree), "--base-url", url, "--var", "known=1")
    assert result.exit_code == 1
    assert f"m.yaml{line}" in result.stderr and message in result.stderr, result.stderr
    assert httpx.get(f"{url}/_emulator/stats", headers=EMULATOR_ADMIN).json()["requests"] == {}
    assert run("validate", str(tree), "--var", "known=1").exit_code == 1


def test_renaming_an_evaluator_keeps_its_id_and_versions_in_one_patch_with_its_description(
        run: Callable[..., Result], server: tuple[str, Emulator], tmp_path: Path) -> None:
    url = server[0]
    text = RENAME.format(name="llm", aliases="", calling="true", dataset="d", dataset_aliases="")
    assert run("apply", str(write(tmp_path, text)), "--base-url", url, "--auto-approve").exit_code == 0
    with client(url) as api:
        [before] = api.get("/v2/evaluators").json()["evaluators"]
    renamed = text.replace("space: research\nname: judge\n",
                           "space: research\nname: judge-v2\naliases: [judge]\ndescription: renamed\n")
    tree = write(tmp_path, renamed)
    plan = json.loads(run("plan", str(tree), "--base-url", url, "--format", "json").stdout)
    assert [(o["method"], o["path"], o["body"]) for o in plan["operations"]] == [
        ("PATCH", f"/v2/evaluators/{before['id']}", {"name": "judge-v2", "description": "renamed"})]
    assert run("apply", str(tree), "--base-url", url, "--auto-approve").exit_code == 0
    with client(url) as api:
        [after] = api.get("/v2/evaluators").json()["evaluators"]
    assert (after["id"], after["name"], after["description"]) == (before["id"], "judge-v2", "renamed")
    assert run("plan", str(tree), "--base-url", url, "--detailed-exitcode").exit_code == 0
