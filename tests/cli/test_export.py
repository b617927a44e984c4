"""``reconciler export``, in process: the manifests it writes from live state (each space's own
resources only, secrets as variables it names one to one, what the API cannot show left out with a
note), the files it writes them to, and what it refuses. Live state is given as values, or as an
emulator persisted in a file (``--emulator``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.errors import ConfigError
from reconciler.export import (
    ACCOUNT_EXPORTS,
    SPACED_EXPORTS,
    Unique,
    account_documents,
    check_out_dir,
    compared_documents,
    dump_documents,
    env_file,
    env_name,
    integration_manifest,
)
from reconciler.kinds import KindSpec
from reconciler.model import (
    ApiObject,
    DatasetObject,
    EvaluatorObject,
    EvaluatorVersionObject,
    LiveDataset,
    LiveEvaluator,
    LiveIntegration,
    LivePrompt,
    LiveSpace,
    LiveState,
    PromptObject,
    PromptVersionObject,
    RestrictionObject,
    SpacedObject,
)

ROOT = Path(__file__).resolve().parents[2]
ENV = {"RECONCILER_API_KEY": "admin-key", "VENDOR_A_KEY": "canary-vendor-a-7d1e", "AGENT_TOKEN": "canary-agent-4c8a"}
Cli = Callable[..., Result]


# ---------------------------------------------------------------- the variables a secret is named by


@pytest.mark.parametrize(("name", "variable"), [
    ("vendor-a", "SECRET_VENDOR_A__API_KEY"),  # lower case, digits, single hyphens: upper-cased as it is
    ("Vendor A!", "SECRET_VENDOR_A_9D17FABA807F__API_KEY"),  # any other: its letters and digits, and a digest
    ("-box-", "SECRET_BOX_57964A59B93E__API_KEY"),  # no underscore left at either end
    ("!!!", "SECRET_XE84C538E7FE2__API_KEY"),  # no letter nor digit: the digest alone
    ("x" * 30 + " " + "y" * 30, "SECRET_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXX_YYYYYYYYY_F5A753EF031A__API_KEY"),  # 40 kept
    ("caf\u00e9\udc80", "SECRET_CAF_C06D4C0F4EAB__API_KEY"),  # a lone surrogate (JSON allows one) is named too
])
def test_the_variable_of_a_secret_is_named_from_its_integration(name: str, variable: str) -> None:
    assert env_name(name, "api_key") == variable


def test_the_variable_of_a_secret_inside_a_field_names_both() -> None:
    assert env_name("n", "auth", "api_key") == "SECRET_N__AUTH_API_KEY"
    assert env_name("n", "headers", "header", header="x-team") == "SECRET_N__HEADERS_HEADER__X_TEAM"


# ---------------------------------------------------------------- an integration's manifest


def test_an_llm_integration_is_written_with_its_scopings_and_a_variable_per_secret_and_header() -> None:
    env: list[str] = []
    live = {"name": "gw", "type": "LLM", "description": "not an LLM's field",
            "scopings": [{"organization_id": "O1", "space_id": "S1", "created_at": "2026-01-01T00:00:00Z"}],
            "config": {"provider": "CUSTOM", "has_api_key": False, "header_names": ["X-A", "x-b"]}}

    assert integration_manifest(live, env) == {
        "kind": "Integration", "name": "gw", "type": "LLM", "scopings": [{"organization_id": "O1", "space_id": "S1"}],
        "config": {"provider": "CUSTOM", "api_key": None,
                   "headers": {"X-A": {"env": "SECRET_GW__HEADERS_HEADER__X_A_CF1F1BAD248C"},
                               "x-b": {"env": "SECRET_GW__HEADERS_HEADER__X_B"}}}}
    assert env == ["SECRET_GW__HEADERS_HEADER__X_A_CF1F1BAD248C", "SECRET_GW__HEADERS_HEADER__X_B"]


def test_the_secrets_of_an_auth_are_named_after_the_auth() -> None:
    env: list[str] = []
    bearer = {"name": "bearer", "type": "LLM",
              "config": {"provider": "CLOUD_D", "auth": {"auth_type": "BEARER_TOKEN", "has_api_key": True}}}
    proxy = {"name": "proxy", "type": "LLM", "config": {"provider": "CLOUD_D", "auth": {
        "auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example", "header_names": ["x-team"]}}}

    assert integration_manifest(bearer, env)["config"]["auth"] == {
        "auth_type": "BEARER_TOKEN", "api_key": {"env": "SECRET_BEARER__AUTH_API_KEY"}}
    assert integration_manifest(proxy, env)["config"]["auth"] == {
        "auth_type": "PROXY_WITH_HEADERS", "base_url": "https://proxy.example",
        "headers": {"x-team": {"env": "SECRET_PROXY__AUTH_HEADER__X_TEAM"}}}
    assert env == ["SECRET_BEARER__AUTH_API_KEY", "SECRET_PROXY__AUTH_HEADER__X_TEAM"]


def test_an_agent_keeps_its_description_and_leaves_its_headers_out_with_a_note() -> None:
    env: list[str] = []
    notes: list[str] = []
    agent = {"name": "helper", "type": "AGENT", "description": "Answers questions", "scopings": None,
             "config": {"endpoint": "https://agent.example/run", "has_headers": True}}

    doc = integration_manifest(agent, env, notes)

    assert doc == {"kind": "Integration", "name": "helper", "type": "AGENT", "description": "Answers questions",
                   "scopings": [], "config": {"endpoint": "https://agent.example/run", "request_presets": []}}
    assert env == [] and notes == [
        "# Integration/helper (AGENT) has headers live, but the API shows only that they exist, not their names; "
        "they are left unmanaged. To manage them, add config.headers: {NAME: {env: VAR}}."]
    assert "description" not in integration_manifest({**agent, "description": None}, env)


def test_an_integration_of_a_provider_this_version_does_not_know_is_written_with_its_provider_only() -> None:
    doc = integration_manifest({"name": "new", "type": "LLM", "config": {"provider": "VENDOR_Z", "region": "eu"}}, [])
    assert doc["config"] == {"provider": "VENDOR_Z"}


# ---------------------------------------------------------------- the YAML written


def test_documents_are_written_in_the_order_of_their_keys_with_text_as_a_person_writes_it() -> None:
    long = " ".join(["word"] * 18)  # 102 characters after "description: ": one line at the width of 110
    text = dump_documents([{"kind": "Prompt", "name": "caf\u00e9", "description": long,
                            "template": "Mark a wrong answer with\nX", "note": "first\n\u3000"}])

    assert text.splitlines()[:3] == ["kind: Prompt", "name: caf\u00e9", f"description: {long}"]
    assert "template: |-\n  Mark a wrong answer with\n  X\n" in text
    assert "note: |" in text  # a line of a full-width space is a line of the block too
    assert yaml.safe_load(text)["note"] == "first\n\u3000"


def test_a_long_line_folds_at_the_first_space_past_the_width_of_110() -> None:
    text = dump_documents([{"description": " ".join(["ww"] * 34)}])
    assert text.splitlines() == ["description: " + " ".join(["ww"] * 33), "  ww"]


# ---------------------------------------------------------------- secrets.env.example


def test_the_env_file_lists_each_variable_once_then_the_notes() -> None:
    assert env_file(["SECRET_B__API_KEY", "SECRET_A__API_KEY", "SECRET_B__API_KEY"], ["# a note"]) == (
        "# Secrets cannot be exported; set these before running plan on the exported manifests.\n"
        "SECRET_A__API_KEY=\nSECRET_B__API_KEY=\n# a note\n")


@pytest.mark.parametrize(("env", "notes", "line"), [
    (["SECRET_A__API_KEY"], ["not a comment"], 3),
    (["lower_case"], [], 2),
    ([], ["# a note\nEVIL=1"], 2),
])
def test_the_env_file_refuses_a_line_that_is_neither_a_variable_nor_a_comment(
        env: list[str], notes: list[str], line: int) -> None:
    with pytest.raises(ConfigError) as refused:
        env_file(env, notes)
    assert str(refused.value) == (f"secrets.env.example: line {line} would not be a variable or a comment; refused")


# ---------------------------------------------------------------- --out


def test_out_must_be_a_directory_and_empty_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")

    with pytest.raises(ConfigError) as not_a_directory:
        check_out_dir(tmp_path / "file", force=True)
    with pytest.raises(ConfigError) as not_empty:
        check_out_dir(tmp_path / "full", force=False)
    check_out_dir(tmp_path / "full", force=True)

    assert str(not_a_directory.value) == f"--out {tmp_path / 'file'}: exists and is not a directory"
    assert str(not_empty.value) == (f"--out {tmp_path / 'full'}: the directory is not empty; choose another, or pass "
                                    "--force to write into it (files of the same name are replaced)")


def test_names_made_safe_stay_distinct_whatever_their_case() -> None:
    names = Unique({"ownership.yaml"})
    assert [names.name("Ownership.yaml"), names.name("a"), names.name("A"), names.name("a"), names.name("a")] == [
        "Ownership.yaml-2", "a", "A-2", "a-3", "a-4"]
    assert Unique().name("golden", ".jsonl") == "golden.jsonl"


# ---------------------------------------------------------------- a space's documents


def two_spaces() -> LiveState:
    """Spaces S1 (research) and S2 (support), each with a prompt, a dataset and an evaluator: a
    space's documents follow the other's in the tables' order, or precede them."""
    llm = LiveIntegration.read({"id": "I1", "type": "LLM", "name": "vendor", "config": {"provider": "VENDOR_A"}})
    agent = LiveIntegration.read({"id": "I2", "type": "AGENT", "name": "helper", "config": {}})
    live = LiveState(spaces=[LiveSpace.read({"id": "S1", "name": "research"}),
                             LiveSpace.read({"id": "S2", "name": "support"})],
                     integrations={("LLM", "vendor"): llm, ("AGENT", "helper"): agent})
    for sid in ("S1", "S2"):
        live.prompts[(sid, f"p-{sid}")] = LivePrompt(
            PromptObject.read({"id": f"P{sid}", "name": f"p-{sid}", "space_id": sid}),
            PromptVersionObject.read({"id": f"PV{sid}", "model": "m", "labels": []}))
        live.datasets[(sid, f"d-{sid}")] = LiveDataset(DatasetObject.read({"id": f"D{sid}", "name": f"d-{sid}"}),
                                                       examples=[])
        live.evaluators[(sid, f"e-{sid}")] = LiveEvaluator(
            EvaluatorObject.read({"id": f"E{sid}", "name": f"e-{sid}", "space_id": sid}),
            EvaluatorVersionObject.read({"id": f"EV{sid}", "commit_message": "v1", "template_config": {}}))
    return live


