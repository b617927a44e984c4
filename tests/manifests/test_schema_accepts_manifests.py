"""The JSON Schema (``reconciler schema``) accepts every valid manifest the repository ships, every
document of every file, Patch overlays and variables included; it switches on ``kind`` (so an error
names the chosen kind's fields), and refuses what the validator refuses where a schema can tell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from reconciler.manifests import manifest_json_schema
from reconciler.manifests.schema import SCHEMA_ID

ROOT = Path(__file__).resolve().parents[2]
#: What under examples/ is not a manifest: var files (given with --var-file), Kubernetes objects,
#: GitHub workflows (examples/github-actions.yml, examples/pull-ui-edits.yml), project files (their own
#: schema: tests/environments/test_project_file.py).
NOT_MANIFESTS = ("vars.yaml", "examples/kubernetes/", "examples/github-actions.yml", "examples/pull-ui-edits.yml",
                 "reconciler.yaml")


def manifest_files() -> list[Path]:
    found = [p for top in ("manifests", "examples") for p in sorted((ROOT / top).rglob("*.y*ml"))]
    return [p for p in found if not any(skip in p.relative_to(ROOT).as_posix() for skip in NOT_MANIFESTS)]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = manifest_json_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_the_files_checked_include_patches_and_variables() -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in manifest_files())
    assert "kind: Patch" in text and "{var: " in text and "${var." in text
    assert len(manifest_files()) >= 10


@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_document_of_every_shipped_manifest_is_valid(path: Path, validator: jsonschema.Draft7Validator) -> None:
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    assert documents
    for document in documents:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
        assert errors == [], (document.get("kind"), document.get("name") or document.get("target"))


def errors_of(validator: jsonschema.Draft7Validator, document: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


PROMPT = {"kind": "Prompt", "space": "research", "name": "p",
          "version": {"commit_message": "m", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "c"}]}}


def test_an_error_names_the_chosen_kinds_field_only(validator: jsonschema.Draft7Validator) -> None:
    assert errors_of(validator, {**PROMPT, "descriptoin": "x"}) == [
        ": Additional properties are not allowed ('descriptoin' was unexpected)"]
    evaluator = {"kind": "Evaluator", "space": "s", "name": "e", "commit_message": "c",
                 "template_config": {"name": "n", "template": "t", "classification_choices": {"a": 1},
                                     "llm_config": {"integration": "i", "model_name": "m", "modelname": "x"}}}
    assert errors_of(validator, evaluator) == [
        "template_config.llm_config: Additional properties are not allowed ('modelname' was unexpected)"]
    llm = {"kind": "Integration", "name": "i", "type": "LLM", "config": {"provider": "VENDOR_A", "endpoint": "x"}}
    assert errors_of(validator, llm) == ["config: Additional properties are not allowed ('endpoint' was unexpected)",
                                         "config: 'api_key' is a required property"]  # VENDOR_A's own fields


def test_an_unknown_kind_lists_the_kinds(validator: jsonschema.Draft7Validator) -> None:
    (error,) = errors_of(validator, {"kind": "Prompts", "name": "x"})
    assert "'Prompts' is not one of" in error and "'Patch'" in error and "'Ownership'" in error


def test_variables_are_accepted_where_a_value_goes_but_never_as_a_secret(
        validator: jsonschema.Draft7Validator) -> None:
    assert errors_of(validator, {**PROMPT, "space": {"var": "space"}, "restricted": {"var": "restricted"},
                                 "description": "for ${var.env}",
                                 "version": {**PROMPT["version"], "provider": "${var.provider}",
                                             "invocation_params": {"temperature": {"var": "t"}}}}) == []
    secret = {"kind": "Integration", "name": "i", "type": "LLM", "config": {"provider": "VENDOR_A",
                                                                              "api_key": {"var": "key"}}}
    assert errors_of(validator, secret)
    assert errors_of(validator, {**PROMPT, "restricted": {"var": "x", "other": 1}})


def test_a_patch_is_a_document_of_its_own(validator: jsonschema.Draft7Validator) -> None:
    patch = {"kind": "Patch", "target": "Prompt/p", "space": "research", "patch": {"restricted": True}}
    assert errors_of(validator, patch) == []
    assert errors_of(validator, {**patch, "space": None} | {"target": "Integration/i"}) != []
    no_space = {k: v for k, v in patch.items() if k != "space"}
    assert errors_of(validator, no_space) == [": 'space' is a required property"]
    assert errors_of(validator, {**patch, "patches": {}}) == [
        ": Additional properties are not allowed ('patches' was unexpected)"]


def test_the_schema_id_is_stable() -> None:
    assert manifest_json_schema()["$id"] == SCHEMA_ID == "https://reconciler.dev/schemas/manifest.json"


def test_a_policy_is_a_kind_of_the_schema_and_its_errors_name_its_own_fields(
        validator: jsonschema.Draft7Validator) -> None:
    policy = {"kind": "Policy", "name": "safety",
              "rules": [{"name": "no-deletes", "match": {"actions": ["delete"], "kinds": ["Integration"]},
                         "condition": "plan.summary.delete > 5", "effect": "warn", "message": "m"}]}
    assert "Policy" in manifest_json_schema()["properties"]["kind"]["enum"]
    assert errors_of(validator, policy) == []
    assert errors_of(validator, {**policy, "rules": [{**policy["rules"][0], "effect": "block"}]}) == [
        "rules.0.effect: 'block' is not one of ['deny', 'require_approval', 'warn']"]
    assert errors_of(validator, {**policy, "spec": {}}) == [
        ": Additional properties are not allowed ('spec' was unexpected)"]
    assert errors_of(validator, {"kind": "Policy", "name": "p", "rules": []}) == ["rules: [] should be non-empty"]
