"""Integration config rules, parametrised over the provider table (the one the emulator enforces)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests
from reconciler.providers import LLM_CONFIG_FIELDS, PROVIDERS, ConfigField, FieldKind

SAMPLE: dict[FieldKind, Any] = {
    FieldKind.BOOL: True,
    FieldKind.STRING: "https://llm.example.com/v1",
    FieldKind.STRING_LIST: ["model-x"],
    FieldKind.SECRET: {"env": "KEY"},
    FieldKind.HEADERS: {"X-Api-Key": {"env": "KEY"}},
    FieldKind.AUTH: {"auth_type": "DEFAULT", "role_arn": "arn:aws:iam::1:role/r"},
    FieldKind.OBJECT: {},
}


def sample(f: ConfigField) -> Any:
    return SAMPLE[f.kind]


def minimal_config(provider: str) -> dict[str, Any]:
    spec = PROVIDERS[provider]
    config: dict[str, Any] = {"provider": provider}
    config |= {n: sample(f) for n, f in spec.fields.items() if f.required_on_create}
    if spec.needs_model_source:
        config["is_default_models_enabled"] = True
    return config


def load_config(tmp_path: Path, config: dict[str, Any]) -> list[str]:
    f = tmp_path / "i.yaml"
    f.write_text(json.dumps({"kind": "Integration", "name": "i", "type": "LLM", "config": config}), encoding="utf-8")
    try:
        load_manifests([str(f)])
    except ManifestError as exc:
        return [p.split(": ", 1)[1] for p in exc.problems]
    return []


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_minimal_config_of_each_provider_is_valid(provider: str, tmp_path: Path) -> None:
    assert load_config(tmp_path, minimal_config(provider)) == []


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_every_field_of_each_provider_is_accepted(provider: str, tmp_path: Path) -> None:
    config = minimal_config(provider) | {n: sample(f) for n, f in PROVIDERS[provider].fields.items()}
    assert load_config(tmp_path, config) == []


@pytest.mark.parametrize(("provider", "field"), [
    (p, n) for p, spec in PROVIDERS.items() for n, f in spec.fields.items() if f.required_on_create])
def test_a_missing_create_required_field_is_an_error(provider: str, field: str, tmp_path: Path) -> None:
    config = minimal_config(provider)
    del config[field]
    assert load_config(tmp_path, config) == [
        f"config: missing required field '{field}' (needed to create the integration when it does not exist yet)"]


@pytest.mark.parametrize(("provider", "field"), [
    (p, n) for p, spec in PROVIDERS.items() for n in sorted(LLM_CONFIG_FIELDS - {"provider"}) if n not in spec.fields])
def test_a_field_that_does_not_apply_to_the_provider_is_an_error(provider: str, field: str, tmp_path: Path) -> None:
    config = minimal_config(provider) | {field: "x"}
    (problem,) = load_config(tmp_path, config)
    assert problem.startswith(f"config.{field}: '{field}' does not apply to provider {provider} (the API answers 422)")


@pytest.mark.parametrize(("provider", "field"), [
    (p, n) for p, spec in PROVIDERS.items() for n, f in spec.fields.items() if f.nullable])
def test_nullable_fields_accept_null(provider: str, field: str, tmp_path: Path) -> None:
    assert load_config(tmp_path, minimal_config(provider) | {field: None}) == []


@pytest.mark.parametrize("provider", [p for p, spec in PROVIDERS.items() if spec.needs_model_source])
def test_the_model_source_rule_counts_omitted_fields_with_their_create_defaults(provider: str, tmp_path: Path) -> None:
    config = minimal_config(provider)
    assert load_config(tmp_path, config | {"is_default_models_enabled": False, "model_names": ["m"]}) == []
    del config["is_default_models_enabled"]
    (problem,) = load_config(tmp_path, config)
    assert problem.startswith(f"config: {provider} needs a model source")


def test_misspelled_config_field_gets_a_suggestion(tmp_path: Path) -> None:
    config = minimal_config("VENDOR_A") | {"is_function_calling_enable": True}
    assert load_config(tmp_path, config) == [
        "config.is_function_calling_enable: unknown field 'is_function_calling_enable'; "
        "did you mean 'is_function_calling_enabled'?"]


def test_the_validator_knows_every_provider_of_the_table() -> None:
    """The validator is built from the provider table; it keeps no second copy of it."""
    from reconciler.manifests.models import LLM_CONFIGS

    assert set(LLM_CONFIGS) == set(PROVIDERS)
    assert all(set(model.model_fields) == {"provider", *PROVIDERS[name].fields} for name, model in LLM_CONFIGS.items())


@pytest.mark.parametrize("endpoint", [
    "https://10.0.0.1/run", "https://192.168.1.1/run", "https://[::1]/run", "https://169.254.169.254/latest",
    "https://2130706433/run", "https://0/run", "https://api.localhost/run"])
def test_agent_endpoints_at_private_or_loopback_literals_are_refused(endpoint: str, tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_text(json.dumps({"kind": "Integration", "name": "a", "type": "AGENT",
                             "config": {"endpoint": endpoint, "input_schema": {}}}), encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifests([str(f)])
    (problem,) = info.value.problems
    assert "the service only calls public addresses" in problem


def test_preset_config_is_checked_without_required_but_with_types(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    schema = {"type": "object", "properties": {"q": {"type": "string"}, "t": {"type": "number"}},
              "required": ["q"], "additionalProperties": False}
    presets = [{"name": "partial", "config": {"t": 1}}, {"name": "extra", "config": {"zzz": 1}}]
    f.write_text(json.dumps({"kind": "Integration", "name": "a", "type": "AGENT", "config": {
        "endpoint": "https://a.example.com", "input_schema": schema, "request_presets": presets}}), encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifests([str(f)])
    (problem,) = info.value.problems
    assert "config.request_presets[1].config: does not match input_schema: Additional properties" in problem


def test_nested_required_fields_may_be_missing_from_a_preset(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    schema = {"type": "object", "properties": {"opts": {"type": "object", "required": ["a", "b"],
                                                        "properties": {"a": {"type": "integer"}}}}}
    f.write_text(json.dumps({"kind": "Integration", "name": "a", "type": "AGENT", "config": {
        "endpoint": "https://a.example.com", "input_schema": schema,
        "request_presets": [{"name": "p", "config": {"opts": {"a": 1}}}]}}), encoding="utf-8")
    assert len(load_manifests([str(f)]).resources) == 1
