"""The field trees a policy's ``fields`` and selections are checked against, built from the manifest
models (``reconciler.manifests.policy_fields``): each kind's fields, lists of models as items, free-form values
as ANY, every Integration provider's config merged into one tree. Built afresh here (the trees are
cached per kind), so what is asserted is what the models give now."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from reconciler.manifests import policy_fields as F
from reconciler.manifests.models import KIND_MODELS
from reconciler.manifests.policy_fields import ANY, LEAF, LIST


@pytest.fixture(autouse=True)
def fresh_trees() -> Iterator[None]:
    F.kind_tree.cache_clear()
    yield
    F.kind_tree.cache_clear()


HEAD = {"kind": LEAF, "name": LEAF, "protect": LEAF, "ignore_changes": ANY}


def test_a_prompts_tree_is_its_manifest_fields() -> None:
    assert F.kind_tree("Prompt") == HEAD | {
        "space": LEAF, "description": LEAF, "restricted": LEAF,
        "version": {"commit_message": LEAF, "provider": LEAF, "model": LEAF,
                    "messages": {LIST: {"role": LEAF, "content": LEAF}}, "input_variable_format": LEAF,
                    "invocation_params": ANY, "provider_params": ANY, "labels": ANY}}


def test_a_datasets_tree_has_free_form_examples_and_retention() -> None:
    assert F.kind_tree("Dataset") == HEAD | {
        "space": LEAF, "aliases": ANY, "key": LEAF, "examples": ANY, "examples_file": LEAF,
        "experiment_retention": {"keep_last": LEAF, "older_than_days": LEAF}}


def test_an_evaluators_template_config_is_nested_models() -> None:
    assert F.kind_tree("Evaluator")["template_config"] == {
        "name": LEAF, "template": LEAF, "include_explanations": LEAF, "use_function_calling_if_available": LEAF,
        "classification_choices": ANY, "direction": LEAF, "data_granularity": LEAF,
        "llm_config": {"integration": LEAF, "ai_integration_id": LEAF, "model_name": LEAF,
                       "invocation_parameters": ANY, "provider_parameters": ANY}}


def test_an_integrations_config_merges_every_type_and_provider() -> None:
    tree: Any = F.kind_tree("Integration")
    assert sorted(tree["config"]) == [
        "api_key", "auth", "base_url", "endpoint", "headers", "input_schema", "is_default_models_enabled",
        "is_function_calling_enabled", "location", "model_names", "project_access_label", "project_id", "provider",
        "request_presets"]
    assert tree["config"]["request_presets"] == {LIST: {"name": LEAF, "description": LEAF, "config": ANY}}
    assert tree["config"]["headers"] == ANY and tree["config"]["auth"]["headers"] == ANY
    assert tree["scopings"] == {LIST: {"organization_id": LEAF, "space_id": LEAF, "space": LEAF}}
    assert F.kind_tree("ResourceRestriction") == HEAD | {"resource_type": LEAF, "resource_id": LEAF}
    assert F.kind_tree("Experiment") == {"kind": LEAF, "name": LEAF, "space": LEAF, "experiment_retention": LEAF}


def test_merging_trees_keeps_every_name_and_a_free_form_value_wins() -> None:
    assert F._merge(ANY, {"a": LEAF}) == ANY and F._merge({"a": LEAF}, ANY) == ANY
    assert F._merge(LEAF, {"a": LEAF}) == {"a": LEAF} and F._merge({"a": LEAF}, LEAF) == {"a": LEAF}
    assert F._merge({"a": {"x": LEAF}, "b": LEAF}, {"a": {"y": LEAF}, "c": ANY}) == {
        "a": {"x": LEAF, "y": LEAF}, "b": LEAF, "c": ANY}
    assert F._merge({"a": LEAF}, {"a": ANY}) == {"a": ANY}


def test_a_tree_deeper_than_twelve_levels_is_free_form() -> None:
    prompt = KIND_MODELS["Prompt"]
    assert isinstance(F._tree(prompt, 12), dict)
    assert F._tree(prompt, 13) == ANY
    assert F._tree(list[int]) == ANY and F._tree(dict[str, int]) == ANY and F._tree(Any) == ANY
    assert F._tree(int) == LEAF and F._tree(object) == ANY and F._tree(dict) == ANY


def test_the_depth_limit_counts_every_level_models_lists_and_unions() -> None:
    prompt, integration = KIND_MODELS["Prompt"], KIND_MODELS["Integration"]
    assert F._tree(prompt, 12)["version"] == ANY
    assert isinstance(F._tree(prompt, 11)["version"], dict)
    assert F._tree(prompt, 9)["version"]["messages"] == {LIST: {"role": ANY, "content": ANY}}
    assert F._tree(prompt, 10)["version"]["messages"] == ANY
    assert F._tree(integration, 10)["config"] == ANY  # an Integration is a union of types, its config of providers
    assert F._tree(integration, 9)["config"]["provider"] == ANY
    assert F._tree(integration, 8)["config"]["provider"] == LEAF
