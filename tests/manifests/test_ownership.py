"""The Ownership document and aliases as the validator sees them: what a tree may declare, and the
exact problem (``file:line``) for what it may not, before any request."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests.loader import load_manifests
from reconciler.model import ManifestSet

OWNERSHIP = """kind: Ownership
name: search
spaces: [research]
integrations: [search-*]
resource_restrictions: [PROJECT/P1, D9]
protect: [Prompt/keep]
"""
LLM = """kind: Integration
name: {name}
type: LLM
config: {{provider: VENDOR_A, api_key: {{env: K}}}}
"""
PROMPT = """kind: Prompt
space: {space}
name: p
version: {{commit_message: c, provider: VENDOR_A, messages: [{{role: user, content: hi}}]}}
"""
RESTRICTION = "kind: ResourceRestriction\nname: r\nresource_type: {type}\nresource_id: {id}\n"


def load(tmp_path: Path, *docs: str) -> ManifestSet:
    (tmp_path / "m.yaml").write_text("---\n".join(docs))
    return load_manifests([str(tmp_path / "m.yaml")], environ={})


def refused(tmp_path: Path, *docs: str) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        load(tmp_path, *docs)
    return [p.replace(str(tmp_path) + "/", "") for p in caught.value.problems]


def test_what_the_ownership_lists_is_what_the_tree_owns(tmp_path: Path) -> None:
    ms = load(tmp_path, OWNERSHIP, LLM.format(name="search-a"), PROMPT.format(space="research"),
              RESTRICTION.format(type="PROJECT", id="P1"), RESTRICTION.format(type="DASHBOARD", id="D9"))
    own = ms.ownership
    assert own is not None
    assert (own.name, own.spaces, own.integrations, own.resource_restrictions, own.protect) == (
        "search", ("research",), ("search-*",), ("PROJECT/P1", "D9"), ("Prompt/keep",))
    assert [r.kind for r in ms] == ["Integration", "Prompt", "ResourceRestriction", "ResourceRestriction"]
    assert own.source("protect.0") is not None and own.source("protect.0").line == 6  # type: ignore[union-attr]


def test_a_list_left_out_of_the_ownership_owns_nothing(tmp_path: Path) -> None:
    problems = refused(tmp_path, "kind: Ownership\nname: bare\n", LLM.format(name="a"))
    assert problems == ["m.yaml:4:1: Integration/a: integration 'a' matches no glob of 'integrations', outside the "
                        "ownership 'bare' (m.yaml:1); a tree owns what it declares: add it to the Ownership document"]


def test_each_declared_resource_outside_the_ownership_is_a_problem_at_its_line(tmp_path: Path) -> None:
    problems = refused(tmp_path, OWNERSHIP, LLM.format(name="other"), PROMPT.format(space="default"),
                       RESTRICTION.format(type="PROJECT", id="P2"))
    tail = ", outside the ownership 'search' (m.yaml:1); a tree owns what it declares: add it to the Ownership document"
    assert problems == [
        "m.yaml:8:1: Integration/other: integration 'other' matches no glob of 'integrations'" + tail,
        "m.yaml:13:1: Prompt/default/p: space 'default' is not one of the owned 'spaces' (write a space the same way, "
        "by name or by id, in both places)" + tail,
        "m.yaml:18:1: ResourceRestriction/r: restriction PROJECT/P2 matches no glob of 'resource_restrictions'" + tail]


def test_a_second_ownership_document_names_the_first(tmp_path: Path) -> None:
    problems = refused(tmp_path, OWNERSHIP, "kind: Ownership\nname: again\nspaces: [research]\n")
    assert problems == ["m.yaml:8:1: Ownership/again: a second Ownership document (the first is at m.yaml:1:1); a "
                        "tree declares what it owns once"]


def test_without_an_ownership_document_anything_may_be_declared(tmp_path: Path) -> None:
    ms = load(tmp_path, LLM.format(name="any"), PROMPT.format(space="default"))
    assert ms.ownership is None and len(ms.resources) == 2


def test_an_alias_that_is_a_declared_name_is_refused_at_the_alias(tmp_path: Path) -> None:
    aliased = LLM.format(name="a").replace("type: LLM", "aliases: [x, b]\ntype: LLM")
    problems = refused(tmp_path, aliased, LLM.format(name="b"))
    assert problems == ["m.yaml:3:14: aliases[1]: 'b' is declared as a resource of its own (m.yaml:7); an alias names "
                        "a former name, one no document declares"]


def test_an_alias_of_another_type_or_space_is_not_the_same_name(tmp_path: Path) -> None:
    aliased = LLM.format(name="a").replace("type: LLM", "aliases: [b]\ntype: LLM")
    agent = "kind: Integration\nname: b\ntype: AGENT\nconfig: {endpoint: 'https://agent.example.com', input_schema: {type: object}}\n"
    assert len(load(tmp_path, aliased, agent).resources) == 2


def test_one_former_name_claimed_by_two_documents_is_refused_naming_both_aliases_lines(tmp_path: Path) -> None:
    first = LLM.format(name="a").replace("type: LLM", "aliases: [old]\ntype: LLM")
    second = LLM.format(name="b").replace("type: LLM", "aliases: [new, old]\ntype: LLM")
    problems = refused(tmp_path, first, second)
    assert problems == ["m.yaml:9:16: aliases[1]: 'old' is an alias of Integration/a too (its aliases[0] at "
                        "m.yaml:3); a former name can become one resource only"]