@pytest.mark.parametrize("kind", sorted(SPACED_EXPORTS))
def test_a_space_gets_its_own_documents_only(kind: str) -> None:
    live = two_spaces()
    for sid, space in (("S1", "research"), ("S2", "support")):
        docs = SPACED_EXPORTS[kind](live, sid, space, lambda doc: True, {})
        assert [(d["kind"], d["space"], d["name"]) for d in docs] == [(kind, space, f"{kind[0].lower()}-{sid}")]


def test_a_prompt_is_written_with_its_latest_version_and_a_commit_message_even_when_live_has_none() -> None:
    live = LiveState(spaces=[LiveSpace.read({"id": "S1", "name": "research"})])
    live.prompts[("S1", "plain")] = LivePrompt(PromptObject.read({"id": "P1", "name": "plain"}),
                                               PromptVersionObject.read({"id": "V1", "model": "m"}))
    live.prompts[("S1", "told")] = LivePrompt(
        PromptObject.read({"id": "P2", "name": "told", "description": "Summarize"}),
        PromptVersionObject.read({"id": "V2", "commit_message": "tighter", "model": "m", "labels": ["production"]}))
    live.prompts[("S1", "unversioned")] = LivePrompt(PromptObject.read({"id": "P3", "name": "unversioned"}))

    assert SPACED_EXPORTS["Prompt"](live, "S1", "research", lambda doc: True, {}) == [
        {"kind": "Prompt", "space": "research", "name": "plain", "version": {"commit_message": "exported", "model": "m"}},
        {"kind": "Prompt", "space": "research", "name": "told", "description": "Summarize",
         "version": {"commit_message": "tighter", "model": "m", "labels": ["production"]}},
        {"kind": "Prompt", "space": "research", "name": "unversioned"}]


