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


def test_a_resource_knows_the_place_of_each_value_and_of_each_example_of_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("data").mkdir()
    Path("data/golden.jsonl").write_text('{"t": "a", "q": 1}\n\n{"t": "b", "q": 2}\n')
    Path("tree.yaml").write_text("""\
kind: Dataset
space: research
name: golden
key: t
examples_file: data/golden.jsonl
""")
    (resource,) = load_manifests(["tree.yaml"]).resources
    places = {path: (s.file, s.line) for path, s in resource.sources.items()}
    assert len(resource.sources) == len(places) == len(list(resource.sources))
    assert places["examples.0"] == ("data/golden.jsonl", 1)
    assert places["examples.1"][1] == 3  # the blank line is no example
    assert "examples.2" not in resource.sources and "examples.x" not in resource.sources
    assert "nineChars0" not in resource.sources  # as long as "examples.", then an index: no example
    assert places["key"] == ("tree.yaml", 4)
    assert resource.sources["examples.1"].column == 1
    Path("tree.yaml").write_text("kind: Dataset\nspace: research\nname: inline\nkey: t\nexamples: [{t: a}]\n")
    (inline,) = load_manifests(["tree.yaml"]).resources
    assert len(inline.sources) == len(list(inline.sources))
