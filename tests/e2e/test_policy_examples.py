"""Every Policy rule the project ships as an example (the ``yaml`` blocks of the docs and the README,
``examples/``, the quickstart tree's own policy) fires, as written, on a plan made to meet it: the CLI
in-process against the emulator over a real socket. A new example needs a scenario here, or the
first test fails naming it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

ROOT = Path(__file__).resolve().parents[2]
Cli = Callable[..., Result]


def _policies_in_markdown(path: Path) -> list[str]:
    blocks = re.findall(r"^```ya?ml\n(.*?)^```", path.read_text(), flags=re.M | re.S)
    return [block for block in blocks if any(isinstance(d, dict) and d.get("kind") == "Policy"
                                             for d in yaml.safe_load_all(block))]


def shipped_policies() -> dict[str, str]:
    """Where -> the Policy document's text, for every example the project ships."""
    found: dict[str, str] = {}
    for md in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        for i, block in enumerate(_policies_in_markdown(md)):
            found[f"{md.relative_to(ROOT)}#{i + 1}"] = block
    for path in sorted([*(ROOT / "examples").rglob("*.yaml"), *(ROOT / "examples").rglob("*.yml"),
                        *(ROOT / "manifests").rglob("*.yaml")]):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        if any(d.get("kind") == "Policy" for d in docs):
            found[str(path.relative_to(ROOT))] = path.read_text()
    return found


def rules_of(text: str) -> list[str]:
    return [r["name"] for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "Policy"
            for r in d["rules"]]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, capture_output=True, check=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"})


def delete_an_integration(tree: Path) -> list[str]:
    text = (tree / "integrations/llm.yaml").read_text()
    (tree / "integrations/llm.yaml").write_text(text.split("---")[0])  # self-hosted-nim removed
    return ["--prune"]


def move_the_production_label(tree: Path) -> list[str]:
    edit(tree / "research/prompts.yaml", "labels: [production]", "labels: [production, staging]")
    return []


def shrink_retention_since_the_last_commit(tree: Path) -> list[str]:
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-qm", "tree")
    edit(tree / "research/datasets.yaml", "keep_last: 10", "keep_last: 3")
    return ["--since", "HEAD"]


def delete_six_resources(tree: Path) -> list[str]:
    for gone in ("research/prompts.yaml", "research/datasets.yaml", "research/evaluators.yaml", "restrictions.yaml",
                 "integrations/agents.yaml"):
        (tree / gone).unlink()
    delete_an_integration(tree)
    return ["--prune", "--allow-empty"]


#: rule name -> the change of the applied quickstart tree that must make it fire (and the plan's flags)
SCENARIOS: dict[str, Callable[[Path], list[str]]] = {
    "no-integration-deletes": delete_an_integration,
    "integration-deletes": delete_an_integration,
    "production-label": move_the_production_label,
    "retention-never-shrinks": shrink_retention_since_the_last_commit,
    "few-deletes": delete_six_resources,
}

SHIPPED = shipped_policies()
CASES = [(where, rule) for where, text in SHIPPED.items() for rule in rules_of(text)]


def test_the_examples_are_found_and_each_rule_has_a_scenario() -> None:
    assert {"docs/manifests.md#1", "examples/policy/central.yaml", "manifests/policy.yaml"} <= set(SHIPPED)
    assert [rule for _, rule in CASES if rule not in SCENARIOS] == []


@pytest.mark.parametrize(("where", "rule"), CASES, ids=[f"{w}:{r}" for w, r in CASES])
def test_every_shipped_policy_example_fires(tree: Path, cli: Cli, where: str, rule: str) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    (tree / "policy.yaml").write_text(SHIPPED[where])  # the example as written, in place of the tree's
    flags = SCENARIOS[rule](tree)
    result = cli("plan", str(tree), *flags, "--format", "json")
    assert result.stdout, result.output
    plan: dict[str, Any] = json.loads(result.stdout)
    assert rule in [v["rule"] for v in plan.get("policy", [])], (result.output, plan.get("policy"))


def test_the_central_rules_fire_when_given_with_policy_as_the_recipe_says(tree: Path, cli: Cli) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    move_the_production_label(tree)
    result = cli("plan", str(tree), "--policy", str(ROOT / "examples/policy/central.yaml"), "--format", "json")
    assert [v["rule"] for v in json.loads(result.stdout)["policy"]] == ["production-label"]
    assert shutil.which("git") is not None