def test_an_evaluator_names_its_llm_integration_as_a_manifest_does() -> None:
    live = two_spaces()
    llm_config = {"ai_integration_id": "I1", "model_name": "model-large"}
    live.evaluators[("S1", "judge")] = LiveEvaluator(
        EvaluatorObject.read({"id": "E9", "name": "judge", "description": "Judges"}),
        EvaluatorVersionObject.read({"id": "EV9", "template_config": {"name": "judge", "llm_config": llm_config}}))
    live.evaluators[("S1", "odd")] = LiveEvaluator(  # an id no LLM integration has (an agent's): kept as read
        EvaluatorObject.read({"id": "E8", "name": "odd"}),
        EvaluatorVersionObject.read({"id": "EV8", "commit_message": "v2",
                                     "template_config": {"llm_config": {**llm_config, "ai_integration_id": "I2"}}}))
    live.evaluators[("S1", "bare")] = LiveEvaluator(EvaluatorObject.read({"id": "E7", "name": "bare"}),
                                                    EvaluatorVersionObject.read({"id": "EV7"}))

    docs = {d["name"]: d for d in SPACED_EXPORTS["Evaluator"](live, "S1", "research", lambda doc: True, {})}

    assert docs["judge"] == {"kind": "Evaluator", "space": "research", "name": "judge", "description": "Judges",
                             "commit_message": "exported", "template_config": {
                                 "name": "judge", "llm_config": {"model_name": "model-large", "integration": "vendor"}}}
    assert docs["odd"]["template_config"] == {"llm_config": {"ai_integration_id": "I2", "model_name": "model-large"}}
    assert "description" not in docs["odd"] and docs["odd"]["commit_message"] == "v2"
    assert docs["bare"]["template_config"] == {}


