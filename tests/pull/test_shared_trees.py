"""Pull where trees share files (product section 8): the nine cases a week of use reproduced,
end to end over the emulator's socket. After ``pull --write`` the environment it ran on plans empty or
each edit it did not make is listed; every other environment plans exactly as before; every tree loads."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.core import Emulator
from tests.pull.helpers import UI

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"RECONCILER_API_KEY": "admin-key", "VENDOR_A_KEY": "canary-vendor-a-39ab", "A_KEY": "canary-a-39cd"}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    for k in [k for k in __import__("os").environ if k.startswith("RECONCILER_VAR_")]:
        monkeypatch.delenv(k)
    monkeypatch.chdir(tmp_path)


@dataclass
class Env:
    name: str
    url: str
    ui: UI

    def args(self) -> list[str]:
        return ["base", f"overlays/{self.name}", "--var-file", f"overlays/{self.name}/vars.yaml"]

    def run(self, command: str, *extra: str) -> Result:
        offline = command == "validate"
        return invoke(command, *self.args(), *extra, *(() if offline else ("--base-url", self.url)))

    def plan(self) -> str:
        result = self.run("plan", "--prune")
        assert result.exit_code in (0, 2), result.output
        return result.output

    def plan_empty(self) -> None:
        result = self.run("plan", "--detailed-exitcode")
        assert result.exit_code == 0, result.output


@pytest.fixture
def envs(emulator_factory: Callable[..., tuple[str, Emulator]], tmp_path: Path) -> Iterator[dict[str, Env]]:
    """examples/environments copied, applied to two accounts (staging, production), each with its UI."""
    shutil.copytree(ROOT / "examples/environments", tmp_path, dirs_exist_ok=True)
    out: dict[str, Env] = {}
    clients: list[httpx.Client] = []
    for name in ("staging", "production"):
        url, _ = emulator_factory(spaces=(name,))
        c = httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10)
        clients.append(c)
        out[name] = Env(name, url, UI(c))
    for env in out.values():
        applied = env.run("apply", "--auto-approve")
        assert applied.exit_code == 0, applied.output
    yield out
    for c in clients:
        c.close()


def texts(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()
            and ".git" not in p.parts and not p.name.endswith(".db")}


# ---------------------------------------------------------------- case 1


def test_1_a_staging_ui_delete_never_removes_the_base_document_production_loads(
        envs: dict[str, Env], tmp_path: Path) -> None:
    staging, production = envs["staging"], envs["production"]
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "applied")
    before = production.plan()
    staging.ui.delete("prompts", "summarize-ticket", space_id=staging.ui.space_id("staging"))
    tree = texts(tmp_path)
    for extra in ((), ("--remove-absent",), ("--since", "HEAD")):
        pulled = staging.run("pull", "--write", *extra)
        assert pulled.exit_code == 2, pulled.output
        assert "Prompt/staging/summarize-ticket" in pulled.output
        assert texts(tmp_path) == tree  # base/research.yaml is production's too: nothing removed
    assert "which other environments load: not removed" in staging.run("pull", "--remove-absent").output
    assert production.plan() == before  # production's prune deletes nothing
    assert production.plan().startswith("No changes.")
    for env in envs.values():
        assert env.run("validate").exit_code == 0


# ---------------------------------------------------------------- case 2

SINGLE = """\
kind: Ownership
name: research
spaces: [research]
integrations: ["llm-*"]
---
kind: Integration
name: llm-a
type: LLM
config: {provider: VENDOR_A, api_key: {env: A_KEY}, is_function_calling_enabled: true}
---
kind: Prompt
space: research
name: triage
description: first words
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
"""

JUDGE = """\
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: llm-a, model_name: m}
"""


@pytest.fixture
def single(emulator_factory: Callable[..., tuple[str, Emulator]], tmp_path: Path) -> Iterator[Env]:
    url, _ = emulator_factory(spaces=("research",))
    with httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10) as c:
        yield Env("research", url, UI(c))


def run_tree(env: Env, command: str, *extra: str) -> Result:
    return invoke(command, "tree.yaml", *extra, *(() if command == "validate" else ("--base-url", env.url)))


def test_2_a_declared_resource_never_created_live_is_listed_not_removed(single: Env, tmp_path: Path) -> None:
    manifest = tmp_path / "tree.yaml"
    manifest.write_text(SINGLE)
    assert run_tree(single, "apply", "--auto-approve").exit_code == 0
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "tree.yaml")
    git(tmp_path, "commit", "-qm", "applied")
    manifest.write_text(SINGLE + JUDGE)  # merged; its apply failed: not live
    pulled = run_tree(single, "pull", "--write")  # the nightly recipe: no --since
    assert pulled.exit_code == 2, pulled.output
    assert "Evaluator/research/judge: declared, not live: apply creates it" in pulled.output
    assert manifest.read_text() == SINGLE + JUDGE
    # --since: a document added since REF is an apply not made yet, kept
    assert run_tree(single, "pull", "--write", "--since", "HEAD").exit_code == 0
    assert manifest.read_text() == SINGLE + JUDGE
    # a document already there at REF and absent live was deleted in the UI: removed
    git(tmp_path, "add", "tree.yaml")
    git(tmp_path, "commit", "-qm", "judge")
    removed = run_tree(single, "pull", "--write", "--since", "HEAD")
    assert removed.exit_code == 2 and manifest.read_text() == SINGLE
    # --remove-absent removes them all
    manifest.write_text(SINGLE + JUDGE)
    assert run_tree(single, "pull", "--write", "--remove-absent").exit_code == 2
    assert manifest.read_text() == SINGLE


# ---------------------------------------------------------------- case 3

SHARED_BASE = """\
kind: Ownership
name: {var: env}
spaces: [{var: space}]
integrations: ["gw-*"]
---
kind: Integration
name: gw-main
type: LLM
config:
  provider: VENDOR_B
  api_key: {env: VENDOR_A_KEY}
  base_url: "https://${var.host}/v1"
