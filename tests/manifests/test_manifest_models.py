"""The manifest models: secrets never echoed, omitted kept apart from null, every schema
field described, no pydantic wording in a problem, and the typed document beside the spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import MISSING, ValidationError

from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests, manifest_json_schema
from reconciler.manifests.models import DOCUMENT, AgentIntegration, LlmIntegration, Prompt
from reconciler.model import SecretRef

CANARY = "sk-live-9f8e7d6c5b4a39281706"
CORPUS = Path(__file__).parent / "corpus" / "bad"

LLM = {"kind": "Integration", "name": "llm", "type": "LLM", "config": {"provider": "VENDOR_A", "api_key": {"env": "K"}}}
AGENT = {"kind": "Integration", "name": "agent", "type": "AGENT",
         "config": {"endpoint": "https://agent.example.com/run", "input_schema": {"type": "object"}}}
PROMPT = {"kind": "Prompt", "space": "s", "name": "p",
          "version": {"commit_message": "c", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "x"}]}}
DATASET = {"kind": "Dataset", "space": "s", "name": "d", "examples": [{"q": 1}]}
EVALUATOR = {"kind": "Evaluator", "space": "s", "name": "e", "commit_message": "c", "template_config": {
    "name": "t", "template": "x", "classification_choices": {"ok": 1},
    "llm_config": {"integration": "llm", "model_name": "m"}}}
RESTRICTION = {"kind": "ResourceRestriction", "name": "r", "resource_type": "PROJECT", "resource_id": "UHJvamVjdDox"}


def with_(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``doc`` with ``value`` at the dotted ``path``."""
    out: dict[str, Any] = json.loads(json.dumps(doc))
    *parents, last = path.split(".")
    node: Any = out
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    node[int(last) if isinstance(node, list) else last] = value
    return out


#: Ten (and more) places where a secret-looking literal is wrong, each refused with a problem.
WRONG_PLACES = [
    with_(LLM, "config.api_key", CANARY),
    with_(LLM, "config.api_key", {"env": CANARY}),
    with_(LLM, "config.provider", CANARY),
    with_(LLM, "type", CANARY),
    with_(LLM, "kind", CANARY),
    with_(LLM, "scopings", CANARY),
    with_(AGENT, "config.headers", {"X-Token": CANARY}),
    with_(AGENT, "config.headers", CANARY),
    with_(AGENT, "config.request_presets", [{"name": "p", "config": CANARY}]),
    {**LLM, "config": {"provider": "CLOUD_D", "model_names": ["m"],
                       "auth": {"auth_type": "BEARER_TOKEN", "api_key": CANARY}}},
    {**LLM, "config": {"provider": "CLOUD_D", "model_names": ["m"], "auth": {"auth_type": CANARY}}},
    with_(PROMPT, "version.messages.0.role", CANARY),
    with_(PROMPT, "version.provider", CANARY),
    with_(PROMPT, "restricted", CANARY),
    with_(PROMPT, "version.labels", CANARY),
    with_(DATASET, "experiment_retention", {"keep_last": CANARY}),
    with_(DATASET, "examples.0", CANARY),
    with_(EVALUATOR, "template_config.direction", CANARY),
    with_(EVALUATOR, "template_config.classification_choices", {"ok": CANARY}),
    with_(RESTRICTION, "resource_type", CANARY),
]


def test_a_secret_looking_literal_in_ten_wrong_places_is_in_no_message(tmp_path: Path) -> None:
    assert len(WRONG_PLACES) >= 10
    for i, doc in enumerate(WRONG_PLACES):
        f = tmp_path / f"m{i}.yaml"
        f.write_text(json.dumps(doc), encoding="utf-8")
        with pytest.raises(ManifestError) as info:
            load_manifests([str(f)])
        assert info.value.problems, doc
        assert all(line.startswith(f"{f}:") for line in info.value.problems)
        assert CANARY not in str(info.value) and CANARY not in repr(info.value), info.value.problems
        # the pydantic error itself (were it ever logged) does not carry the input either
        with pytest.raises(ValidationError) as raw:
            DOCUMENT.validate_python(doc)
        assert CANARY not in str(raw.value)