def test_a_dataset_is_written_with_its_examples_in_a_jsonl_file_of_its_own() -> None:
    live = LiveState(spaces=[LiveSpace.read({"id": "S1", "name": "research"})])
    examples = [{"id": "X1", "created_at": "2026-01-01T00:00:00Z", "text": "caf\u00e9", "answer": "b"}]
    live.datasets[("S1", "Golden")] = LiveDataset(DatasetObject.read({"id": "D1", "name": "Golden"}), examples=examples)
    live.datasets[("S1", "golden")] = LiveDataset(DatasetObject.read({"id": "D2", "name": "golden"}), examples=None)
    files: dict[str, str] = {}

    docs = SPACED_EXPORTS["Dataset"](live, "S1", "research", lambda doc: True, files)

    assert docs == [{"kind": "Dataset", "space": "research", "name": "Golden", "examples_file": "data/Golden.jsonl"},
                    {"kind": "Dataset", "space": "research", "name": "golden", "examples_file": "data/golden-2.jsonl"}]
    assert files == {"data/Golden.jsonl": '{"answer": "b", "text": "caf\u00e9"}\n', "data/golden-2.jsonl": ""}
    chosen = SPACED_EXPORTS["Dataset"](live, "S1", "research", lambda doc: doc["name"] == "golden", {})
    assert chosen == [{**docs[1], "examples_file": "data/golden.jsonl"}]  # no name taken by a dataset left out


def test_restrictions_are_written_for_projects_and_dashboards_only() -> None:
    live = LiveState(restrictions={
        (t, rid): RestrictionObject.read({"id": f"R{rid}", "resource_type": t, "resource_id": rid})
        for t, rid in (("PROMPT", "P1"), ("DASHBOARD", "D1"), ("PROJECT", "J1"))})
    assert ACCOUNT_EXPORTS["ResourceRestriction"](live) == [
        {"kind": "ResourceRestriction", "name": "dashboard-D1", "resource_type": "DASHBOARD", "resource_id": "D1"},
        {"kind": "ResourceRestriction", "name": "project-J1", "resource_type": "PROJECT", "resource_id": "J1"}]


def test_an_account_wide_kind_without_an_export_of_its_own_is_exported_as_its_name_and_compared_fields() -> None:
    """A new account-wide kind writes each live object as a document of its name and the fields its
    comparison reads (its identity's among them), none the API added, none null, in identity order."""
    tag = KindSpec("Tag", spaced=False, identity=("group", "name"), table="tags", collection="/v2/tags",
                   renamable=False, delete_rank=6, compared=("group", "name", "color"))
    objects = {(fields["group"], fields["name"]): ApiObject.read({"id": f"T{i}", **fields})
               for i, fields in enumerate([
                   {"group": "priority", "name": "urgent", "color": "red", "created_at": "2026-01-01T00:00:00Z"},
                   {"group": "area", "name": "billing", "color": None}])}
    assert account_documents(tag, objects) == [
        {"kind": "Tag", "name": "billing", "group": "area"},
        {"kind": "Tag", "name": "urgent", "group": "priority", "color": "red"}]