---
kind: Prompt
space: {var: space}
name: first
description: "Served by ${var.host}"
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
  invocation_params: {temperature: {var: temperature}}
---
kind: Prompt
space: {var: space}
name: second
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
  invocation_params: {temperature: {var: temperature}}
"""


def shared_tree(tmp_path: Path, patches: bool = True) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "all.yaml").write_text(SHARED_BASE)
    for name, host in (("staging", "gw.staging.example.com"), ("production", "gw.example.com")):
        (tmp_path / "overlays" / name).mkdir(parents=True)
        (tmp_path / "overlays" / name / "vars.yaml").write_text(
            f"env: {name}\nspace: {name}\ntemperature: 0.5\nhost: {host}\n")
        if patches:
            (tmp_path / "overlays" / name / "patches.yaml").write_text(
                f"kind: Patch\ntarget: Prompt/second\nspace: {name}\npatch:\n  description: {name}'s second\n")


@pytest.fixture
def two(emulator_factory: Callable[..., tuple[str, Emulator]], tmp_path: Path) -> Iterator[dict[str, Env]]:
    out: dict[str, Env] = {}
    clients = []
    for name in ("staging", "production"):
        url, _ = emulator_factory(spaces=(name,))
        c = httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10)
        clients.append(c)
        out[name] = Env(name, url, UI(c))
    yield out
    for c in clients:
        c.close()


def apply_all(envs: dict[str, Env]) -> None:
    for env in envs.values():
        applied = env.run("apply", "--auto-approve")
        assert applied.exit_code == 0, applied.output


def test_3_a_variable_other_declarations_use_is_not_rewritten_for_one_of_them(
        two: dict[str, Env], tmp_path: Path) -> None:
    shared_tree(tmp_path)
    apply_all(two)
    staging, production = two["staging"], two["production"]
    before = production.plan()
    vars_before = (tmp_path / "overlays/staging/vars.yaml").read_text()
    staging.ui.new_prompt_version("staging", "first", invocation_params={"temperature": 0.3})
    staging.ui.new_prompt_version("staging", "second", invocation_params={"temperature": 0.4})
    p = staging.ui.prompt("staging", "first")
    staging.ui.c.patch(f"/v2/prompts/{p['id']}", json={"description": "Served by gw.other.example.com"}) \
        .raise_for_status()
    pulled = staging.run("pull", "--write")
    assert pulled.exit_code == 2, pulled.output
    assert "Conflict" not in pulled.output and "neither written" not in pulled.output
    # the variables keep their values (the integration's base_url, the other prompt); each edit is a Patch
    assert (tmp_path / "overlays/staging/vars.yaml").read_text() == vars_before
    patches = (tmp_path / "overlays/staging/patches.yaml").read_text()
    assert "temperature: 0.3" in patches and "temperature: 0.4" in patches
    assert "description: Served by gw.other.example.com" in patches
    assert (tmp_path / "base/all.yaml").read_text() == SHARED_BASE
    staging.plan_empty()
    assert production.plan() == before
    assert staging.run("pull", "--write").exit_code == 0  # a second pull: nothing left


def test_3_without_an_overlay_a_shared_variable_edit_is_listed_not_written(
        two: dict[str, Env], tmp_path: Path) -> None:
    shared_tree(tmp_path, patches=False)
    apply_all(two)
    staging = two["staging"]
    staging.ui.new_prompt_version("staging", "first", invocation_params={"temperature": 0.3})
    tree = texts(tmp_path)
    pulled = staging.run("pull", "--write")
    assert pulled.exit_code == 2, pulled.output
    assert texts(tmp_path) == tree
    assert "Not written: Prompt/staging/first: version.invocation_params.temperature: set by " in pulled.output
    assert "which also sets Prompt/staging/second version.invocation_params.temperature" in pulled.output


# ---------------------------------------------------------------- case 4


def test_4_a_staging_edit_of_a_base_value_goes_into_stagings_overlay(envs: dict[str, Env], tmp_path: Path) -> None:
    staging, production = envs["staging"], envs["production"]
    assert production.run("plan", "--detailed-exitcode").exit_code == 0
    base = texts(tmp_path / "base")
    staging.ui.new_evaluator_version("staging", "faithfulness",
                                     lambda tc: tc.update(template="Is {{output}} faithful to {{context}}?"))
    pulled = staging.run("pull", "--write")
    assert pulled.exit_code == 2, pulled.output
    assert texts(tmp_path / "base") == base
    patches = (tmp_path / "overlays/staging/patches.yaml").read_text()
    assert "target: Evaluator/faithfulness" in patches and "faithful to {{context}}" in patches
    staging.plan_empty()
    assert production.run("plan", "--detailed-exitcode").exit_code == 0
    for env in envs.values():
        assert env.run("validate").exit_code == 0


# ---------------------------------------------------------------- case 5

RENAMED = """\
kind: Integration
name: llm-new
aliases: [llm-old]
type: LLM
config: {provider: VENDOR_A, api_key: {env: A_KEY}, is_function_calling_enabled: true}
"""


def test_5_a_pending_alias_rename_does_not_hide_the_other_live_edits(single: Env, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(RENAMED)
    single.ui.c.post("/v2/integrations", json={"type": "LLM", "name": "llm-old", "config": {
        "provider": "VENDOR_A", "api_key": "canary-old-key", "is_function_calling_enabled": False}}) \
        .raise_for_status()
    pulled = run_tree(single, "pull", "--write")
    assert pulled.exit_code == 2, pulled.output
    assert "is_function_calling_enabled: false" in (tmp_path / "tree.yaml").read_text()
    plan = json.loads(run_tree(single, "plan", "--format", "json").stdout)
    assert [[c["path"] for c in op["changes"]] for op in plan["operations"]] == [["name"]]  # only the rename


# ---------------------------------------------------------------- case 6

IGNORED = """\
kind: Prompt
space: research
name: triage
ignore_changes: [version.invocation_params.temperature]
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
  invocation_params: {temperature: 0.2, max_tokens: 100}
