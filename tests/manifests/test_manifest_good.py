"""The manifest examples (docs/manifests.md) load as written, into the spec the planner expects."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import live_lookups, load_manifests
from reconciler.model import DesiredResource, ManifestSet, SecretRef, Source

GOOD = Path(__file__).parent / "good"
EXAMPLES = GOOD / "product-examples.yaml"


@pytest.fixture(scope="module")
def product() -> ManifestSet:
    return load_manifests([str(EXAMPLES)])


def by_address(ms: ManifestSet) -> dict[str, DesiredResource]:
    return {r.address: r for r in ms}


def test_product_examples_load_as_written(product: ManifestSet) -> None:
    assert [r.address for r in product] == [
        "Integration/vendor-a-prod",
        "Integration/support-agent",
        "Prompt/research/summarize-ticket",
        "Dataset/research/golden-tickets",
        "Evaluator/research/faithfulness",
        "ResourceRestriction/finance-dashboard",
    ]


def test_llm_integration_spec_holds_secret_refs_and_only_written_keys(product: ManifestSet) -> None:
    r = by_address(product)["Integration/vendor-a-prod"]
    assert r.identity == ("Integration", "LLM", "vendor-a-prod")
    assert r.space is None
    assert dict(r.spec) == {
        "type": "LLM",
        "scopings": [],
        "config": {"provider": "VENDOR_A", "api_key": SecretRef("env", "VENDOR_A_KEY"),
                   "is_function_calling_enabled": True},
    }


def test_agent_integration_spec_keeps_presets_and_header_refs(product: ManifestSet) -> None:
    r = by_address(product)["Integration/support-agent"]
    assert r.spec["description"] == "Replays support conversations"
    assert "scopings" not in r.spec
    config = r.spec["config"]
    assert config["headers"] == {"X-Agent-Token": SecretRef("env", "AGENT_TOKEN")}
    assert config["input_schema"]["required"] == ["question"]
    assert config["request_presets"] == [
        {"name": "cold", "description": "deterministic replay", "config": {"temperature": 0}}]


def test_prompt_spec_is_the_document_minus_kind_name_and_space(product: ManifestSet) -> None:
    r = by_address(product)["Prompt/research/summarize-ticket"]
    assert r.space == "research"
    assert set(r.spec) == {"description", "restricted", "version"}
    assert r.spec["version"]["messages"][1] == {"role": "user", "content": "{ticket}"}
    assert r.spec["version"]["labels"] == ["production"]


def test_dataset_examples_file_is_loaded_into_examples(product: ManifestSet) -> None:
    r = by_address(product)["Dataset/research/golden-tickets"]
    assert "examples_file" not in r.spec
    assert r.spec["key"] == "ticket_id"
    assert [e["ticket_id"] for e in r.spec["examples"]] == ["T-1001", "T-1002", "T-1003"]
    assert r.spec["experiment_retention"] == {"keep_last": 10, "older_than_days": 30}
    assert r.sources["examples"] == Source(str(EXAMPLES), 46, 1)
    assert r.sources["examples.2"] == Source(os.path.join(str(GOOD), "golden-tickets.jsonl"), 3, 1)


def test_evaluator_keeps_the_integration_name_for_the_planner(product: ManifestSet) -> None:
    r = by_address(product)["Evaluator/research/faithfulness"]
    assert r.spec["commit_message"] == "first version"
    assert r.spec["template_config"]["llm_config"]["integration"] == "vendor-a-prod"
    assert r.spec["template_config"]["classification_choices"] == {"faithful": 1, "unfaithful": 0}
    assert live_lookups(product) == []


def test_resource_restriction_identity_is_type_and_id(product: ManifestSet) -> None:
    r = by_address(product)["ResourceRestriction/finance-dashboard"]
    assert r.identity == ("ResourceRestriction", "DASHBOARD", "RGFzaGJvYXJkOjEy")
    assert dict(r.spec) == {"resource_type": "DASHBOARD", "resource_id": "RGFzaGJvYXJkOjEy"}


def test_sources_point_at_every_top_level_and_config_field(product: ManifestSet) -> None:
    r = by_address(product)["Integration/support-agent"]
    assert r.sources[""] == Source(str(EXAMPLES), 10, 1)
    assert r.sources["config"].line == 14
    assert r.sources["config.endpoint"] == Source(str(EXAMPLES), 15, 3)
    assert r.sources["config.request_presets.0.name"] == Source(str(EXAMPLES), 22, 7)
    assert r.source("config.request_presets.0.config.temperature") == Source(str(EXAMPLES), 24, 16)
    assert r.source("config.no_such_field") == r.sources["config"]


def test_explicit_null_and_empty_list_are_kept_and_omitted_keys_stay_out(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        "kind: Integration\nname: nim\ntype: LLM\nscopings: []\nconfig:\n  provider: NIM_F\n"
        "  api_key: null\n  headers: null\n  base_url: null\n  is_default_models_enabled: true\n"
        "  model_names: []\n", encoding="utf-8")
    (r,) = load_manifests([str(tmp_path / "m.yaml")])
    assert dict(r.spec["config"]) == {"provider": "NIM_F", "api_key": None, "headers": None, "base_url": None,
                                      "is_default_models_enabled": True, "model_names": []}
    assert r.spec["scopings"] == []


def test_file_secret_refs_become_absolute_paths_next_to_the_manifest(tmp_path: Path) -> None:
    sub = tmp_path / "team"
    sub.mkdir()
    (sub / "m.yaml").write_text(
        "kind: Integration\nname: a\ntype: LLM\nconfig:\n  provider: VENDOR_A\n"
        "  api_key: {file: ../secrets/key.txt}\n", encoding="utf-8")
    (r,) = load_manifests([str(tmp_path)])  # the tree: secrets/ is inside it
    assert r.spec["config"]["api_key"] == SecretRef("file", str(tmp_path / "secrets" / "key.txt"))


def test_standard_input_is_read_for_a_dash() -> None:
    text = "kind: ResourceRestriction\nname: p\nresource_type: PROJECT\nresource_id: UHJvamVjdDox\n"
    (r,) = load_manifests(["-"], stdin=io.StringIO(text))
    assert r.sources[""].file == "<stdin>"
    assert r.spec["resource_id"] == "UHJvamVjdDox"


def test_a_directory_loads_yaml_and_yml_files_sorted_and_skips_hidden_ones(tmp_path: Path) -> None:
    def rr(name: str) -> str:
        return f"kind: ResourceRestriction\nname: {name}\nresource_type: PROJECT\nresource_id: id-{name}\n"

    (tmp_path / "b").mkdir()
    (tmp_path / ".github").mkdir()
    (tmp_path / "b" / "two.yml").write_text(rr("two"), encoding="utf-8")
    (tmp_path / "a.yaml").write_text(rr("one"), encoding="utf-8")
    (tmp_path / "c.yaml").write_text(rr("three") + "---\n" + rr("four"), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not yaml", encoding="utf-8")
    (tmp_path / ".github" / "ci.yml").write_text("on: push\n", encoding="utf-8")
    ms = load_manifests([str(tmp_path)])
    assert [r.name for r in ms] == ["one", "two", "three", "four"]
    assert ms.paths == (str(tmp_path),)


def test_the_same_file_given_twice_is_read_once(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text("kind: ResourceRestriction\nname: p\nresource_type: PROJECT\nresource_id: x\n", encoding="utf-8")
    assert len(load_manifests([str(f), str(tmp_path)]).resources) == 1


def test_a_json_examples_file_records_the_line_of_each_example(tmp_path: Path) -> None:
    (tmp_path / "ex.json").write_text(json.dumps([{"q": "a"}, {"q": "b"}], indent=2), encoding="utf-8")
    (tmp_path / "d.yaml").write_text("kind: Dataset\nspace: s\nname: d\nexamples_file: ex.json\n", encoding="utf-8")
    (r,) = load_manifests([str(tmp_path / "d.yaml")])
    assert r.spec["examples"] == [{"q": "a"}, {"q": "b"}]
    assert r.sources["examples.1"].line == 5


def test_inline_examples_are_kept_as_written(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(
        "kind: Dataset\nspace: s\nname: d\nkey: id_\nexamples:\n  - {id_: 1, when: 2024-01-01}\n", encoding="utf-8")
    (r,) = load_manifests([str(tmp_path / "d.yaml")])
    assert r.spec["examples"] == [{"id_": 1, "when": "2024-01-01"}]
    assert r.sources["examples.0"].line == 6


def test_identities_are_unique_across_files_and_the_error_names_both(tmp_path: Path) -> None:
    doc = "kind: Prompt\nspace: s\nname: p\nversion: {commit_message: c, provider: VENDOR_A, messages: [{role: user, content: x}]}\n"
    (tmp_path / "a.yaml").write_text(doc, encoding="utf-8")
    (tmp_path / "b.yaml").write_text("# moved\n" + doc, encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifests([str(tmp_path)])
    (problem,) = info.value.problems
    assert problem.startswith(f"{tmp_path / 'b.yaml'}:2:1: Prompt/s/p: ")
    assert f"{tmp_path / 'a.yaml'}:1:1" in problem




def test_an_undeclared_integration_name_is_recorded_for_live_lookup(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text(
        "kind: Evaluator\nspace: s\nname: e\ncommit_message: c\ntemplate_config:\n  template: t\n"
        "  name: e\n  classification_choices: {ok: 1}\n  llm_config: {integration: shared-llm, model_name: m}\n", encoding="utf-8")
    ms = load_manifests([str(tmp_path / "e.yaml")])
    assert [(r.name, name) for r, name in live_lookups(ms)] == [("e", "shared-llm")]


def test_empty_documents_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("---\n# nothing\n---\n", encoding="utf-8")
    assert load_manifests([str(tmp_path / "m.yaml")]).resources == ()


def test_a_missing_path_is_a_problem(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as info:
        load_manifests([str(tmp_path / "nope.yaml")])
    assert info.value.problems == [f"{tmp_path / 'nope.yaml'}:1:1: path: no such file or directory"]