def test_a_spaced_kind_without_an_export_of_its_own_is_exported_as_its_compared_fields() -> None:
    """Every spaced kind has its own export today; a new one writes each object of the space as the
    fields its comparison reads, none the API added, none null."""
    note = KindSpec("Note", spaced=True, identity=("space", "name"), table="notes", collection="/v2/notes",
                    renamable=False, delete_rank=6, compared=("name", "description", "body"))
    objects = {key: SpacedObject.read({"id": f"N{i}", "name": key[1], "space_id": key[0], **fields})
               for i, (key, fields) in enumerate([
                   (("S1", "b"), {"body": "two", "description": None, "created_at": "2026-01-01T00:00:00Z"}),
                   (("S1", "a"), {"body": "one", "description": "first"}),
                   (("S2", "c"), {"body": "elsewhere"})])}
    assert compared_documents(note, objects, "S1", "research") == [
        {"kind": "Note", "space": "research", "name": "a", "description": "first", "body": "one"},
        {"kind": "Note", "space": "research", "name": "b", "body": "two"}]


# ---------------------------------------------------------------- the command, on an emulator persisted in a file


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cli:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--emulator", str(tmp_path / "live.db")], catch_exceptions=False)

    return run


@pytest.fixture
def applied(cli: Cli, tmp_path: Path) -> Path:
    """The quickstart's manifests applied, and in the space ``default`` a prompt and an evaluator that
    uses ``self-hosted-nim`` (another team's space): the tree."""
    import shutil

    tree = tmp_path / "manifests"
    shutil.copytree(ROOT / "manifests", tree)
    ownership = tree / "ownership.yaml"
    ownership.write_text(ownership.read_text().replace("spaces: [research]", "spaces: [research, default]"))
    (tree / "default").mkdir()
    for name in ("prompts.yaml", "evaluators.yaml"):
        text = (tree / "research" / name).read_text().replace("space: research", "space: default")
        (tree / "default" / name).write_text(text.replace("integration: vendor-a-prod", "integration: self-hosted-nim"))
    result = cli("apply", str(tree), "--auto-approve")
    assert result.exit_code == 0, result.output
    return tree


def written(out: Path) -> dict[str, list[Any]]:
    """Each file export wrote under ``out``: its documents (YAML), lines (JSONL, env)."""
    files: dict[str, list[Any]] = {}
    for p in sorted(out.rglob("*")):
        if p.is_file():
            rel = str(p.relative_to(out))
            text = p.read_text()
            files[rel] = list(yaml.safe_load_all(text)) if rel.endswith(".yaml") else text.splitlines()
    return files


def test_export_of_a_space_writes_that_space_and_only_the_integrations_its_evaluators_use(
        cli: Cli, applied: Path, tmp_path: Path) -> None:
    out = tmp_path / "team" / "research"  # its parent made too

    result = cli("export", "--space", "research", "--out", str(out))

    assert result.exit_code == 0, result.output
    files = written(out)
    assert sorted(files) == ["integrations.yaml", "ownership.yaml", "research/data/golden-tickets.jsonl",
                             "research/datasets.yaml", "research/evaluators.yaml", "research/prompts.yaml",
                             "secrets.env.example"]
    assert [d["name"] for d in files["integrations.yaml"]] == ["vendor-a-prod"]
    assert files["ownership.yaml"] == [{"kind": "Ownership", "name": "research", "spaces": ["research"],
                                        "integrations": ["vendor-a-prod"]}]
    assert files["research/evaluators.yaml"][0]["template_config"]["llm_config"]["integration"] == "vendor-a-prod"
    assert files["secrets.env.example"][1:] == ["SECRET_VENDOR_A_PROD__API_KEY="]


def test_export_of_the_account_writes_each_space_in_a_folder_of_its_own(cli: Cli, applied: Path, tmp_path: Path) -> None:
    out = tmp_path / "all"

    result = cli("export", "--out", str(out))

    assert result.exit_code == 0, result.output
    files = written(out)
    assert sorted(files) == ["default/evaluators.yaml", "default/prompts.yaml", "integrations.yaml",
                             "research/data/golden-tickets.jsonl", "research/datasets.yaml",
                             "research/evaluators.yaml", "research/prompts.yaml", "restrictions.yaml",
                             "secrets.env.example"]
    assert [(d["name"], d["config"].get("api_key")) for d in files["integrations.yaml"]] == [
        ("support-agent", None), ("self-hosted-nim", None),
        ("vendor-a-prod", {"env": "SECRET_VENDOR_A_PROD__API_KEY"})]
    assert files["restrictions.yaml"] == [{"kind": "ResourceRestriction", "name": "dashboard-RGFzaGJvYXJkOjEy",
                                           "resource_type": "DASHBOARD", "resource_id": "RGFzaGJvYXJkOjEy"}]
    assert [(d["space"], d["name"]) for d in files["default/prompts.yaml"]] == [("default", "summarize-ticket")]
    assert files["default/evaluators.yaml"][0]["template_config"]["llm_config"]["integration"] == "self-hosted-nim"
    assert f"wrote {out / 'secrets.env.example'} (1 variable to set)" in result.stdout


