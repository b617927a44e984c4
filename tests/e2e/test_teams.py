"""Teams sharing one account (README.md, "Teams sharing one account"), one user story a test, each through the CLI
against the emulator over a real socket: ownership-scoped prune, the integration guard, unmanaged
resources in drift, write-only changes sent with --since and --rotate, plans without secrets,
scopings by space name; and the bad input refused before any request."""

from __future__ import annotations

import json
import subprocess
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

Cli = Callable[..., Result]
ENV = {"RECONCILER_API_KEY": "admin-key", "A_KEY": "canary-team-a-71c2", "B_KEY": "canary-team-b-0d9e",
       "AGENT_TOKEN": "canary-agent-3a51", "EXTRA_TOKEN": "canary-extra-77aa"}

TEAM_A = """
kind: Ownership
name: team-a
spaces: [research]
integrations: ["team-a-*"]
---
kind: Integration
name: team-a-llm
type: LLM
config: {provider: VENDOR_A, api_key: {env: A_KEY}}
---
kind: Prompt
space: research
name: a-prompt
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
---
kind: Evaluator
space: research
name: judge-a
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: team-a-llm, model_name: m}
"""

TEAM_B = """
kind: Ownership
name: team-b
spaces: [team-b-space]
integrations: ["team-b-*"]
---
kind: Integration
name: team-b-llm
type: LLM
config: {provider: VENDOR_A, api_key: {env: B_KEY}}
---
kind: Prompt
space: team-b-space
name: b-prompt
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
"""

AGENT = """
kind: Ownership
name: agents
integrations: ["agent-*"]
---
kind: Integration
name: agent-one
type: AGENT
config:
  endpoint: https://agent.example.com/run
  headers: {X-Agent-Token: {env: AGENT_TOKEN}}
  input_schema: {type: object, properties: {q: {type: string}}}
"""


@pytest.fixture
def served(emulator_factory: Callable[..., tuple[str, Emulator]]) -> tuple[str, Emulator]:
    return emulator_factory(spaces=("team-b-space",))


@pytest.fixture
def cli(served: tuple[str, Emulator], monkeypatch: pytest.MonkeyPatch) -> Cli:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)

    def run(*args: str) -> Result:
        command = list(args)
        if command[0] in ("plan", "apply", "drift", "export"):
            command += ["--base-url", served[0]]
        return CliRunner().invoke(main, command, catch_exceptions=False)

    return run


@pytest.fixture
def api(served: tuple[str, Emulator]) -> Any:
    with httpx.Client(base_url=served[0], headers={"Authorization": "Bearer admin-key"}, timeout=10) as client:
        yield client


def write(root: Path, name: str, text: str) -> Path:
    tree = root / name
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "manifests.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return tree


def requests_by_route(served: tuple[str, Emulator]) -> dict[str, int]:
    return dict(httpx.get(f"{served[0]}/_emulator/stats", headers=EMULATOR_ADMIN).json()["requests"])


def requests_made(served: tuple[str, Emulator]) -> int:
    return sum(requests_by_route(served).values())


def integration_names(api: httpx.Client) -> set[str]:
    return {i["name"] for t in ("LLM", "AGENT")
            for i in api.get("/v2/integrations", params={"type": t, "limit": 100}).json()["integrations"]}


def space_id(api: httpx.Client, name: str) -> str:
    return str(next(s["id"] for s in api.get("/v2/spaces").json()["spaces"] if s["name"] == name))


def evaluator_names(api: httpx.Client, space: str) -> set[str]:
    found = api.get("/v2/evaluators", params={"space_id": space_id(api, space)}).json()["evaluators"]
    return {e["name"] for e in found}


# ---------------------------------------------------------------- (1) disjoint ownership


