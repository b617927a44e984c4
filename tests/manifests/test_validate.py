"""The Ownership document as loaded from a tree (reconciler/manifests/validate.py, ``ownership_of``),
seen in the plan it gives: found by mutation testing, the tree's rules reached the planner only in
tests outside the manifests suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests
from reconciler.plan.planner import make_plan
from tests.plan.helpers import live_llm, state

TREE = """\
kind: Ownership
name: team
integrations: [a]
ignore_changes:
  - match: [Integration/a]
    fields: [config.is_function_calling_enabled]
---
kind: Integration
name: a
type: LLM
config: {provider: VENDOR_A, api_key: {env: A_KEY}, is_function_calling_enabled: true}
"""


def test_the_ignore_changes_of_a_tree_s_ownership_leave_a_difference_as_live(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("tree.yaml").write_text(TREE)
    live = state(live_llm("a", id="I1", has_api_key=True, is_function_calling_enabled=False))
    plan = make_plan(load_manifests(["tree.yaml"]), live)
    assert plan.operations == ()
    assert [(i.address, i.path, i.before, i.after) for i in plan.ignored] == [
        ("Integration/a", "config.is_function_calling_enabled", False, True)]


ALIASES = """\
kind: Ownership
name: support
spaces: [research]
integrations: ["support-*"]
---
kind: Integration
name: support-nim
aliases: [support-old, search-nim]
type: LLM
config: {provider: VENDOR_A, api_key: {env: A_KEY}}
---
kind: Dataset
space: research
name: d
aliases: [old-d]
examples: [{q: 1}]
"""


def test_only_an_integration_alias_outside_the_ownership_is_refused_at_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # support-old is owned; a Dataset's alias is not an integration name (its space is owned).
    monkeypatch.chdir(tmp_path)
    Path("tree.yaml").write_text(ALIASES)
    with pytest.raises(ManifestError) as caught:
        load_manifests(["tree.yaml"])
    assert caught.value.problems == [
        "tree.yaml:8:24: aliases[1]: alias 'search-nim' matches no glob of 'integrations', outside the ownership "
        "'support' (tree.yaml:1); renaming it would take over another tree's integration: add it to the "
        "Ownership document or remove the alias"]


def test_a_resource_s_lifecycle_settings_are_kept_beside_its_spec_not_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("tree.yaml").write_text("""\
kind: Integration
name: a
type: LLM
aliases: [old-a]
protect: true
ignore_changes: [config.is_function_calling_enabled]
config: {provider: VENDOR_A, api_key: {env: A_KEY}}
""")
    (resource,) = load_manifests(["tree.yaml"]).resources
    assert (resource.aliases, resource.protect, resource.ignore_changes) == (
        ("old-a",), True, ("config.is_function_calling_enabled",))
    assert not {"kind", "name", "aliases", "protect", "ignore_changes"} & set(resource.spec)