def test_no_problem_speaks_pydantic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CORPUS)
    for name in sorted(p.name for p in CORPUS.glob("*.yaml")):
        with pytest.raises(ManifestError) as info:
            load_manifests([name])
        text = str(info.value)
        for phrase in ("Input should be", "For further information", "errors.pydantic.dev", "validation error",
                       "Field required", "Extra inputs", "[type="):
            assert phrase not in text, (name, text)


def test_omitted_stays_apart_from_null_and_empty(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("\n---\n".join(json.dumps(d) for d in (
        {**AGENT, "description": None, "config": {**AGENT["config"], "headers": None, "request_presets": []}},
        {**AGENT, "name": "other"})), encoding="utf-8")
    explicit, omitted = load_manifests([str(f)]).resources
    assert explicit.spec["description"] is None and "description" not in omitted.spec
    assert explicit.spec["config"]["headers"] is None and "headers" not in omitted.spec["config"]
    assert explicit.spec["config"]["request_presets"] == [] and "request_presets" not in omitted.spec["config"]
    assert isinstance(explicit.doc, AgentIntegration) and isinstance(omitted.doc, AgentIntegration)
    assert explicit.doc.description is None and omitted.doc.description is MISSING
    assert "description" in explicit.doc.model_fields_set and "description" not in omitted.doc.model_fields_set


def test_the_typed_document_is_what_the_spec_dumps(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    f.write_text("\n---\n".join(json.dumps(d) for d in (LLM, PROMPT)), encoding="utf-8")
    llm, prompt = load_manifests([str(f)]).resources
    assert isinstance(llm.doc, LlmIntegration) and isinstance(prompt.doc, Prompt)
    assert llm.doc.config.api_key == SecretRef("env", "K") == llm.spec["config"]["api_key"]
    assert prompt.doc.version.messages[0].role == "user"
    assert prompt.doc.restricted is MISSING and "restricted" not in prompt.spec
    with pytest.raises(ValidationError, match="frozen"):
        prompt.doc.name = "renamed"  # frozen


def _properties(node: Any, where: str = "") -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        for name, prop in node.get("properties", {}).items():
            found.append((f"{where}.{name}", prop))
        for k, v in node.items():
            if k != "if":  # a switch's condition (kind: Prompt, provider: VENDOR_A...) is not a field
                found.extend(_properties(v, f"{where}.{k}"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found.extend(_properties(v, f"{where}[{i}]"))
    return found


def test_every_field_of_the_schema_has_a_description() -> None:
    props = _properties(manifest_json_schema())
    assert len(props) > 80
    missing = [where for where, prop in props if not prop.get("description")]
    assert missing == []


def test_the_schema_comes_from_the_models() -> None:
    schema = manifest_json_schema()
    llm_config = schema["definitions"]["LlmIntegration"]["properties"]["config"]["else"]  # else: a variable
    assert {case["then"]["$ref"].rsplit("/", 1)[1] for case in llm_config["allOf"]} == {
        "VendorAConfig", "VendorBConfig", "VendorCConfig", "CloudDConfig", "CustomConfig", "CloudEConfig",
        "NimFConfig"}
    assert schema["definitions"]["VendorAConfig"]["required"] == ["provider", "api_key"]


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_every_bad_manifest_is_refused_by_plan_and_apply_before_any_request(
        command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpus through the CLI: exit 1, every expected ``FILE:LINE:COL: PATH: message`` line on
    stderr, and no connection made (``connect`` would fail the test)."""
    from click.testing import CliRunner

    import reconciler.workflow
    from reconciler.cli.main import main

    def no_connection(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a request was about to be sent for a bad manifest")

    monkeypatch.setattr(reconciler.workflow, "connect", no_connection)
    monkeypatch.chdir(CORPUS)
    env = {"RECONCILER_API_KEY": "admin-key", "RECONCILER_BASE_URL": "https://api.invalid"}
    for name in sorted(p.name for p in CORPUS.glob("*.yaml")):
        args = [command, name] + (["--auto-approve"] if command == "apply" else [])
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code == 1, (name, result.output, result.exception)
        expected = (CORPUS / name.replace(".yaml", ".expected")).read_text(encoding="utf-8").splitlines()
        for line in expected:
            assert line in result.stderr, (name, line, result.stderr)
