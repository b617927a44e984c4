"""Where features meet: the five wrong results a new user found, each through the CLI
against the emulator over a real socket. Each test failed on the code before the fix.

1. an alias outside the ownership is a validation error at its file:line, before any request;
2. a read-only key cannot see restrictions: they are left out with one warning, never drift;
3. plan and drift never resolve a secret (a create shows the reference); apply names the variable
   and every file:line that uses it, and it is not "a problem in the manifests";
4. ``export --space`` writes that space, the integrations its evaluators use and an Ownership;
5. ``drift --prune -q`` says what is true, and ``--allow-empty`` counts only what prune deletes.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.core import Emulator
from tests.conftest import EMULATOR_ADMIN

Cli = Callable[..., Result]
SECRETS = {"SUPPORT_KEY": "canary-support-5e1a", "SEARCH_KEY": "canary-search-2b7c",
           "AGENT_TOKEN": "canary-agent-c3d4"}


@pytest.fixture
def served(emulator_factory: Callable[..., tuple[str, Emulator]]) -> tuple[str, Emulator]:
    return emulator_factory(spaces=("support", "search"))


@pytest.fixture
def run(served: tuple[str, Emulator], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Result]:
    """The CLI with a given key (admin by default) and the secrets set; ``unset`` names secrets to
    leave out of the environment. It runs in the test's directory (the working tree a plan file's
    files must lie in)."""
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str, key: str = "admin-key", unset: tuple[str, ...] = ()) -> Result:
        env = {"RECONCILER_API_KEY": key, **{k: (None if k in unset else v) for k, v in SECRETS.items()}}
        command = list(args)
        if command[0] in ("plan", "apply", "drift", "export"):
            command += ["--base-url", served[0]]
        return CliRunner().invoke(main, command, env=env, catch_exceptions=False)

    return invoke


@pytest.fixture
def api(served: tuple[str, Emulator]) -> Any:
    with httpx.Client(base_url=served[0], headers={"Authorization": "Bearer admin-key"}, timeout=10) as client:
        yield client


def write(root: Path, name: str, text: str) -> Path:
    tree = root / name
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "manifests.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return tree


def routes(served: tuple[str, Emulator]) -> dict[str, int]:
    return dict(httpx.get(f"{served[0]}/_emulator/stats", headers=EMULATOR_ADMIN).json()["requests"])


def reset(served: tuple[str, Emulator]) -> None:
    httpx.post(f"{served[0]}/_emulator/reset-stats", headers=EMULATOR_ADMIN).raise_for_status()


def integrations(api: httpx.Client) -> dict[str, dict[str, Any]]:
    return {i["name"]: i for t in ("LLM", "AGENT")
            for i in api.get("/v2/integrations", params={"type": t, "limit": 100}).json()["integrations"]}


def space_id(api: httpx.Client, name: str) -> str:
    return str(next(s["id"] for s in api.get("/v2/spaces").json()["spaces"] if s["name"] == name))


SEARCH = """
kind: Ownership
name: search
spaces: [search]
integrations: ["search-*"]
---
kind: Integration
name: search-nim
type: LLM
config:
  provider: NIM_F
  base_url: https://nim.search.example.com/v1
  is_default_models_enabled: true
  headers: {X-Team-Key: {env: SEARCH_KEY}}
"""

SUPPORT = """
kind: Ownership
name: support
spaces: [support]
integrations: ["support-*"]
---
kind: Integration
name: support-nim
aliases: [search-nim]
type: LLM
config:
  provider: NIM_F
  base_url: https://nim.support.example.com/v1
  is_default_models_enabled: true
