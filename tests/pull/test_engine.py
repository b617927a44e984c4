"""The pull engine's decisions, in process: what a pull reports (its records, diff, JSON and exit
code), what it writes, and where it routes each live edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.core import Emulator, EmulatorSettings
from reconciler.fieldkinds import ABSENT
from reconciler.pull.engine import Conflict, Edit, NotWritten, PullResult, Tree
from tests.pull.helpers import ENV, UI, Cli, ui, ui_on


def test_a_conflict_names_the_three_values_and_where_the_field_is() -> None:
    c = Conflict("Prompt/r/p", "description", "base words", ["tree"], ABSENT, "tree.yaml:7")
    assert str(c) == ('Prompt/r/p: description (tree.yaml:7): changed in the tree and live: base "base words", '
                      'tree ["tree"], live (not set); neither written')
    long = "é" * 130
    c = Conflict("Prompt/r/p", "description", long, None, {"k": 1}, None)
    assert str(c) == (f'Prompt/r/p: description: changed in the tree and live: base "{"é" * 116}..., tree null, '
                      'live {"k": 1}; neither written')
    exact = "x" * 118  # 120 characters with its quotes: shown whole
    assert f'base "{exact}",' in str(Conflict("a", "p", exact, 1, 2, None))
    assert str(Conflict("tree.yaml", "", None, None, None, "tree.yaml: two edits overlap near line 3")) == \
        "tree.yaml: tree.yaml: two edits overlap near line 3"


def test_a_value_not_written_names_its_path_when_it_has_one() -> None:
    assert str(NotWritten("Prompt/r/p", "description", "why")) == "Prompt/r/p: description: why"
    assert str(NotWritten("Prompt/r/p", "", "why")) == "Prompt/r/p: why"


def test_the_exit_code_says_conflict_or_error_first_then_a_difference() -> None:
    edit = Edit("a", "p", "f", 1, "update", 1, 2)
    assert PullResult().exit_code() == 0
    assert PullResult(warnings=["w"]).exit_code() == 0
    assert PullResult(edits=[edit]).exit_code() == 2
    assert PullResult(not_written=[NotWritten("a", "p", "r")]).exit_code() == 2
    assert PullResult(edits=[edit], conflicts=[Conflict("a", "p", 1, 2, 3, None)]).exit_code() == 1
    assert PullResult(edits=[edit], errors=["e"]).exit_code() == 1


def test_the_diff_and_the_json_of_a_pull() -> None:
    result = PullResult(
        edits=[Edit("Prompt/r/p", "description", "a.yaml", 2, "update", "one", "two")],
        not_written=[NotWritten("Prompt/r/p", "version.model", "set by --var model: not written")],
        conflicts=[Conflict("Prompt/r/q", "description", ABSENT, "t", "l", None)],
        files={"a.yaml": ("x: 1\ndescription: one\n", "x: 1\ndescription: two"),
               "b.jsonl": ('{"a": 1}\n', '{"a": 2}\n')},
        warnings=["w"], errors=["e"])
    assert result.diff() == (
        "--- a/a.yaml\n+++ b/a.yaml\n@@ -1,2 +1,2 @@\n x: 1\n-description: one\n+description: two\n"
        "\\ No newline at end of file\n"
        '--- a/b.jsonl\n+++ b/b.jsonl\n@@ -1 +1 @@\n-{"a": 1}\n+{"a": 2}\n')
    assert result.to_json(True, ["exported.yaml"]) == {
        "edits": [{"address": "Prompt/r/p", "path": "description", "file": "a.yaml", "line": 2, "action": "update",
                   "before": "one", "after": "two"}],
        "not_written": [{"address": "Prompt/r/p", "path": "version.model", "reason": "set by --var model: not written"}],
        "conflicts": [{"address": "Prompt/r/q", "path": "description", "base": None, "tree": "t", "live": "l",
                       "source": None}],
        "warnings": ["w"], "errors": ["e"], "files": ["a.yaml", "b.jsonl"], "written": True, "diff": result.diff(),
        "unmanaged_written": ["exported.yaml"]}
    assert list(result.to_json(False, [])) == ["edits", "not_written", "conflicts", "warnings", "errors", "files",
                                               "written", "diff", "unmanaged_written"]
    assert result.to_json(False, [])["written"] is False


def test_writing_keeps_each_files_mode_and_byte_order_mark_and_an_error_writes_nothing(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("\ufeffx: 1\n")
    b.write_text("y: 1\n")
    a.chmod(0o640)
    b.chmod(0o604)
    refused = PullResult(files={str(a): ("x: 1\n", "x: 2\n")}, boms={str(a): True}, errors=["the tree would not load"])
    refused.write()
    assert a.read_text() == "\ufeffx: 1\n"
    PullResult(files={str(a): ("x: 1\n", "x: 2\n"), str(b): ("y: 1\n", "y: 2\n")}, boms={str(a): True}).write()
    assert a.read_bytes() == "\ufeffx: 2\n".encode() and b.read_text() == "y: 2\n"
    assert (a.stat().st_mode & 0o777, b.stat().st_mode & 0o777) == (0o640, 0o604)
    assert sorted(os.listdir(tmp_path)) == ["a.yaml", "b.yaml"]


def test_a_tree_is_named_by_its_environment_or_its_paths(tmp_path: Path) -> None:
    assert str(Tree(("base", "overlays/staging"))) == "base overlays/staging"
    assert str(Tree(("base", "overlays/staging"), name="staging")) == "staging"


# ---------------------------------------------------------------- two environments sharing a base, in process

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@dataclass
class Env:
    name: str
    db: Path

    def args(self) -> list[str]:
        return ["base", f"overlays/{self.name}", "--var-file", f"overlays/{self.name}/vars.yaml"]

    def run(self, command: str, *extra: str) -> Result:
        return invoke(command, *self.args(), *extra, *(() if command == "validate" else ("--emulator", str(self.db))))

    def pull(self, *extra: str) -> tuple[int, dict[str, Any]]:
        out = self.run("pull", "--format", "json", *extra)
        return out.exit_code, json.loads(out.stdout)

    def ui(self) -> AbstractContextManager[UI]:
        return ui_on(self.db)


@pytest.fixture
def envs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Env]:
    """examples/environments copied and applied to two emulators in files (staging, production)."""
    for k, v in {**ENV, "VENDOR_A_KEY": "canary-vendor-a-e1"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "examples/environments", tmp_path, dirs_exist_ok=True)
    out = {}
    for name in ("staging", "production"):
        env = out[name] = Env(name, tmp_path / f"{name}.db")
        Emulator(EmulatorSettings(db=str(env.db), spaces=(name,))).store.close()
        applied = env.run("apply", "--auto-approve")
        assert applied.exit_code == 0, applied.output
    return out


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True)


def tree_texts(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".db")}


def test_a_shared_list_edit_is_merged_into_the_environments_own_patch(envs: dict[str, Env], tmp_path: Path) -> None:
    staging, production = envs["staging"], envs["production"]
    base = tree_texts(tmp_path / "base")
    with staging.ui() as api:
        p = api.prompt("staging", "summarize-ticket")
        messages = p["version"]["messages"]
        messages[0]["content"] = "You summarize support tickets in one line."
        api.new_prompt_version("staging", "summarize-ticket", messages=messages, commit_message="shorter")
    code, out = staging.pull("--write")
    assert code == 2, out
    assert tree_texts(tmp_path / "base") == base
    patches = (tmp_path / "overlays/staging/patches.yaml").read_text()
    assert "patch:\n  version: {model: model-small, messages: [{role: system, content: You summarize support " \
           "tickets in one line.}, {role: user, content: '{ticket}'}], commit_message: shorter}\n" in patches, patches
    assert patches.count("kind: Patch") == 1
    assert {(e["path"], e["action"], e["file"]) for e in out["edits"]} == {
        ("version.messages", "patch", "overlays/staging/patches.yaml"),
        ("version.commit_message", "patch", "overlays/staging/patches.yaml")}
    (edit,) = [e for e in out["edits"] if e["path"] == "version.messages"]
    assert edit["before"][0]["content"] == "You summarize support tickets."  # as declared, not as patched
    assert edit["after"][0]["content"] == "You summarize support tickets in one line."
    assert staging.run("plan", "--detailed-exitcode").exit_code == 0
    assert production.run("plan", "--detailed-exitcode").exit_code == 0


def test_a_variable_inside_a_string_is_written_only_while_the_rest_still_matches(
        envs: dict[str, Env], tmp_path: Path) -> None:
    staging = envs["staging"]
    with staging.ui() as api:
        p = api.prompt("staging", "summarize-ticket")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "A weekly digest of the tickets"}).raise_for_status()
    code, out = staging.pull()
    assert code == 2 and out["edits"] == [] and out["files"] == []
    assert out["not_written"] == [{"address": "Prompt/staging/summarize-ticket", "path": "description",
                                   "reason": "built from ${var.env} (overlays/staging/vars.yaml:1) and live no "
                                             "longer matches the rest of the string: not written"}]
    with staging.ui() as api:
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "Summaries for qa"}).raise_for_status()
    code, out = staging.pull("--var", "env=staging")  # the variable given on the command line: named, not written
    assert code == 2 and out["edits"] == [] and out["not_written"] == [
        {"address": "Prompt/staging/summarize-ticket", "path": "description",
         "reason": "set by --var env: not written (change it where it is set)"}]
    code, out = staging.pull("--write")
    assert code == 2 and out["not_written"] == [], out
    # env also names the Ownership: the prompt's value goes into staging's Patch of it, the variable stays
    assert out["edits"] == [{"address": "Prompt/staging/summarize-ticket", "path": "description",
                             "file": "overlays/staging/patches.yaml", "line": 6, "action": "patch",
                             "before": "Summaries for staging", "after": "Summaries for qa"}]
    assert (tmp_path / "overlays/staging/vars.yaml").read_text() == "env: staging\nspace: staging\ntemperature: 0.7\n"
    assert "patch:\n  version: {model: model-small}\n  description: Summaries for qa\n" in \
        (tmp_path / "overlays/staging/patches.yaml").read_text()
    assert staging.run("plan", "--detailed-exitcode").exit_code == 0


def applied(cli: Cli, tmp_path: Path, text: str) -> Path:
    """``tree.yaml`` holding ``text``, applied to the emulator: live as declared."""
    tree = tmp_path / "tree.yaml"
    tree.write_text(text)
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    return tree


# ---------------------------------------------------------------- one environment: examples files

DATASETS = """\
kind: Dataset
space: research
name: lines
key: tid
examples_file: lines.jsonl
---
kind: Dataset
space: research
name: array
examples_file: array.json
"""


def test_examples_files_keep_their_line_ends_and_separators_and_a_json_array_is_listed(
        cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(DATASETS)
    (tmp_path / "lines.jsonl").write_bytes(b'{"tid":1,"q":"a"}\r\n{"tid":2,"q":"b"}\r\n{"tid":3,"q":"c"}')
    (tmp_path / "array.json").write_text('[{"q": "x"}]\n')
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        live = {x["tid"]: x for x in api.examples("research", "lines")}
        api.update_examples("research", "lines", [{"id": live[1]["id"], "tid": 1, "q": "é"}])
        api.delete_examples("research", "lines", [live[2]["id"]])
        api.append_examples("research", "lines", [{"tid": 4, "q": "d"}, {"q": "no key"}, {"tid": 5, "q": "a\u2028b"}])
        api.append_examples("research", "array", [{"q": "y"}])
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    result = json.loads(out.stdout)
    # an example live dropped is kept (the tree cannot hold two of the live ones: either may be it)
    assert (tmp_path / "lines.jsonl").read_bytes().decode() == \
        '{"tid":1,"q":"é"}\r\n{"tid":2,"q":"b"}\r\n{"tid":3,"q":"c"}\r\n{"tid":4,"q":"d"}\r\n'
    assert (tmp_path / "array.json").read_text() == '[{"q": "x"}]\n'
    assert [(e["path"], e["line"], e["action"]) for e in result["edits"]] == [
        ("examples.0", 1, "update"), ("examples.3", 4, "add")]
    assert result["not_written"] == [
        {"address": "Dataset/research/lines", "path": "examples",
         "reason": "2 live example(s) without the dataset's key 'tid' or holding a line separator (U+2028, U+2029 "
                   "or U+0085): the tree cannot hold them; not written, nor any example removed (one may be such "
                   "an example)"},
        {"address": "Dataset/research/array", "path": "examples",
         "reason": "array.json is a JSON array; only JSONL examples files are edited (1 examples differ): not written"}]


def test_an_example_deleted_live_loses_its_line_and_new_ones_follow_the_last_line(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text("kind: Dataset\nspace: research\nname: d\nexamples_file: d.jsonl\n")
    (tmp_path / "d.jsonl").write_text('{"q": "a"}\n{"q": "b"}')
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        live = {x["q"]: x for x in api.examples("research", "d")}
        api.delete_examples("research", "d", [live["a"]["id"]])
        api.append_examples("research", "d", [{"q": "c"}])
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    assert (tmp_path / "d.jsonl").read_text() == '{"q": "b"}\n{"q": "c"}\n'
    assert [(e["path"], e["line"], e["action"], e["before"], e["after"]) for e in json.loads(out.stdout)["edits"]] \
        == [("examples.0", 1, "remove", {"q": "a"}, None), ("examples.2", 3, "add", None, {"q": "c"})]
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0


def test_examples_ignored_are_left_and_examples_changed_on_both_sides_are_a_conflict(cli: Cli, tmp_path: Path) -> None:
    tree = tmp_path / "tree.yaml"
    tree.write_text("kind: Dataset\nspace: research\nname: kept\nignore_changes: [examples]\nexamples: [{q: a}]\n"
                    "---\nkind: Dataset\nspace: research\nname: both\nexamples: [{q: a}]\n")
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "tree.yaml")
    git(tmp_path, "commit", "-qm", "applied")
    with ui(tmp_path) as api:
        api.append_examples("research", "kept", [{"q": "b"}])
    out = cli("pull", "tree.yaml", "--format", "json")
    assert out.exit_code == 0 and json.loads(out.stdout)["not_written"] == [], out.output
    tree.write_text(tree.read_text().replace("examples: [{q: a}]\n", "examples: [{q: a}, {q: tree}]\n"))
    with ui(tmp_path) as api:
        api.append_examples("research", "both", [{"q": "live"}])
    out = cli("pull", "tree.yaml", "--since", "HEAD", "--write", "--format", "json")
    assert out.exit_code == 1, out.output
    assert json.loads(out.stdout)["conflicts"] == [
        {"address": "Dataset/research/both", "path": "examples", "base": [{"q": "a"}], "tree": [{"q": "a"}, {"q": "tree"}],
         "live": [{"q": "a"}, {"q": "live"}], "source": "tree.yaml:10"}]


def test_examples_of_a_file_another_environment_loads_are_listed_not_written(
        envs: dict[str, Env], tmp_path: Path) -> None:
    (tmp_path / "base/golden.yaml").write_text("kind: Dataset\nspace: {var: space}\nname: golden\n"
                                               "examples_file: golden.jsonl\n")
    (tmp_path / "base/golden.jsonl").write_text('{"q": "a"}\n')
    for env in envs.values():
        assert env.run("apply", "--auto-approve").exit_code == 0
    with envs["staging"].ui() as api:
        api.append_examples("staging", "golden", [{"q": "b"}])
    code, out = envs["staging"].pull("--write")
    assert code == 2 and out["files"] == [] and out["edits"] == []
    assert out["not_written"] == [{"address": "Dataset/staging/golden", "path": "examples", "reason":
                                   "base/golden.jsonl is loaded by other environments too (1 examples "
                                   "differ): not written (give this environment its own examples_file)"}]
    assert (tmp_path / "base/golden.jsonl").read_text() == '{"q": "a"}\n'


VERSION = 'version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{ticket}"}]}\n'
RESTRICTED = f"""\
kind: Prompt
space: research
name: triage
description: Triage a ticket
restricted: true
{VERSION}---
kind: Prompt
space: research
name: open
{VERSION}---
kind: ResourceRestriction
name: ops-board
resource_type: DASHBOARD
resource_id: ops-board-7
"""


def test_a_reader_key_pulls_no_restriction_and_says_which_were_left_out(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tree.yaml").write_text(RESTRICTED)
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        p = api.prompt("research", "triage")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "Triage any ticket"}).raise_for_status()
    monkeypatch.setenv("RECONCILER_API_KEY", "reader-key")
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    result = json.loads(out.stdout)
    assert result["warnings"] == [
        "restrictions were not compared: the API key sees no resource restriction (a read-only key manages none), "
        "so these are left out: Prompt/research/triage (restricted), ResourceRestriction/ops-board"]
    assert [(e["path"], e["after"]) for e in result["edits"]] == [("description", "Triage any ticket")]
    assert result["not_written"] == [] and (tmp_path / "tree.yaml").read_text() == RESTRICTED.replace(
        "Triage a ticket", "Triage any ticket")


def test_a_field_removed_live_from_a_flow_mapping_goes_with_the_rest_of_the_edit(cli: Cli, tmp_path: Path) -> None:
    tree = tmp_path / "tree.yaml"
    tree.write_text("kind: Prompt\nspace: research\nname: p\n"
                    "version: {commit_message: first, provider: VENDOR_A, model: m, messages: [{role: user, content: hi}]}\n")
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        p = api.prompt("research", "p")
        api.c.post(f"/v2/prompts/{p['id']}/versions", json={
            "provider": "VENDOR_A", "messages": p["version"]["messages"], "commit_message": "no model"}) \
            .raise_for_status()
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    assert [(e["path"], e["action"]) for e in json.loads(out.stdout)["edits"]] == [
        ("version.model", "remove"), ("version.commit_message", "update")]
    assert tree.read_text().endswith(
        "version: {commit_message: no model, provider: VENDOR_A, messages: [{role: user, content: hi}]}\n")
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0


def test_values_the_tree_cannot_take_are_listed_with_their_reason(envs: dict[str, Env], tmp_path: Path) -> None:
    staging = envs["staging"]
    base = tree_texts(tmp_path / "base")
    with staging.ui() as api:
        api.new_evaluator_version("staging", "faithfulness", lambda tc: tc.update(template="Is it\u2028right?"))
        p = api.prompt("staging", "summarize-ticket")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": None}).raise_for_status()
    code, out = staging.pull("--write")
    assert code == 2, out
    assert out["not_written"] == [
        {"address": "Prompt/staging/summarize-ticket", "path": "description",
         "reason": "built from variables (overlays/staging/vars.yaml:1) inside a string: not written"},
        {"address": "Evaluator/staging/faithfulness", "path": "template_config.template",
         "reason": "live holds a line separator (U+2028, U+2029 or U+0085), which YAML reads as a line break: the "
                   "tree cannot hold it; not written"}]
    assert tree_texts(tmp_path / "base") == base
    assert "\u2028" not in (tmp_path / "overlays/staging/patches.yaml").read_text()


def test_with_since_a_field_the_tree_added_and_live_set_otherwise_is_a_conflict(cli: Cli, tmp_path: Path) -> None:
    tree = tmp_path / "tree.yaml"
    tree.write_text(f"kind: Prompt\nspace: research\nname: p\n{VERSION}")
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "tree.yaml")
    git(tmp_path, "commit", "-qm", "applied")
    tree.write_text(f"kind: Prompt\nspace: research\nname: p\ndescription: from the tree\n{VERSION}")
    with ui(tmp_path) as api:
        p = api.prompt("research", "p")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "from the UI"}).raise_for_status()
    out = cli("pull", "tree.yaml", "--since", "HEAD")
    assert out.exit_code == 1
    assert "Conflict: Prompt/research/p: description (tree.yaml:4): changed in the tree and live: base (not set), " \
           'tree "from the tree", live "from the UI"; neither written' in out.output
    with ui(tmp_path) as api:
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "from the tree"}).raise_for_status()
    assert cli("pull", "tree.yaml", "--since", "HEAD").exit_code == 0  # both sides agree: nothing to pull


def test_the_base_of_since_is_empty_when_the_tree_did_not_exist_at_ref(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.pull.since import resources_at

    monkeypatch.chdir(tmp_path)
    git(tmp_path, "init", "-q")
    (tmp_path / "README").write_text("x\n")
    git(tmp_path, "add", "README")
    git(tmp_path, "commit", "-qm", "before the tree")
    (tmp_path / "tree.yaml").write_text(f"kind: Prompt\nspace: research\nname: p\n{VERSION}")
    assert resources_at("HEAD", ["tree.yaml"]) == {}
    git(tmp_path, "add", "tree.yaml")
    git(tmp_path, "commit", "-qm", "the tree")
    assert [r.address for r in resources_at("HEAD", ["tree.yaml"]).values()] == ["Prompt/research/p"]


def test_the_files_a_tree_loads_are_its_manifests_var_files_and_examples_files(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "d.yaml").write_text("kind: Dataset\nspace: research\nname: d\nexamples_file: d.jsonl\n"
                                           "---\nkind: Dataset\nspace: research\nname: e\nexamples: [{q: x}]\n")
    (tmp_path / "t" / "d.jsonl").write_text('{"q": "a"}\n')
    (tmp_path / "vars.yaml").write_text("x: 1\n")
    real = os.path.realpath(tmp_path)
    assert Tree(("t",), var_files=("vars.yaml",)).files() == {f"{real}/t/d.yaml", f"{real}/t/d.jsonl",
                                                             f"{real}/vars.yaml"}
    (tmp_path / "t" / "d.yaml").write_text("kind: Dataset\nname: [not, a, name]\nexamples_file: d.jsonl\n")
    assert Tree(("t",)).files() == {f"{real}/t/d.yaml"}  # a tree that does not load: the files it names



def test_a_patch_merged_into_an_existing_one_keeps_what_it_does_not_name_at_every_depth() -> None:
    from reconciler.pull.engine import _merge

    existing = {"version": {"model": "small", "invocation_params": {"temperature": 0.1, "top_p": 1}}, "x": 1}
    assert _merge(existing, {"version": {"invocation_params": {"temperature": 0.5}, "messages": [1]}}) == {
        "version": {"model": "small", "invocation_params": {"temperature": 0.5, "top_p": 1}, "messages": [1]}, "x": 1}
    assert existing["version"]["invocation_params"]["temperature"] == 0.1  # not changed in place
    assert _merge(None, {"a": 1}) == {"a": 1} and _merge({"a": 1}, "text") == "text" and _merge(3, [1]) == [1]


def test_a_conflicts_values_are_cut_past_120_characters() -> None:
    fits, over = "x" * 118, "x" * 119  # with their quotes: 120 and 121 characters
    assert str(Conflict("a", "p", fits, 1, 2, None)) == f'a: p: changed in the tree and live: base "{fits}", tree 1, ' \
                                                        "live 2; neither written"
    assert str(Conflict("a", "p", over, 1, 2, None)) == f'a: p: changed in the tree and live: base "{"x" * 116}..., ' \
                                                        "tree 1, live 2; neither written"


def test_an_item_removed_live_from_a_block_list_takes_only_its_line(cli: Cli, tmp_path: Path) -> None:
    text = ("kind: Dataset\nspace: research\nname: inline\nexamples:\n  - {q: one}   # the first\n  - {q: two}\n"
            "  - {q: three}  # the last\n")
    tree = applied(cli, tmp_path, text)
    with ui(tmp_path) as api:
        live = {x["q"]: x for x in api.examples("research", "inline")}
        api.delete_examples("research", "inline", [live["two"]["id"]])
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    assert tree.read_text() == text.replace("  - {q: two}\n", "")
    assert json.loads(out.stdout)["edits"] == [{"address": "Dataset/research/inline", "path": "examples.1",
                                                "file": "tree.yaml", "line": 6, "action": "remove",
                                                "before": {"q": "two"}, "after": None}]
    with ui(tmp_path) as api:
        api.append_examples("research", "inline", [{"q": "four"}])
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2
    assert tree.read_text() == text.replace("  - {q: two}\n", "") + "  - {q: four}\n"
    assert json.loads(out.stdout)["edits"] == [{"address": "Dataset/research/inline", "path": "examples.2",
                                                "file": "tree.yaml", "line": 6, "action": "add",
                                                "before": None, "after": {"q": "four"}}]


def test_an_item_inserted_live_inside_a_block_list_goes_before_the_one_that_follows_it(cli: Cli,
                                                                                       tmp_path: Path) -> None:
    text = ("kind: Prompt\nspace: research\nname: p\nversion:\n  commit_message: first\n  provider: VENDOR_A\n"
            "  messages:\n    - role: system   # kept\n      content: one\n    - role: user\n      content: two\n")
    tree = applied(cli, tmp_path, text)
    with ui(tmp_path) as api:
        api.new_prompt_version("research", "p", commit_message="m", messages=[
            {"role": "system", "content": "one"}, {"role": "assistant", "content": "mid"},
            {"role": "user", "content": "two"}])
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    assert tree.read_text() == text.replace("first", "m").replace(
        "    - role: user\n", "    - role: assistant\n      content: mid\n    - role: user\n")
    assert [(e["path"], e["line"], e["action"], e["after"]) for e in json.loads(out.stdout)["edits"]] == [
        ("version.messages.1", 10, "add", {"role": "assistant", "content": "mid"}),
        ("version.commit_message", 5, "update", "m")]
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0


def test_a_flow_list_is_edited_item_by_item_only_when_no_item_comes_or_goes(cli: Cli, tmp_path: Path) -> None:
    text = ("kind: Dataset\nspace: research\nname: gone\nexamples: [{q: one}, {q: two},   {q: three}]  # c\n---\n"
            "kind: Prompt\nspace: research\nname: p\nversion:\n  commit_message: first\n  provider: VENDOR_A\n"
            "  messages: [{role: system, content: one},   {role: user, content: two}]  # c\n")
    tree = applied(cli, tmp_path, text)
    with ui(tmp_path) as api:
        gone = {x["q"]: x for x in api.examples("research", "gone")}
        api.delete_examples("research", "gone", [gone["two"]["id"]])
        api.new_prompt_version("research", "p", messages=[{"role": "system", "content": "one"},
                                                          {"role": "user", "content": "deux"}], commit_message="m")
    out = cli("pull", "tree.yaml", "--write")
    assert out.exit_code == 2, out.output
    assert tree.read_text() == text.replace("{q: one}, {q: two},   {q: three}", "{q: one}, {q: three}").replace(
        "content: two}", "content: deux}").replace("commit_message: first", "commit_message: m")
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0


def test_a_document_read_from_stdin_is_never_removed(cli: Cli, tmp_path: Path) -> None:
    text = f"kind: Prompt\nspace: research\nname: p\n{VERSION}"
    applied(cli, tmp_path, text)
    with ui(tmp_path) as api:
        api.delete("prompts", "p", space_id=api.space_id("research"))
    out = CliRunner().invoke(main, ["pull", "-", "--remove-absent", "--write", "--format", "json", "--emulator",
                                    str(tmp_path / "live.db")], input=text, catch_exceptions=False)
    assert out.exit_code == 2, out.output
    result = json.loads(out.stdout)
    assert result["edits"] == [] and result["files"] == []
    assert result["not_written"] == [{"address": "Prompt/research/p", "path": "",
                                      "reason": "deleted live; its document was not found"}]


def test_a_resource_deleted_live_loses_its_own_document_and_patches_and_a_shared_one_is_listed(
        envs: dict[str, Env], tmp_path: Path) -> None:
    staging = envs["staging"]
    own = tmp_path / "overlays/staging/own.yaml"
    own.write_text(f"kind: Prompt\nspace: staging\nname: mine\n{VERSION}")
    patches = tmp_path / "overlays/staging/patches.yaml"
    before = patches.read_text()
    patches.write_text(before + "---\nkind: Patch\ntarget: Prompt/mine\nspace: staging\npatch: {description: x}\n")
    assert staging.run("apply", "--auto-approve").exit_code == 0
    with staging.ui() as api:
        api.delete("prompts", "mine", space_id=api.space_id("staging"))
        api.delete("prompts", "summarize-ticket", space_id=api.space_id("staging"))
    code, out = staging.pull("--write")  # by default: listed, nothing removed
    assert code == 2 and out["edits"] == [] and out["not_written"] == [
        {"address": a, "path": "", "reason": "declared, not live: apply creates it (pull removes its document with "
                                             "--remove-absent, or with --since REF when REF declared it)"}
        for a in ("Prompt/staging/summarize-ticket", "Prompt/staging/mine")]
    code, out = staging.pull("--remove-absent", "--write")
    assert code == 2, out
    assert out["edits"] == [
        {"address": "Prompt/staging/mine", "path": "", "file": "overlays/staging/own.yaml", "line": 1,
         "action": "remove document", "before": "Prompt/staging/mine", "after": None},
        {"address": "Prompt/staging/mine", "path": "", "file": "overlays/staging/patches.yaml", "line": 9,
         "action": "remove document", "before": "Patch of Prompt/staging/mine", "after": None}]
    assert out["not_written"] == [{"address": "Prompt/staging/summarize-ticket", "path": "", "reason":
                                   "deleted live; its document is in base/research.yaml, which other environments "
                                   "load: not removed"}]
    assert own.read_text() == "" and patches.read_text() == before


def test_a_dotted_path_is_set_through_mappings_and_lists() -> None:
    from reconciler.pull.engine import _set_in

    spec: dict[str, Any] = {"a": {"l": [{"x": 1}, {"x": 2}]}}
    item = {"x": 9, "deep": [1]}
    first = {"y": {"z": 1}}
    whole = {"n": [1]}
    _set_in(spec, "a.l.1.x", 3)
    _set_in(spec, "a.l.2", item)  # past the end: appended
    _set_in(spec, "a.l.0", first)
    _set_in(spec, "b.c", whole)  # missing mappings made
    item["x"] = 10  # copies were stored, to every depth
    item["deep"].append(2)
    first["y"]["z"] = 2
    whole["n"].append(2)
    assert spec == {"a": {"l": [{"y": {"z": 1}}, {"x": 3}, {"x": 9, "deep": [1]}]}, "b": {"c": {"n": [1]}}}
    _set_in(spec, "b.c", "new")
    _set_in(spec, "a.l.1", ABSENT)
    _set_in(spec, "b.c", ABSENT)
    _set_in(spec, "b.gone", ABSENT)
    assert spec == {"a": {"l": [{"y": {"z": 1}}, {"x": 9, "deep": [1]}]}, "b": {}}


def test_a_dotted_path_is_read_through_mappings_and_list_items() -> None:
    from reconciler.pull.engine import _get

    spec = {"a": {"l": [{"x": 1}, {"x": 2}]}, "m": {"k": 1}}
    assert _get(spec, "a.l.1.x") == 2 and _get(spec, "a.l.0") == {"x": 1}
    assert _get(spec, "a.l.2") is ABSENT  # past the end
    assert _get(spec, "m.0") is ABSENT  # a number names an item of a list only
    assert _get(spec, "a.l.x") is ABSENT and _get(spec, "a.missing") is ABSENT and _get(spec, "a.l.0.x.y") is ABSENT


def test_a_difference_left_is_covered_by_a_record_at_its_field_above_it_below_it_or_on_the_whole_resource() -> None:
    from reconciler.pull.engine import _related

    assert _related("version.model", "version.model")
    assert _related("version.model", "version") and _related("version", "version.model")
    assert _related("version.model", "")  # a note on the whole resource
    assert not _related("version.models", "version.model") and not _related("version.model", "version.models")
    assert not _related("version.model", "version.mod") and not _related("description", "examples")




def test_a_block_list_is_edited_item_by_item_while_an_item_anchors_the_new_ones_else_written_whole(
        cli: Cli, tmp_path: Path) -> None:
    def prompt(name: str, *contents: str) -> str:
        items = "".join(f"    - {{role: user, content: {c}}}  # {c}\n" for c in contents)
        return (f"kind: Prompt\nspace: research\nname: {name}\nversion:\n  commit_message: first\n  provider: VENDOR_A\n"
                f"  messages:\n{items}")

    lists = {"tail": ["one", "two"], "shorter": ["one", "two", "three", "four"], "middle": ["one", "two", "three"],
             "last": ["one", "two", "three"], "other": ["one", "two"], "append": ["one", "two", "three"],
             "pair": ["one", "two", "three"]}
    live = {"tail": ["one", "x", "y", "z"],  # the last item replaced by three: nothing after it to anchor them
            "shorter": ["one", "x"],  # the last three replaced by one
            "middle": ["one", "x", "y", "three"],  # the middle one replaced by two: they go before "three"
            "last": ["one", "two"],  # the last one removed: only its line goes
            "other": ["x"],  # nothing in common
            "append": ["one", "two", "three", "four"],  # one more after the last
            "pair": ["one", "TWO", "THREE"]}  # two changed in place
    tree = applied(cli, tmp_path, "---\n".join(prompt(n, *c) for n, c in lists.items()))
    with ui(tmp_path) as api:
        for name, contents in live.items():
            api.new_prompt_version("research", name, commit_message="m",
                                   messages=[{"role": "user", "content": c} for c in contents])
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    starts, line = {}, 1  # each document's first line: the edits' lines are counted from it
    for name, contents in lists.items():
        starts[name], line = line, line + 8 + len(contents)
    edits: dict[str, list[tuple[str, int, str]]] = {}
    for e in json.loads(out.stdout)["edits"]:
        name = e["address"].rpartition("/")[2]
        if e["path"] != "version.commit_message":
            edits.setdefault(name, []).append((e["path"], e["line"] - starts[name] + 1, e["action"]))
    whole = [("version.messages", 7, "update")]
    assert edits == {
        "tail": whole, "shorter": whole, "other": whole,
        "middle": [("version.messages.1", 9, "remove"), ("version.messages.1", 10, "add"),
                   ("version.messages.2", 10, "add")],
        "last": [("version.messages.2", 10, "remove")],
        "append": [("version.messages.3", 10, "add")],
        "pair": [("version.messages.1.content", 9, "update"), ("version.messages.2.content", 10, "update")]}
    docs = tree.read_text().split("---\n")
    kept = {n: prompt(n, *c).replace("first", "m") for n, c in lists.items()}
    assert docs[2] == kept["middle"].replace("    - {role: user, content: two}  # two\n",
                                             "    - {role: user, content: x}\n    - {role: user, content: y}\n")
    assert docs[3] == kept["last"].replace("    - {role: user, content: three}  # three\n", "")
    assert docs[5] == kept["append"] + "    - {role: user, content: four}\n"
    assert docs[6] == kept["pair"].replace("content: two}", "content: TWO}").replace("content: three}",
                                                                                       "content: THREE}")
    head = "kind: Prompt\nspace: research\nname: {}\nversion:\n  commit_message: m\n  provider: VENDOR_A\n  messages:\n"
    for n, comment in (("tail", "two"), ("shorter", "four"), ("other", "two")):  # rewritten whole, in block style
        items = "".join(f"    - role: user\n      content: {c}\n" for c in live[n])
        assert docs[list(lists).index(n)] == head.format(n) + items[:-1] + f"  # {comment}\n"
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0


def test_a_variable_inside_a_string_is_written_only_when_it_is_the_strings_one_variable(
        cli: Cli, tmp_path: Path) -> None:
    def prompt(name: str, description: str) -> str:
        return f"kind: Prompt\nspace: research\nname: {name}\ndescription: \"{description}\"\n{VERSION}"

    declared = {"two": "${var.a}-${var.b}", "twice": "${var.e}/${var.e}", "emptied": "tag-${var.c}-end",
                "overlap": "ab${var.d}ba", "whole": "${var.a}"}
    live = {"two": "x-y", "twice": "new/new", "emptied": "tag--end", "overlap": "aba", "whole": "changed"}
    (tmp_path / "vars.yaml").write_text("a: one\nb: two\nc: mid\nd: cd\ne: old\n")
    tree = tmp_path / "tree.yaml"
    tree.write_text("---\n".join(prompt(n, d) for n, d in declared.items()))
    done = cli("apply", "tree.yaml", "--var-file", "vars.yaml", "--auto-approve")
    assert done.exit_code == 0, done.output
    with ui(tmp_path) as api:
        for name, description in live.items():
            p = api.prompt("research", name)
            api.c.patch(f"/v2/prompts/{p['id']}", json={"description": description}).raise_for_status()
    out = cli("pull", "tree.yaml", "--var-file", "vars.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    result = json.loads(out.stdout)
    assert {n["address"].rpartition("/")[2]: n["reason"] for n in result["not_written"]} == {
        "two": "built from variables (vars.yaml:1, vars.yaml:2) inside a string: not written",
        "twice": "built from variables (vars.yaml:5) inside a string: not written",
        "overlap": "built from ${var.d} (vars.yaml:4) and live no longer matches the rest of the string: not written",
        "whole": "set by vars.yaml:1, which also sets Prompt/research/two description; this environment has no overlay "
                 "(a folder with its Patches or var file) to write it in: not written"}  # a, used in two's string too
    assert [(e["address"], e["file"], e["line"], e["before"], e["after"]) for e in result["edits"]] == [
        ("Prompt/research/emptied", "vars.yaml", 3, "tag-mid-end", "")]
    assert (tmp_path / "vars.yaml").read_text() == "a: one\nb: two\nc: ''\nd: cd\ne: old\n"


def test_items_of_a_list_set_by_a_variable_are_written_in_the_var_file_and_a_flow_list_whole(
        cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("msgs:\n  - {role: user, content: one}\n  - {role: user, content: two}\n"
                                        "  - {role: user, content: three}  # kept\n")
    tree = tmp_path / "tree.yaml"
    tree.write_text("kind: Prompt\nspace: research\nname: byvar\nversion:\n  commit_message: first\n"
                    "  provider: VENDOR_A\n  messages: {var: msgs}\n---\n"
                    "kind: Prompt\nspace: research\nname: flow\nversion:\n  commit_message: first\n"
                    "  provider: VENDOR_A\n  messages: [{role: user, content: one}, {role: user, content: two}, "
                    "{role: user, content: three}]  # c\n")
    done = cli("apply", "tree.yaml", "--var-file", "vars.yaml", "--auto-approve")
    assert done.exit_code == 0, done.output
    with ui(tmp_path) as api:
        api.new_prompt_version("research", "byvar", commit_message="first", messages=[
            {"role": "user", "content": "one"}, {"role": "user", "content": "TWO"}, {"role": "user", "content": "THREE"}])
        api.new_prompt_version("research", "flow", commit_message="first", messages=[  # one item replaced by two
            {"role": "user", "content": c} for c in ("one", "x", "y", "three")])
    out = cli("pull", "tree.yaml", "--var-file", "vars.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    result = json.loads(out.stdout)
    assert result["not_written"] == []
    assert [(e["address"], e["path"], e["file"], e["line"], e["before"], e["after"]) for e in result["edits"]] == [
        ("Prompt/research/flow", "version.messages", "tree.yaml", 15,
         [{"role": "user", "content": c} for c in ("one", "two", "three")],
         [{"role": "user", "content": c} for c in ("one", "x", "y", "three")]),
        ("Prompt/research/byvar", "version.messages.1.content", "vars.yaml", 3, "two", "TWO"),  # once all are pulled
        ("Prompt/research/byvar", "version.messages.2.content", "vars.yaml", 4, "three", "THREE")]
    assert (tmp_path / "vars.yaml").read_text() == (
        "msgs:\n  - {role: user, content: one}\n  - {role: user, content: TWO}\n  - {role: user, content: THREE}  # kept\n")
    assert tree.read_text().endswith("  messages: [{role: user, content: one}, {role: user, content: x}, "
                                     "{role: user, content: y}, {role: user, content: three}]  # c\n")


def test_a_document_deleted_live_is_removed_from_its_file_when_stdin_is_read_too(cli: Cli, tmp_path: Path) -> None:
    tree = applied(cli, tmp_path, f"kind: Prompt\nspace: research\nname: gone\n{VERSION}")
    piped = f"kind: Prompt\nspace: research\nname: piped\n{VERSION}"
    assert CliRunner().invoke(main, ["apply", "-", "--auto-approve", "--emulator", str(tmp_path / "live.db")],
                              input=piped, catch_exceptions=False).exit_code == 0
    with ui(tmp_path) as api:
        api.delete("prompts", "gone", space_id=api.space_id("research"))
    out = CliRunner().invoke(main, ["pull", "tree.yaml", "-", "--remove-absent", "--write", "--format", "json",
                                    "--emulator", str(tmp_path / "live.db")], input=piped, catch_exceptions=False)
    assert out.exit_code == 2, out.output
    result = json.loads(out.stdout)
    assert result["not_written"] == []
    assert result["edits"] == [{"address": "Prompt/research/gone", "path": "", "file": "tree.yaml", "line": 1,
                                "action": "remove document", "before": "Prompt/research/gone", "after": None}]
    assert tree.read_text() == ""


def test_a_value_of_a_patch_from_a_shared_variable_is_replaced_in_that_patch(envs: dict[str, Env], tmp_path: Path) -> None:
    staging = envs["staging"]
    patches = tmp_path / "overlays/staging/patches.yaml"
    patches.write_text("kind: Patch\ntarget: Prompt/summarize-ticket\nspace: staging\npatch:\n  version:\n"
                       "    model: model-small\n  description: \"${var.env} digest\"  # c\n")
    assert staging.run("apply", "--auto-approve").exit_code == 0
    with staging.ui() as api:
        p = api.prompt("staging", "summarize-ticket")
        api.c.patch(f"/v2/prompts/{p['id']}", json={"description": "qa digest"}).raise_for_status()
    code, out = staging.pull("--write")
    assert code == 2 and out["not_written"] == [], out
    assert out["edits"] == [{"address": "Prompt/staging/summarize-ticket", "path": "description",
                             "file": "overlays/staging/patches.yaml", "line": 4, "action": "patch",
                             "before": "staging digest", "after": "qa digest"}]
    assert patches.read_text() == ("kind: Patch\ntarget: Prompt/summarize-ticket\nspace: staging\npatch:\n  version:\n"
                                   "    model: model-small\n  description: \"qa digest\"  # c\n")
    assert staging.run("plan", "--detailed-exitcode").exit_code == 0


def test_a_field_of_the_shared_base_removed_live_is_removed_by_the_environments_patch(
        envs: dict[str, Env], tmp_path: Path) -> None:
    staging = envs["staging"]
    with staging.ui() as api:
        p = api.prompt("staging", "summarize-ticket")
        body = {k: p["version"][k] for k in ("provider", "model", "input_variable_format", "messages", "commit_message")
                if p["version"].get(k) is not None}  # invocation_params left out
        api.c.post(f"/v2/prompts/{p['id']}/versions", json=body).raise_for_status()
    code, out = staging.pull("--write")
    assert code == 2 and out["not_written"] == [], out  # a merge patch merges a mapping: its keys are nulled
    assert [(e["path"], e["file"], e["action"], e["before"], e["after"]) for e in out["edits"]] == [
        ("version.invocation_params", "overlays/staging/patches.yaml", "patch", {"temperature": 0.7}, {})]
    assert "  version: {model: model-small, invocation_params: {temperature: null}}\n" in \
        (tmp_path / "overlays/staging/patches.yaml").read_text()
    assert staging.run("plan", "--detailed-exitcode").exit_code == 0
    assert envs["production"].run("plan", "--detailed-exitcode").exit_code == 0


def test_examples_file_edits_name_their_dataset_file_and_values_and_removals_go_bottom_up(
        cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text("kind: Dataset\nspace: research\nname: nd\nkey: k\nexamples_file: nd.NDJSON\n"
                                        "---\nkind: Dataset\nspace: research\nname: last\nkey: k\n"
                                        "examples_file: last.jsonl\n---\nkind: Dataset\nspace: research\nname: free\n"
                                        "examples_file: free.jsonl\n")
    (tmp_path / "free.jsonl").write_text('{"q": "a"}\n')
    (tmp_path / "nd.NDJSON").write_text("\n".join(f'{{"k": {n}, "q": "{q}"}}' for n, q in enumerate("abcd")))
    (tmp_path / "last.jsonl").write_text('{"k": 0, "q": "x"}\n{"k": 1, "q": "y"}')
    assert cli("apply", "tree.yaml", "--auto-approve").exit_code == 0
    with ui(tmp_path) as api:
        live = {x["q"]: x for x in api.examples("research", "nd")}
        api.update_examples("research", "nd", [{"id": live["a"]["id"], "k": 0, "q": "A"}])
        api.delete_examples("research", "nd", [live["b"]["id"], live["d"]["id"]])  # the last line among them
        api.append_examples("research", "nd", [{"k": 4, "q": "e"}, {"k": 5, "q": "f"}])
        x = next(x for x in api.examples("research", "last") if x["q"] == "x")
        api.update_examples("research", "last", [{"id": x["id"], "k": 0, "q": "X"}])
        api.append_examples("research", "free", [{"q": "two\u2028lines"}])
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    assert json.loads(out.stdout)["not_written"] == [{"address": "Dataset/research/free", "path": "examples", "reason":
        "1 live example(s) holding a line separator (U+2028, U+2029 or U+0085): the tree cannot hold them; not "
        "written, nor any example removed (one may be such an example)"}]  # a dataset without a key
    assert json.loads(out.stdout)["edits"] == [
        {"address": "Dataset/research/nd", "path": path, "file": "nd.NDJSON", "line": line, "action": action,
         "before": before, "after": after} for path, line, action, before, after in (
            ("examples.0", 1, "update", {"k": 0, "q": "a"}, {"k": 0, "q": "A"}),
            ("examples.3", 4, "remove", {"k": 3, "q": "d"}, None), ("examples.1", 2, "remove", {"k": 1, "q": "b"}, None),
            ("examples.4", 5, "add", None, {"k": 4, "q": "e"}), ("examples.5", 6, "add", None, {"k": 5, "q": "f"}))] + [
        {"address": "Dataset/research/last", "path": "examples.0", "file": "last.jsonl", "line": 1, "action": "update",
         "before": {"k": 0, "q": "x"}, "after": {"k": 0, "q": "X"}}]
    assert (tmp_path / "nd.NDJSON").read_bytes() == \
        b'{"k": 0, "q": "A"}\n{"k": 2, "q": "c"}\n{"k": 4, "q": "e"}\n{"k": 5, "q": "f"}\n'
    assert (tmp_path / "last.jsonl").read_bytes() == b'{"k": 0, "q": "X"}\n{"k": 1, "q": "y"}'  # no line end added
    with ui(tmp_path) as api:  # the example the tree cannot hold, taken back: the rest is in sync
        api.delete_examples("research", "free", [e["id"] for e in api.examples("research", "free") if e["q"] != "a"])
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0


def test_keys_removed_and_added_live_in_a_block_mapping_take_their_own_lines(cli: Cli, tmp_path: Path) -> None:
    text = ("kind: Prompt\nspace: research\nname: p\ndescription: words\nversion:\n  commit_message: first\n"
            "  provider: VENDOR_A\n  messages: [{role: user, content: hi}]\n  invocation_params:\n"
            "    temperature: 0.5  # gone\n    max_tokens: 10  # kept\n")
    tree = applied(cli, tmp_path, text)
    with ui(tmp_path) as api:
        api.new_prompt_version("research", "p", commit_message="first",
                               invocation_params={"max_tokens": 10, "top_p": 0.9})
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    assert json.loads(out.stdout)["edits"] == [
        {"address": "Prompt/research/p", "path": path, "file": "tree.yaml", "line": line, "action": action,
         "before": before, "after": after} for path, line, action, before, after in (
            ("version.invocation_params.temperature", 10, "remove", 0.5, None),
            ("version.invocation_params.top_p", 10, "add", None, 0.9))]
    assert tree.read_text() == text.replace("    temperature: 0.5  # gone\n", "") + "    top_p: 0.9\n"
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0


def test_a_block_mapping_whose_every_key_changed_live_is_written_whole(cli: Cli, tmp_path: Path) -> None:
    text = ("kind: Prompt\nspace: research\nname: p\ndescription: words\nversion:\n  commit_message: first\n"
            "  provider: VENDOR_A\n  messages: [{role: user, content: hi}]\n  invocation_params:\n"
            "    temperature: 0.5\n")
    tree = applied(cli, tmp_path, text)
    with ui(tmp_path) as api:
        api.new_prompt_version("research", "p", commit_message="first", invocation_params={"top_p": 0.9})
    out = cli("pull", "tree.yaml", "--write", "--format", "json")
    assert out.exit_code == 2, out.output
    assert json.loads(out.stdout)["edits"] == [
        {"address": "Prompt/research/p", "path": "version.invocation_params", "file": "tree.yaml", "line": 9,
         "action": "update", "before": {"temperature": 0.5}, "after": {"top_p": 0.9}}]
    assert tree.read_text() == text.replace("temperature: 0.5", "top_p: 0.9")
    assert cli("plan", "tree.yaml", "--detailed-exitcode").exit_code == 0
