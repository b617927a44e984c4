"""Secret references: resolved only on request, never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import check_secrets, load_manifests
from reconciler.model import ManifestSet
from reconciler.providers import serialized_header_bytes

CANARY = "canary-secret-value-7d1f"


def agent(tmp_path: Path, headers: str) -> ManifestSet:
    f = tmp_path / "a.yaml"
    f.write_text("kind: Integration\nname: a\ntype: AGENT\nconfig:\n  endpoint: https://a.example.com/run\n"
                 f"  input_schema: {{}}\n  headers: {headers}\n", encoding="utf-8")
    return load_manifests([str(f)])


def test_loading_does_not_read_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    ms = agent(tmp_path, "{X-Token: {env: AGENT_TOKEN}}")
    assert len(ms.resources) == 1


def test_a_missing_variable_and_a_missing_file_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    ms = agent(tmp_path, "{X-Token: {env: AGENT_TOKEN}, X-Team: {file: team.txt}}")
    f = tmp_path / "a.yaml"
    assert check_secrets(ms) == [
        f"{f}:7:13: config.headers.X-Token: secret {{env: AGENT_TOKEN}}: environment variable AGENT_TOKEN is not set",
        f"{f}:7:42: config.headers.X-Team: secret {{file: {tmp_path / 'team.txt'}}}: cannot read file "
        f"{tmp_path / 'team.txt'} (No such file or directory)",
    ]


def test_resolvable_secrets_give_no_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", CANARY)
    (tmp_path / "team.txt").write_text(CANARY + "\n", encoding="utf-8")
    ms = agent(tmp_path, "{X-Token: {env: AGENT_TOKEN}, X-Team: {file: team.txt}}")
    assert check_secrets(ms) == []


def test_an_empty_variable_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "")
    (problem,) = check_secrets(agent(tmp_path, "{X-Token: {env: AGENT_TOKEN}}"))
    assert problem.endswith("secret {env: AGENT_TOKEN}: environment variable AGENT_TOKEN is empty")


def test_a_header_map_over_the_limit_with_its_values_is_a_problem_without_the_values(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIG", CANARY * 200)
    monkeypatch.setenv("SMALL", CANARY)
    ms = agent(tmp_path, "{X-One: {env: BIG}, X-Two: {env: BIG}, X-Three: {env: SMALL}}")
    (problem,) = check_secrets(ms)
    size = serialized_header_bytes({"X-One": CANARY * 200, "X-Two": CANARY * 200, "X-Three": CANARY})
    assert f": config.headers: the header map serializes to {size:,} bytes, over the 8,175-byte limit" in problem
    assert CANARY not in problem


def test_a_literal_secret_is_refused_without_repeating_it(tmp_path: Path) -> None:
    f = tmp_path / "l.yaml"
    f.write_text(f"kind: Integration\nname: l\ntype: LLM\nconfig:\n  provider: VENDOR_A\n  api_key: {CANARY}\n",
                 encoding="utf-8")
    with pytest.raises(ManifestError) as info:
        load_manifests([str(f)])
    assert info.value.problems == [
        f"{f}:6:12: config.api_key: a secret must be a reference: {{env: NAME}} or {{file: PATH}}; "
        "literal values would end up in git"]
    assert CANARY not in str(info.value)


def test_resolved_values_never_appear_in_a_resource_repr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", CANARY)
    ms = agent(tmp_path, "{X-Token: {env: AGENT_TOKEN}}")
    check_secrets(ms)
    assert CANARY not in repr(ms) and CANARY not in str(ms.resources[0].spec)


def test_cloud_d_bearer_token_and_proxy_headers_are_secret_refs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BEDROCK_TOKEN", raising=False)
    f = tmp_path / "d.yaml"
    f.write_text("kind: Integration\nname: d\ntype: LLM\nconfig:\n  provider: CLOUD_D\n  model_names: [m]\n"
                 "  auth: {auth_type: BEARER_TOKEN, api_key: {env: BEDROCK_TOKEN}}\n---\n"
                 "kind: Integration\nname: p\ntype: LLM\nconfig:\n  provider: CLOUD_D\n  model_names: [m]\n"
                 "  auth: {auth_type: PROXY_WITH_HEADERS, base_url: 'https://proxy.example.com',"
                 " headers: {X-Proxy: {env: BEDROCK_TOKEN}}}\n", encoding="utf-8")
    problems = check_secrets(load_manifests([str(f)]))
    # one variable, two uses: each named at its own line (a fix needs both places)
    assert [p.split(": ")[1] for p in problems] == ["config.auth.api_key", "config.auth.headers.X-Proxy"]
    assert [p.split(":")[1] for p in problems] == ["7", "15"]