"""


# ---------------------------------------------------------------- 1. an alias crosses ownership


@pytest.mark.parametrize("command", ["validate", "plan", "apply", "drift"])
def test_an_alias_outside_the_ownership_is_refused_at_its_line_before_any_request(
        run: Cli, api: httpx.Client, served: tuple[str, Emulator], tmp_path: Path, command: str) -> None:
    assert run("apply", str(write(tmp_path, "search", SEARCH)), "--auto-approve").exit_code == 0
    support = write(tmp_path, "support", SUPPORT)
    reset(served)
    extra = ("--auto-approve", "--prune") if command == "apply" else ("--prune",) if command == "plan" else ()
    result = run(command, str(support), *extra)
    assert result.exit_code == 1
    assert (f"{support / 'manifests.yaml'}:8:11: aliases[0]: alias 'search-nim' matches no glob of 'integrations', "
            "outside the ownership 'support'") in result.stderr
    assert routes(served) == {}  # refused before any request
    live = integrations(api)
    assert "search-nim" in live and "support-nim" not in live
    assert live["search-nim"]["config"]["header_names"] == ["X-Team-Key"]


def test_an_alias_inside_the_ownership_still_renames(run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    old = write(tmp_path, "old", SUPPORT.replace("name: support-nim\naliases: [search-nim]\n", "name: support-old\n"))
    assert run("apply", str(old), "--auto-approve").exit_code == 0
    before = integrations(api)["support-old"]["id"]
    renamed = write(tmp_path, "new", SUPPORT.replace("aliases: [search-nim]", "aliases: [support-old]"))
    applied = run("apply", str(renamed), "--auto-approve", "--prune")
    assert applied.exit_code == 0, applied.output
    assert integrations(api)["support-nim"]["id"] == before and "support-old" not in integrations(api)


# ---------------------------------------------------------------- 2. a reader key and restrictions


RESTRICTED = """
kind: Ownership
name: support
spaces: [support]
integrations: ["support-*"]
---
kind: Prompt
space: support
name: triage
description: Triage a ticket
restricted: true
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{ticket}"}]}
---
kind: Prompt
space: support
name: open
restricted: false
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{ticket}"}]}
"""


def test_a_reader_key_leaves_restrictions_out_with_one_warning_and_never_reports_them_as_drift(
        run: Cli, api: httpx.Client, served: tuple[str, Emulator], tmp_path: Path) -> None:
    tree = write(tmp_path, "support", RESTRICTED)
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    assert run("drift", str(tree)).exit_code == 0  # the admin key sees the restriction: in sync
    reset(served)

    drift = run("drift", str(tree), key="reader-key")
    assert drift.exit_code == 0, drift.output
    warnings = [line for line in drift.stdout.splitlines() if line.startswith("Warning:")]
    assert warnings == [
        "Warning: restrictions were not compared: the API key sees no resource restriction (the list holds only those "
        "a key may manage, and a read-only key manages none), so these are left out: Prompt/support/triage "
        "(restricted), Prompt/support/open (restricted). apply compares them; it needs a key that may manage "
        "restrictions"]
    assert "resource-restrictions" not in drift.stdout.replace("resource restriction", "")
    plan = json.loads(run("plan", str(tree), "--format", "json", key="reader-key").stdout)
    assert plan["operations"] == [] and len(plan["warnings"]) == 1
    assert run("plan", str(tree), "--detailed-exitcode", key="reader-key").exit_code == 0
    assert all(route.startswith("GET ") for route in routes(served))

    # a real change beside it is still drift, and the restriction still is not
    (tree / "manifests.yaml").write_text(RESTRICTED.replace("Triage a ticket", "Triage a ticket fast").lstrip())
    changed = json.loads(run("drift", str(tree), "--format", "json", key="reader-key").stdout)
    assert [(op["name"], op["method"]) for op in changed["operations"]] == [("triage", "PATCH")]


def test_the_admin_key_still_restores_a_restriction_lifted_by_hand(
        run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    tree = write(tmp_path, "support", RESTRICTED + "---\nkind: Prompt\nspace: support\nname: other\nrestricted: true\n"
                 "version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: hi}]}\n")
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    prompts = {p["name"]: p["id"] for p in api.get("/v2/prompts", params={"space_id": space_id(api, "support")}
                                                   ).json()["prompts"]}
    assert api.delete(f"/v2/resource-restrictions/{prompts['triage']}").status_code == 204
    drift = run("drift", str(tree), "--format", "json")
    assert drift.exit_code == 2
    assert [op["name"] for op in json.loads(drift.stdout)["operations"]] == ["triage"]
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    assert run("drift", str(tree)).exit_code == 0


def test_apply_restricts_an_existing_prompt_in_an_account_with_no_restriction_yet(
        run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    tree = write(tmp_path, "support", RESTRICTED.replace("restricted: true", "restricted: false"))
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    assert api.get("/v2/resource-restrictions").json()["resource_restrictions"] == []
    (tree / "manifests.yaml").write_text(RESTRICTED.lstrip())
    planned = run("plan", str(tree))  # the admin key sees none either: the plan says it cannot tell
    assert "restrictions were not compared" in planned.stdout
    applied = run("apply", str(tree), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert len(api.get("/v2/resource-restrictions").json()["resource_restrictions"]) == 1
    assert run("drift", str(tree)).exit_code == 0


# ---------------------------------------------------------------- 3. plans never resolve a secret


TWO_USES = SEARCH + """---
kind: Integration
name: search-llm
type: LLM
config: {provider: VENDOR_A, api_key: {env: SEARCH_KEY}}
"""


def test_a_plan_that_creates_an_integration_shows_the_reference_and_needs_no_secret(
        run: Cli, served: tuple[str, Emulator], tmp_path: Path) -> None:
    tree = write(tmp_path, "search", TWO_USES)
    planfile = tmp_path / "plan.json"
    outputs = {}
    for fmt in ("text", "json", "markdown"):
        result = run("plan", str(tree), "--format", fmt, unset=tuple(SECRETS))
        assert result.exit_code == 0, result.output
        assert "(sensitive, env:SEARCH_KEY)" in result.stdout
        outputs[fmt] = result.stdout
    saved = run("plan", str(tree), "--out", str(planfile), unset=tuple(SECRETS))
    assert saved.exit_code == 0, saved.output
    plan = json.loads(planfile.read_text())
    creates = {op["name"]: op for op in plan["operations"]}
    assert creates["search-llm"]["secrets"] == {"/config/api_key": "env:SEARCH_KEY"}
    assert creates["search-llm"]["body"]["config"]["api_key"] == "(sensitive)"
    assert [c["after"] for c in creates["search-llm"]["changes"] if c["path"] == "config.api_key"] == [
        "(sensitive, env:SEARCH_KEY)"]
    assert run("drift", str(tree), unset=tuple(SECRETS)).exit_code == 2  # drift (the creates), no error
    assert all(v not in text for v in SECRETS.values() for text in [*outputs.values(), planfile.read_text()])


def test_apply_names_the_unset_variable_and_every_line_that_uses_it_and_sends_nothing(
        run: Cli, served: tuple[str, Emulator], tmp_path: Path) -> None:
    tree = write(tmp_path, "search", TWO_USES)
    reset(served)
    applied = run("apply", str(tree), "--auto-approve", unset=("SEARCH_KEY",))
    assert applied.exit_code == 1
    f = tree / "manifests.yaml"
    assert ("Error: cannot apply: 1 secret the plan sends does not resolve (nothing was sent):\n"
            f"  secret {{env: SEARCH_KEY}}: environment variable SEARCH_KEY is not set; used at "
            f"{f}:13:13 (config.headers.X-Team-Key), {f}:18:30 (config.api_key)\n") in applied.stderr
    assert "in the manifests" not in applied.stderr
    assert all(route.startswith("GET ") for route in routes(served))
    planfile = tmp_path / "plan.json"
    assert run("plan", str(tree), "--out", str(planfile), unset=("SEARCH_KEY",)).exit_code == 0
    from_file = run("apply", str(planfile), unset=("SEARCH_KEY",))
    assert from_file.exit_code == 1 and "environment variable SEARCH_KEY is not set" in from_file.stderr
    assert "in the manifests" not in from_file.stderr
    assert run("apply", str(tree), "--auto-approve").exit_code == 0


# ---------------------------------------------------------------- 4. export --space


def test_export_of_a_space_writes_its_resources_the_integrations_they_use_and_an_ownership(
        run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    support = write(tmp_path, "support", """
        kind: Ownership
        name: support
        spaces: [support]
        integrations: ["support-*"]
        ---
        kind: Integration
        name: support-llm
        type: LLM
        config: {provider: VENDOR_A, api_key: {env: SUPPORT_KEY}}
        ---
        kind: Evaluator
        space: support
        name: judge
        commit_message: first
        template_config:
          name: judge
          template: "Is {{output}} right?"
          classification_choices: {right: 1, wrong: 0}
          llm_config: {integration: support-llm, model_name: m}
        ---
        kind: Prompt
        space: support
        name: triage
        version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
        """)
    assert run("apply", str(support), "--auto-approve").exit_code == 0
    assert run("apply", str(write(tmp_path, "search", SEARCH)), "--auto-approve").exit_code == 0
    out = tmp_path / "exported"
    result = run("export", "--space", "support", "--out", str(out))
    assert result.exit_code == 0, result.output
    docs = [d for f in sorted(out.rglob("*.yaml")) for d in yaml.safe_load_all(f.read_text())]
    assert sorted((d["kind"], d["name"]) for d in docs) == [
        ("Evaluator", "judge"), ("Integration", "support-llm"), ("Ownership", "support"), ("Prompt", "triage")]
    [ownership] = [d for d in docs if d["kind"] == "Ownership"]
    assert ownership == {"kind": "Ownership", "name": "support", "spaces": ["support"],
                         "integrations": ["support-llm"]}
    assert "SEARCH" not in (out / "secrets.env.example").read_text()
    # the exported tree is a team's tree: valid, in sync, and its prune stays inside it
    assert run("validate", str(out)).exit_code == 0
    planned = run("plan", str(out), "--prune", "--detailed-exitcode")
    assert planned.exit_code == 0, planned.output


# ---------------------------------------------------------------- 5. drift --prune -q, --allow-empty


def test_drift_prune_quiet_prints_one_true_headline(run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    tree = write(tmp_path, "support", RESTRICTED)
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    api.post("/v2/prompts", json={"space_id": space_id(api, "support"), "name": "by-hand", "version": {
        "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
             ).raise_for_status()
    quiet = run("drift", str(tree), "--prune", "-q")
    assert quiet.exit_code == 2
    lines = quiet.stdout.splitlines()
    assert lines[0] == "Drift: 1 unmanaged resource (listed below); the declared resources match live state."
    assert "No changes" not in quiet.stdout and "Live state matches" not in quiet.stdout
    assert "  ? Prompt/support/by-hand" in quiet.stdout
    markdown = run("drift", str(tree), "--prune", "--format", "markdown")
    assert markdown.exit_code == 2 and "Drift: 1 unmanaged resource" in markdown.stdout
    assert "No changes" not in markdown.stdout
    plain = run("drift", str(tree))
    assert plain.exit_code == 0
    assert plain.stdout.splitlines()[0] == ("No changes. The declared resources match live state; 1 unmanaged "
                                            "resource listed below.")


def test_allow_empty_counts_only_what_prune_would_really_delete(run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    for name in ("keep-me", "old-one"):
        api.post("/v2/prompts", json={"space_id": space_id(api, "support"), "name": name, "version": {
            "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
                 ).raise_for_status()
    owner = """
        kind: Ownership
        name: support
        spaces: [support]
        protect: [{glob}]
        ---
        kind: Dataset
        space: support
        name: d
        examples: [{{q: a}}]
        """
    # one of two prompts is protected: prune deletes one and keeps one, so no kind is emptied
    tree = write(tmp_path, "one", owner.format(glob='"Prompt/support/keep-*"'))
    planned = run("plan", str(tree), "--prune", "--format", "json")
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.stdout)
    assert [op["name"] for op in plan["operations"] if op["action"] == "delete"] == ["old-one"]
    assert any("Prompt/support/keep-me: kept, not deleted by --prune: protected" in w for w in plan["warnings"])
    # both protected: nothing is deleted, nothing to refuse
    both = run("plan", str(write(tmp_path, "both", owner.format(glob='"Prompt/*"'))), "--prune", "--format", "json")
    assert both.exit_code == 0, both.output
    assert [op for op in json.loads(both.stdout)["operations"] if op["action"] == "delete"] == []
    # none protected: deleting both empties the space, refused without --allow-empty
    none = write(tmp_path, "none", owner.format(glob='"Dataset/*"'))
    refused = run("plan", str(none), "--prune")
    assert refused.exit_code == 1 and "every live Prompt in space support (2)" in refused.stderr
    assert run("plan", str(none), "--prune", "--allow-empty").exit_code == 0


# ---------------------------------------------------------------- features that meet, no test covered them


NIM = """
kind: Ownership
name: search
spaces: [search]
integrations: ["search-*"]
---
kind: Integration
name: search-nim
type: LLM
config:
  provider: NIM_F
  base_url: https://nim.search.example.com/v1
  is_default_models_enabled: true
  headers: {HEADERS}