def test_two_trees_with_disjoint_ownership_each_prune_without_touching_the_other(
        cli: Cli, api: httpx.Client, tmp_path: Path) -> None:
    team_a, team_b = write(tmp_path, "team-a", TEAM_A), write(tmp_path, "team-b", TEAM_B)
    assert cli("apply", str(team_a), "--auto-approve").exit_code == 0
    assert cli("apply", str(team_b), "--auto-approve").exit_code == 0
    api.post("/v2/integrations", json={"type": "LLM", "name": "team-b-old",
                                       "config": {"provider": "VENDOR_A", "api_key": "x-key-value"}}).raise_for_status()
    api.post("/v2/integrations", json={"type": "LLM", "name": "someone-else",
                                       "config": {"provider": "VENDOR_A", "api_key": "x-key-value"}}).raise_for_status()

    planned = cli("plan", str(team_b), "--prune", "--format", "json")
    assert planned.exit_code == 0, planned.output
    deletes = [op["address"] for op in json.loads(planned.stdout)["operations"] if op["action"] == "delete"]
    assert deletes == ["Integration/team-b-old"]
    assert cli("apply", str(team_b), "--prune", "--auto-approve").exit_code == 0
    assert integration_names(api) == {"team-a-llm", "team-b-llm", "someone-else"}

    pruned_a = cli("apply", str(team_a), "--prune", "--auto-approve")
    assert pruned_a.exit_code == 0, pruned_a.output
    assert integration_names(api) == {"team-a-llm", "team-b-llm", "someone-else"}
    assert evaluator_names(api, "research") == {"judge-a"}
    for tree in (team_a, team_b):
        assert cli("plan", str(tree), "--prune", "--detailed-exitcode").exit_code == 0