"""


def test_6_an_ignored_sub_key_is_never_pulled(single: Env, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(IGNORED)
    assert run_tree(single, "apply", "--auto-approve").exit_code == 0
    single.ui.new_prompt_version("research", "triage", invocation_params={"temperature": 0.9, "max_tokens": 100})
    plan = run_tree(single, "plan", "--detailed-exitcode")
    assert plan.exit_code == 0 and "1 ignored" in plan.output
    pulled = run_tree(single, "pull", "--write")
    assert (pulled.exit_code, pulled.output) == (0, "")
    assert (tmp_path / "tree.yaml").read_text() == IGNORED
    # a managed key next to it is pulled, the ignored one keeps its declared value
    single.ui.new_prompt_version("research", "triage", invocation_params={"temperature": 0.8, "max_tokens": 50},
                                 commit_message="fewer tokens")
    assert run_tree(single, "pull", "--write").exit_code == 2
    text = (tmp_path / "tree.yaml").read_text()
    assert "{temperature: 0.2, max_tokens: 50}" in text and "commit_message: fewer tokens" in text
    assert run_tree(single, "plan", "--detailed-exitcode").exit_code == 0


# ---------------------------------------------------------------- case 7


def test_7_since_never_writes_back_a_document_the_tree_removed_and_written_files_exit_2(
        single: Env, tmp_path: Path) -> None:
    manifest = tmp_path / "tree.yaml"
    manifest.write_text(SINGLE + JUDGE)
    assert run_tree(single, "apply", "--auto-approve").exit_code == 0
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "tree.yaml")
    git(tmp_path, "commit", "-qm", "applied")
    manifest.write_text(SINGLE)  # the tree removes the evaluator: not applied yet
    pulled = run_tree(single, "pull", "--since", "HEAD", "--unmanaged-to", "adopted", "--write")
    assert pulled.exit_code == 0, pulled.output
    assert not (tmp_path / "adopted").exists() or not any((tmp_path / "adopted").rglob("*.yaml"))
    single.ui.c.post("/v2/prompts", json={"space_id": single.ui.space_id("research"), "name": "made-in-ui",
                                          "version": {"commit_message": "ui", "provider": "VENDOR_A",
                                                      "messages": [{"role": "user", "content": "hi"}]}}) \
        .raise_for_status()
    adopted = run_tree(single, "pull", "--since", "HEAD", "--unmanaged-to", "adopted2", "--write")
    assert adopted.exit_code == 2, adopted.output  # files written: the recipe opens a pull request
    written = "".join(p.read_text() for p in (tmp_path / "adopted2").rglob("*.yaml"))
    assert "made-in-ui" in written and "judge" not in written


# ---------------------------------------------------------------- case 8

DATASET = """\
---
kind: Dataset
space: {var: space}
name: golden
key: tid
examples_file: golden.jsonl
"""


def test_8_a_patched_examples_file_is_read_next_to_the_patch(envs: dict[str, Env], tmp_path: Path) -> None:
    staging = envs["staging"]
    (tmp_path / "base/research.yaml").write_text((tmp_path / "base/research.yaml").read_text() + DATASET)
    (tmp_path / "base/golden.jsonl").write_text('{"tid": 1, "q": "base"}\n')
    (tmp_path / "overlays/staging/golden.jsonl").write_text('{"tid": 1, "q": "staging"}\n')
    with (tmp_path / "overlays/staging/patches.yaml").open("a") as fh:
        fh.write("---\nkind: Patch\ntarget: Dataset/golden\nspace: staging\npatch:\n  examples_file: golden.jsonl\n")
    assert staging.run("apply", "--auto-approve").exit_code == 0
    assert [e["q"] for e in staging.ui.examples("staging", "golden")] == ["staging"]
    staging.ui.update_examples("staging", "golden", [{"id": staging.ui.examples("staging", "golden")[0]["id"],
                                                     "tid": 1, "q": "edited"}])
    assert staging.run("pull", "--write").exit_code == 2
    assert (tmp_path / "overlays/staging/golden.jsonl").read_text() == '{"tid": 1, "q": "edited"}\n'
    assert (tmp_path / "base/golden.jsonl").read_text() == '{"tid": 1, "q": "base"}\n'
    staging.plan_empty()
    (tmp_path / "overlays/staging/golden.jsonl").unlink()  # the error cites the Patch's line and its folder
    bad = staging.run("validate")
    assert bad.exit_code == 1
    assert "overlays/staging/patches.yaml:" in bad.output and "overlays/staging/golden.jsonl" in bad.output


# ---------------------------------------------------------------- case 9

KEYED = """\
kind: Dataset
space: research
name: keyed
key: tid
examples_file: keyed.jsonl
---
kind: Prompt
space: research
name: triage
description: plain words
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{role: user, content: "{ticket}"}]
"""


@pytest.mark.parametrize("separator", ["\u2028", "\u0085"])
def test_9_live_values_the_tree_cannot_hold_are_listed_and_the_tree_still_loads(
        single: Env, tmp_path: Path, separator: str) -> None:
    (tmp_path / "tree.yaml").write_text(KEYED)
    (tmp_path / "keyed.jsonl").write_text('{"tid": 1, "q": "a"}\n{"tid": 2, "q": "b"}\n')
    assert run_tree(single, "apply", "--auto-approve").exit_code == 0
    live = {e["tid"]: e for e in single.ui.examples("research", "keyed")}
    single.ui.update_examples("research", "keyed", [{"id": live[1]["id"], "q": "lost its key"},
                                                    {"id": live[2]["id"], "tid": 2, "q": "B"}])
    p = single.ui.prompt("research", "triage")
    single.ui.c.patch(f"/v2/prompts/{p['id']}", json={"description": f"two{separator}lines"}).raise_for_status()
    pulled = run_tree(single, "pull", "--write")
    assert pulled.exit_code == 2, pulled.output
    assert "Not written: Prompt/research/triage: description: live holds a line separator" in pulled.output
    assert "1 live example(s) without the dataset's key 'tid'" in pulled.output
    assert (tmp_path / "keyed.jsonl").read_text() == '{"tid": 1, "q": "a"}\n{"tid": 2, "q": "B"}\n'
    assert run_tree(single, "validate").exit_code == 0
    assert (tmp_path / "tree.yaml").read_text() == KEYED


# ---------------------------------------------------------------- must-show 3: the writer


def test_pull_writes_through_the_atomic_writer_keeping_the_mode_and_never_through_a_link(
        single: Env, tmp_path: Path) -> None:
    manifest = tmp_path / "tree.yaml"
    manifest.write_text(SINGLE)
    manifest.chmod(0o640)
    assert run_tree(single, "apply", "--auto-approve").exit_code == 0
    single.ui.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})
    assert run_tree(single, "pull", "--write").exit_code == 2
    assert "is_function_calling_enabled: false" in manifest.read_text()
    assert manifest.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left
    real = tmp_path / "real.yaml"
    real.write_text(SINGLE)
    manifest.unlink()
    manifest.symlink_to(real)
    refused = run_tree(single, "pull", "--write")
    assert refused.exit_code == 1 and "symbolic link" in refused.output
    assert real.read_text() == SINGLE


# ---------------------------------------------------------------- which environments share the files


def test_the_other_environments_are_the_sibling_overlays_of_the_same_shape(tmp_path: Path) -> None:
    from reconciler.pull.engine import Tree, sibling_environments

    shutil.copytree(ROOT / "examples/environments", tmp_path, dirs_exist_ok=True)
    (tmp_path / "overlays/policies").mkdir()  # a folder of other YAML next to the overlays: no environment
    (tmp_path / "overlays/policies/rules.yaml").write_text("kind: Policy\nname: p\n")
    (tmp_path / "overlays/canary").mkdir()  # Patches of its own, no var file: an environment
    (tmp_path / "overlays/canary/patches.yaml").write_text("kind: Patch\ntarget: Integration/vendor-a-main\n"
                                                           "patch: {config: {is_function_calling_enabled: true}}\n")
    staging = Tree(("base", "overlays/staging"), (), ("overlays/staging/vars.yaml",))
    others = {t.name: t for t in sibling_environments(staging)}
    assert sorted(others) == ["canary", "production"]
    assert others["production"] == Tree(("base", "overlays/production"), (), ("overlays/production/vars.yaml",),
                                        "production")
    assert others["canary"].var_files == ()
    assert str((tmp_path / "base/research.yaml").resolve()) in others["production"].files()
    assert sibling_environments(Tree(("base",))) == []  # no overlay: one environment


def test_an_edited_tree_that_would_not_load_replaces_nothing(tmp_path: Path) -> None:
    from reconciler.model import LiveState
    from reconciler.pull.engine import Puller, Tree

    (tmp_path / "tree.yaml").write_text(SINGLE)
    tree = Tree(("tree.yaml",))
    puller = Puller(tree.load(), LiveState(), ["tree.yaml"], tree=tree)
    result = puller.run()
    assert result.files == {}
    result.files["tree.yaml"] = (SINGLE, SINGLE.replace("description: first words", "description: [not, text]"))
    puller._verify()  # as run() does once the edits are rendered
    assert result.errors and result.errors[0].startswith("the edited tree would not load, so nothing is written")
    assert "tree.yaml:14" in result.errors[0] and result.exit_code() == 1
    result.write()
    assert (tmp_path / "tree.yaml").read_text() == SINGLE


def test_edits_that_would_change_what_another_environment_declares_replace_nothing(tmp_path: Path) -> None:
    from reconciler.model import LiveState
    from reconciler.pull.engine import Puller, Tree

    (tmp_path / "base").mkdir()
    (tmp_path / "base/tree.yaml").write_text(SINGLE)
    (tmp_path / "other").mkdir()
    (tmp_path / "other/vars.yaml").write_text("x: 1\n")
    tree, other = Tree(("base/tree.yaml",)), Tree(("base/tree.yaml",), (), ("other/vars.yaml",), "other")
    puller = Puller(tree.load(), LiveState(), ["base/tree.yaml"], tree=tree, others=[other])
    result = puller.run()
    result.files["base/tree.yaml"] = (SINGLE, SINGLE.replace("description: first words", "description: new words"))
    puller._verify()  # as run() does once the edits are rendered
    assert result.errors == ["the edits would change what environment other declares (Prompt/research/triage), "
                             "so nothing is written"]
    result.write()
    assert (tmp_path / "base/tree.yaml").read_text() == SINGLE