"""


def test_a_header_renamed_while_the_count_stays_the_same_is_sent(
        run: Cli, api: httpx.Client, served: tuple[str, Emulator], tmp_path: Path) -> None:
    tree = write(tmp_path, "search", NIM.replace("{HEADERS}", "{X-Team-Key: {env: SEARCH_KEY}}"))
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    (tree / "manifests.yaml").write_text(NIM.replace("{HEADERS}", "{X-Search-Key: {env: SEARCH_KEY}}").lstrip())
    planned = json.loads(run("plan", str(tree), "--format", "json").stdout)
    [op] = planned["operations"]
    assert op["method"] == "PATCH" and op["body"]["config"] == {"headers": {"X-Search-Key": "(sensitive)"}}
    assert [(c["path"], c["before"], c["after"]) for c in op["changes"]] == [
        ("config.headers", {"X-Team-Key": "(sensitive)"}, {"X-Search-Key": "(sensitive, env:SEARCH_KEY)"})]
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    stored = [doc for _, doc in served[1].store.scan("integration") if doc["name"] == "search-nim"]
    assert stored[0]["config"]["headers"] == {"X-Search-Key": SECRETS["SEARCH_KEY"]}
    assert integrations(api)["search-nim"]["config"]["header_names"] == ["X-Search-Key"]
    assert run("plan", str(tree), "--detailed-exitcode").exit_code == 0


BASE_PROMPTS = """
kind: Prompt
space: support
name: triage
description: base
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
---
kind: Prompt
space: search
name: triage
description: base
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
"""


def _descriptions(api: httpx.Client) -> dict[str, Any]:
    return {space: {p["name"]: p.get("description") for p in api.get(
        "/v2/prompts", params={"space_id": space_id(api, space)}).json()["prompts"]} for space in ("support", "search")}


def test_a_patch_of_one_space_changes_only_the_document_of_that_space(
        run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    base = write(tmp_path, "base", BASE_PROMPTS)
    overlay = write(tmp_path, "overlay", """
        kind: Patch
        target: Prompt/triage
        space: search
        patch: {description: patched}
        """)
    planned = json.loads(run("plan", str(base), str(overlay), "--format", "json").stdout)
    bodies = {op["address"]: op["body"].get("description") for op in planned["operations"] if op["method"] == "POST"}
    assert bodies == {"Prompt/support/triage": "base", "Prompt/search/triage": "patched"}
    assert run("apply", str(base), str(overlay), "--auto-approve").exit_code == 0
    assert _descriptions(api) == {"support": {"triage": "base"}, "search": {"triage": "patched"}}
    no_space = write(tmp_path, "no-space", "kind: Patch\ntarget: Prompt/triage\npatch: {description: x}\n")
    refused = run("plan", str(base), str(no_space))
    assert refused.exit_code == 1 and "a Patch of a Prompt needs 'space:'" in refused.stderr


def test_null_in_a_patch_removes_the_key_so_the_field_is_unmanaged(
        run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    base = write(tmp_path, "base", BASE_PROMPTS)
    assert run("apply", str(base), "--auto-approve").exit_code == 0
    [support] = [p for p in api.get("/v2/prompts", params={"space_id": space_id(api, "support")}).json()["prompts"]]
    api.patch(f"/v2/prompts/{support['id']}", json={"description": "edited by hand"}).raise_for_status()
    overlay = write(tmp_path, "overlay", "kind: Patch\ntarget: Prompt/triage\nspace: support\n"
                                         "patch: {description: null}\n")
    # with the overlay the description is unmanaged: the hand edit is no drift and stays
    assert run("drift", str(base), str(overlay)).exit_code == 0
    assert run("apply", str(base), str(overlay), "--auto-approve").exit_code == 0
    assert _descriptions(api)["support"] == {"triage": "edited by hand"}
    # without it the base enforces its value again
    drift = json.loads(run("drift", str(base), "--format", "json").stdout)
    assert [(c["path"], c["before"], c["after"]) for op in drift["operations"] for c in op["changes"]] == [
        ("description", "edited by hand", "base")]


GUARDED = """
kind: Ownership
name: support
spaces: [support]
integrations: ["support-*"]
---
kind: Integration
name: support-llm
type: LLM
config: {provider: PROVIDER, api_key: {env: SUPPORT_KEY}}
---
kind: Evaluator
space: support
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: support-llm, model_name: m}
"""


def test_the_guard_refuses_a_replacement_of_an_integration_a_live_evaluator_uses(
        run: Cli, api: httpx.Client, served: tuple[str, Emulator], tmp_path: Path) -> None:
    tree = write(tmp_path, "support", GUARDED.replace("PROVIDER", "VENDOR_A"))
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    before = integrations(api)["support-llm"]["id"]
    (tree / "manifests.yaml").write_text(GUARDED.replace("PROVIDER", "VENDOR_C").lstrip())
    reset(served)
    refused = run("apply", str(tree), "--allow-replace", "--auto-approve")
    assert refused.exit_code == 1
    assert ("Integration/support-llm: the plan would replace it, and it is used by evaluator judge in space support"
            in refused.stderr)
    assert all(route.startswith("GET ") for route in routes(served))
    assert integrations(api)["support-llm"]["id"] == before


def test_protect_globs_on_spaced_kinds_match_kind_space_name_and_kind_name(
        run: Cli, api: httpx.Client, tmp_path: Path) -> None:
    for space, name in (("support", "keep-1"), ("support", "old-1"), ("support", "other"), ("support", "s-plain")):
        api.post("/v2/prompts", json={"space_id": space_id(api, space), "name": name, "version": {
            "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
                 ).raise_for_status()
    tree = write(tmp_path, "support", """
        kind: Ownership
        name: support
        spaces: [support]
        protect: ["Prompt/support/keep-*", "Prompt/old-*", "Prompt/search/*", "Prompt/su*"]
        ---
        kind: Prompt
        space: support
        name: declared
        version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{q}"}]}
        """)
    planned = run("plan", str(tree), "--prune", "--format", "json")
    assert planned.exit_code == 0, planned.output
    plan = json.loads(planned.stdout)
    # KIND/SPACE/NAME and KIND/NAME globs protect what they name; a glob of another space, or a
    # KIND/NAME glob whose name part happens to match the space ("Prompt/su*"), protects nothing else
    assert sorted(op["address"] for op in plan["operations"] if op["action"] == "delete") == [
        "Prompt/support/other", "Prompt/support/s-plain"]
    kept = sorted(w.split(":")[0] for w in plan["warnings"] if "kept, not deleted by --prune" in w)
    assert kept == ["Prompt/support/keep-1", "Prompt/support/old-1"]


def test_a_reader_key_leaves_a_declared_restriction_out_and_a_fresh_account_still_plans_its_create(
        run: Cli, served: tuple[str, Emulator], tmp_path: Path) -> None:
    tree = write(tmp_path, "dash", """
        kind: Ownership
        name: dash
        spaces: [support]
        integrations: ["support-*"]
        resource_restrictions: ["DASHBOARD/*"]
        ---
        kind: Integration
        name: support-llm
        type: LLM
        config: {provider: VENDOR_A, api_key: {env: SUPPORT_KEY}}
        ---
        kind: ResourceRestriction
        name: finance-dashboard
        resource_type: DASHBOARD
        resource_id: RGFzaGJvYXJkOjEy
        """)
    fresh = json.loads(run("plan", str(tree), "--format", "json", key="reader-key").stdout)
    assert sorted(op["address"] for op in fresh["operations"]) == [
        "Integration/support-llm", "ResourceRestriction/finance-dashboard"]
    assert fresh["warnings"] == []
    assert run("apply", str(tree), "--auto-approve").exit_code == 0
    drift = run("drift", str(tree), "--prune", "--format", "json", key="reader-key")
    assert drift.exit_code == 0, drift.output
    plan = json.loads(drift.stdout)
    assert plan["operations"] == [] and plan["unmanaged"] == []
    assert [w.split(": ")[0] for w in plan["warnings"]] == ["restrictions were not compared"]
    assert "ResourceRestriction/finance-dashboard" in plan["warnings"][0]
    assert run("drift", str(tree), "--prune").exit_code == 0  # the admin key compares them: in sync


def test_pull_with_a_reader_key_leaves_restrictions_alone_with_one_warning(
        run: Cli, served: tuple[str, Emulator], tmp_path: Path) -> None:
    """pull meets the reader key: it must neither write ``restricted: false`` nor remove a
    ResourceRestriction document because the key lists no restriction."""
    tree = write(tmp_path, "support", RESTRICTED)
    before = (tree / "manifests.yaml").read_bytes()
    assert run("apply", str(tree), "--auto-approve").exit_code == 0

    pulled = CliRunner().invoke(main, ["pull", str(tree), "--write", "--base-url", served[0]],
                                env={"RECONCILER_API_KEY": "reader-key"}, catch_exceptions=False)
    assert pulled.exit_code == 0, pulled.output
    assert (tree / "manifests.yaml").read_bytes() == before
    assert [line for line in pulled.stderr.splitlines() if line.startswith("Warning:")] == [
        "Warning: restrictions were not compared: the API key sees no resource restriction (a read-only key "
        "manages none), so these are left out: Prompt/support/triage (restricted), Prompt/support/open (restricted)"]