def test_without_ownership_prune_leaves_account_wide_kinds_alone_and_says_how_to_own_them(
        cli: Cli, api: httpx.Client, tmp_path: Path) -> None:
    team_a = write(tmp_path, "team-a", TEAM_A)
    assert cli("apply", str(team_a), "--auto-approve").exit_code == 0
    bare = write(tmp_path, "bare", TEAM_B.split("---", 1)[1])  # team B's tree without its Ownership
    result = cli("plan", str(bare), "--prune", "--format", "json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert not [op for op in plan["operations"] if op["action"] == "delete"]
    assert any("kind: Ownership" in w for w in plan["warnings"])


def test_an_integration_used_by_a_live_evaluator_is_never_deleted_and_the_refusal_names_it(
        cli: Cli, api: httpx.Client, tmp_path: Path, served: tuple[str, Emulator]) -> None:
    team_a = write(tmp_path, "team-a", TEAM_A.replace("integration: team-a-llm", "integration: team-b-llm"))
    team_b = write(tmp_path, "team-b", TEAM_B)
    assert cli("apply", str(team_b), "--auto-approve").exit_code == 0
    assert cli("apply", str(team_a), "--auto-approve").exit_code == 0  # A's evaluator uses B's integration
    renamed = write(tmp_path, "team-b-next", TEAM_B.replace("name: team-b-llm", "name: team-b-llm2"))
    httpx.post(f"{served[0]}/_emulator/reset-stats", headers=EMULATOR_ADMIN).raise_for_status()
    refused = cli("apply", str(renamed), "--prune", "--auto-approve")
    assert refused.exit_code == 1
    assert "Integration/team-b-llm: the plan would delete it" in refused.stderr
    assert "evaluator judge-a in space research" in refused.stderr
    assert all(route.startswith("GET ") for route in requests_by_route(served))  # nothing was written
    assert "team-b-llm" in integration_names(api)


def test_an_integration_is_deleted_once_the_same_plan_moves_its_evaluator_off_it(
        cli: Cli, api: httpx.Client, tmp_path: Path) -> None:
    old = textwrap.dedent("""
        ---
        kind: Integration
        name: team-a-old
        type: LLM
        config: {provider: VENDOR_A, api_key: {env: A_KEY}}
        """)
    first = write(tmp_path, "first", TEAM_A.replace("integration: team-a-llm", "integration: team-a-old") + old)
    assert cli("apply", str(first), "--auto-approve").exit_code == 0
    # the next commit moves the evaluator to team-a-llm and drops team-a-old: one plan does both
    applied = cli("apply", str(write(tmp_path, "next", TEAM_A)), "--prune", "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert "team-a-old" not in integration_names(api)


# ---------------------------------------------------------------- (2) write-only changes


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"})
    return done.stdout.strip()


def stored_headers(served: tuple[str, Emulator], name: str) -> dict[str, str]:
    docs = [doc for _, doc in served[1].store.scan("integration") if doc["name"] == name]
    return dict(docs[0]["config"].get("headers") or {})


def test_a_header_added_to_an_agent_is_sent_with_since_and_with_rotate(
        cli: Cli, tmp_path: Path, served: tuple[str, Emulator]) -> None:
    repo = tmp_path / "repo"
    tree = write(repo, "agents", AGENT)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "agent")
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    base = git(repo, "rev-parse", "HEAD")
    manifest = tree / "manifests.yaml"
    manifest.write_text(manifest.read_text().replace(
        "headers: {X-Agent-Token: {env: AGENT_TOKEN}}",
        "headers: {X-Agent-Token: {env: AGENT_TOKEN}, X-Extra: {env: EXTRA_TOKEN}}"))

    blind = cli("plan", str(tree), "--detailed-exitcode")
    assert blind.exit_code == 0  # live state only shows has_headers: nothing to see without help
    assert "--rotate KIND/NAME" in blind.stdout and "--since REF" in blind.stdout

    since = cli("plan", str(tree), "--since", base, "--format", "json")
    assert since.exit_code == 0, since.output
    [op] = json.loads(since.stdout)["operations"]
    assert op["method"] == "PATCH" and "changed since " + base in op["note"]
    assert op["body"]["config"]["headers"] == {"X-Agent-Token": "(sensitive)", "X-Extra": "(sensitive)"}
    assert "canary" not in since.stdout

    rotate = cli("plan", str(tree), "--rotate", "Integration/agent-one", "--format", "json")
    assert [o["method"] for o in json.loads(rotate.stdout)["operations"]] == ["PATCH"]

    applied = cli("apply", str(tree), "--since", base, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert stored_headers(served, "agent-one") == {"X-Agent-Token": ENV["AGENT_TOKEN"], "X-Extra": ENV["EXTRA_TOKEN"]}
    git(repo, "commit", "-qam", "extra header")
    assert cli("plan", str(tree), "--since", "HEAD", "--detailed-exitcode").exit_code == 0


def test_rotate_sends_only_the_named_resources_secrets(cli: Cli, tmp_path: Path) -> None:
    tree = write(tmp_path, "both", TEAM_A.split("---\nkind: Prompt")[0] + "---\n" + AGENT.split("---", 1)[1]
                 .replace("agent-one", "team-a-agent"))
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    plan = json.loads(cli("plan", str(tree), "--rotate", "Integration/team-a-llm", "--format", "json").stdout)
    assert [(op["address"], sorted(op["secrets"])) for op in plan["operations"]] == [
        ("Integration/team-a-llm", ["/config/api_key"])]
    assert len(json.loads(cli("plan", str(tree), "--rotate-secrets", "--format", "json").stdout)["operations"]) == 2


# ---------------------------------------------------------------- (3) unmanaged resources


def test_drift_reports_a_hand_made_prompt_and_a_dropped_evaluator_and_counts_them_with_prune(
        cli: Cli, api: httpx.Client, tmp_path: Path) -> None:
    tree = write(tmp_path, "team-a", TEAM_A)
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    api.post("/v2/prompts", json={"space_id": space_id(api, "research"), "name": "by-hand", "version": {
        "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
             ).raise_for_status()
    without_evaluator = write(tmp_path, "next", TEAM_A.split("---\nkind: Evaluator")[0])

    for fmt in ("text", "json", "markdown"):
        plain = cli("drift", str(without_evaluator), "--format", fmt)
        assert plain.exit_code == 0, plain.output
        assert "Prompt/research/by-hand" in plain.stdout and "Evaluator/research/judge-a" in plain.stdout
    assert "Plan: 0 to create, 0 to update, 0 to delete; 2 unmanaged." in cli("drift", str(without_evaluator)).stdout
    summary = json.loads(cli("drift", str(without_evaluator), "--format", "json").stdout)["summary"]
    assert summary["unmanaged"] == 2
    assert cli("drift", str(without_evaluator), "--prune").exit_code == 2
    assert "2 unmanaged" in cli("plan", str(without_evaluator)).stdout


# ---------------------------------------------------------------- (4) plans without secrets


def test_a_plan_with_every_secret_unset_against_a_converged_account_needs_none(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = write(tmp_path, "team-a", TEAM_A + "---\n" + AGENT.split("---", 1)[1].replace("agent-one", "team-a-agent"))
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    for name in ("A_KEY", "B_KEY", "AGENT_TOKEN", "EXTRA_TOKEN"):
        monkeypatch.delenv(name)
    planned = cli("plan", str(tree), "--detailed-exitcode")
    assert planned.exit_code == 0, planned.output
    assert cli("drift", str(tree)).exit_code == 0
    # a secret the plan would send must resolve, at its line, before any write
    rotated = cli("apply", str(tree), "--rotate", "Integration/team-a-llm", "--auto-approve")
    assert rotated.exit_code == 1
    assert "manifests.yaml:9:" in rotated.stderr and "A_KEY is not set" in rotated.stderr


# ---------------------------------------------------------------- (5) scopings by space name


SCOPED = """
kind: Integration
name: scoped
type: {type}
config: {config}
scopings: [{scoping}]
"""
LLM_CONFIG = "{provider: VENDOR_A, api_key: {env: A_KEY}}"
AGENT_CONFIG = "{endpoint: 'https://agent.example.com/run', input_schema: {type: object}}"


@pytest.mark.parametrize("itype,config", [("LLM", LLM_CONFIG), ("AGENT", AGENT_CONFIG)])
def test_scopings_by_space_name_converge(cli: Cli, api: httpx.Client, tmp_path: Path, itype: str, config: str) -> None:
    tree = write(tmp_path, "scoped", SCOPED.format(type=itype, config=config, scoping="{space: research}"))
    applied = cli("apply", str(tree), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    [live] = api.get("/v2/integrations", params={"type": itype, "name": "scoped"}).json()["integrations"]
    assert [s["space_id"] for s in live["scopings"]] == [space_id(api, "research")]
    assert live["scopings"][0]["organization_id"]
    assert cli("plan", str(tree), "--detailed-exitcode").exit_code == 0


def test_an_unknown_space_lists_the_spaces_closest_first_and_a_name_given_as_id_gets_a_hint(
        cli: Cli, tmp_path: Path, served: tuple[str, Emulator]) -> None:
    unknown = cli("plan", str(write(tmp_path, "a", SCOPED.format(type="LLM", config=LLM_CONFIG,
                                                                  scoping="{space: reserch}"))))
    assert unknown.exit_code == 1
    assert "no space named 'reserch'; the spaces are: research, " in unknown.stderr
    assert "manifests.yaml:5" in unknown.stderr
    as_id = cli("plan", str(write(tmp_path, "b", SCOPED.format(type="LLM", config=LLM_CONFIG,
                                                                scoping="{space_id: research}"))))
    assert as_id.exit_code == 1 and "write {space: research}" in as_id.stderr


def test_the_emulator_creates_the_spaces_it_is_asked_for(api: httpx.Client) -> None:
    names = [s["name"] for s in api.get("/v2/spaces").json()["spaces"]]
    assert names == ["default", "research", "team-b-space"]


def test_emulator_spaces_from_the_environment_for_the_embedded_emulator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_EMULATOR_SPACES", "staging, production")
    monkeypatch.setenv("RECONCILER_API_KEY", "admin-key")
    tree = write(tmp_path, "t", SCOPED.format(type="LLM", config=LLM_CONFIG, scoping="{space: production}"))
    monkeypatch.setenv("A_KEY", "canary-key-1234")
    db = str(tmp_path / "state.db")
    result = CliRunner().invoke(main, ["apply", str(tree), "--emulator", db, "--auto-approve"])
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------- bad input, before any request


@pytest.mark.parametrize("text,args,message", [
    (TEAM_A + "---\nkind: Ownership\nname: again\n", (), "a second Ownership document"),
    (TEAM_A.replace('["team-a-*"]', '["team-a-*", ""]'), (), "integrations[1]: must not be empty"),
    (TEAM_A.replace("name: team-a-llm", "name: other-llm").replace("integration: team-a-llm",
                                                                      "integration: other-llm"),
     (), "outside the ownership 'team-a'"),
    (TEAM_A, ("--rotate", "Integration/team-a-lm"), "did you mean Integration/team-a-llm?"),
    (TEAM_A, ("--rotate", "Prompt/research/a-prompt"), "has no write-only secrets"),
    (TEAM_A, ("--since", "HEAD"), "not inside a git repository"),
])
def test_bad_input_is_refused_before_any_request(cli: Cli, tmp_path: Path, served: tuple[str, Emulator],
                                                 text: str, args: tuple[str, ...], message: str) -> None:
    tree = write(tmp_path, "bad", text)
    before = requests_made(served)
    result = cli("plan", str(tree), *args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert requests_made(served) == before


def test_an_unknown_revision_is_refused_before_any_request(cli: Cli, tmp_path: Path,
                                                           served: tuple[str, Emulator]) -> None:
    tree = write(tmp_path, "repo", TEAM_A)
    git(tmp_path / "repo", "init", "-q")
    before = requests_made(served)
    result = cli("plan", str(tree), "--since", "no-such-branch")
    assert result.exit_code == 1 and "no-such-branch: not a revision" in result.stderr
    assert requests_made(served) == before