def test_export_of_named_resources_reads_only_the_spaces_they_name(cli: Cli, applied: Path, tmp_path: Path) -> None:
    result = cli("export", "Prompt/research/summarize-ticket", "--out", str(tmp_path / "one"), "-v")

    assert result.exit_code == 0, result.output
    listed = {line.split("space_id=")[1].split("&")[0] for line in result.stderr.splitlines() if "space_id=" in line}
    assert len(listed) == 1
    assert sorted(written(tmp_path / "one")) == ["research/prompts.yaml"]


def test_export_with_a_space_exports_the_named_resources_of_that_space_only(
        cli: Cli, applied: Path, tmp_path: Path) -> None:
    result = cli("export", "--space", "default", "Prompt/research/summarize-ticket", "--out", str(tmp_path / "x"))

    assert result.exit_code == 1
    assert "export: no such live resource: Prompt/research/summarize-ticket (did you mean " \
           "Prompt/default/summarize-ticket?)" in result.stderr


def test_export_names_every_unknown_resource_and_a_close_one_when_there_is_one(
        cli: Cli, applied: Path, tmp_path: Path) -> None:
    result = cli("export", "Prompt/research/summarise-ticket", "Integration/" + "0" * 20, "--out", str(tmp_path / "x"))

    assert result.exit_code == 1
    assert "export: no such live resource: Integration/00000000000000000000, Prompt/research/summarise-ticket (did you mean " \
           "Prompt/research/summarize-ticket?)\n" in result.stderr
    assert not (tmp_path / "x").exists()


def test_export_names_a_space_that_does_not_exist_as_what_was_asked(cli: Cli, applied: Path, tmp_path: Path) -> None:
    spaces = cli("export", "--space", "nowhere", "--space", "elsewhere", "--out", str(tmp_path / "x"))
    resource = cli("export", "Prompt/reserch/summarize-ticket", "--out", str(tmp_path / "y"))

    assert spaces.exit_code == 1 and "--space: no such space: nowhere, elsewhere" in spaces.stderr
    assert resource.exit_code == 1 and "export: no such live resource: Prompt/reserch/summarize-ticket (did you " \
                                       "mean Prompt/research/summarize-ticket?)" in resource.stderr


def test_export_refuses_to_write_through_a_link_planted_in_out(cli: Cli, applied: Path, tmp_path: Path) -> None:
    out, target = tmp_path / "out", tmp_path / "elsewhere.yaml"
    out.mkdir()
    target.write_text("mine\n")
    (out / "integrations.yaml").symlink_to(target)

    result = cli("export", "--out", str(out), "--force")

    assert result.exit_code == 1
    assert (f"export: {out / 'integrations.yaml'}: is a symbolic link; refusing to write through it (remove the "
            "link, or give the real path)") in result.stderr
    assert target.read_text() == "mine\n"


def test_a_space_named_like_a_file_of_the_export_gets_a_folder_of_its_own(cli: Cli, tmp_path: Path) -> None:
    from tests.pull.helpers import ui_on

    spaces = ("ownership.yaml", "Secrets.env.example")
    with ui_on(tmp_path / "live.db") as ui:
        for name in spaces:
            ui.c.post("/v2/spaces", json={"name": name}).raise_for_status()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "prompts.yaml").write_text("---\n".join(
        f"kind: Prompt\nspace: {name}\nname: p\nversion: {{commit_message: c, provider: VENDOR_A, model: m, messages: "
        "[{role: user, content: hi}]}\n" for name in spaces))
    applied = cli("apply", str(tree), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    out = tmp_path / "out"

    result = cli("export", "--space", spaces[0], "--space", spaces[1], "--out", str(out))

    assert result.exit_code == 0, result.output
    assert sorted(written(out)) == ["Secrets.env.example-2/prompts.yaml", "ownership.yaml",
                                    "ownership.yaml-2/prompts.yaml"]
    assert written(out)["ownership.yaml"][0]["name"] == "ownership.yaml-Secrets.env.example"
