"""What a rule's ``fields`` globs touch (docs/manifests.md, "Policy"): for every kind, every field of
its manifest and every form the plan writes a change in (a dotted field, a list item by position or
by name, an example by key or by content, ``[key=...]`` then a field of it, a key of a free-form map
such as headers), a glob naming the changed path or a parent of it fires, one naming a sibling does
not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reconciler.manifests import policy_fields as F
from reconciler.manifests.policies import CompiledRule
from reconciler.plan.model import Change, Operation, Plan
from reconciler.policy.evaluate import evaluate

#: A map key or a named item as a user writes it (a header name, a preset's name, an example's field)
KEY = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,8}", fullmatch=True)
#: A keyed example's value as the plan writes it (``str`` of the value): dots, spaces, '=' and '[' too;
#: a value holding ']' before a dot would make the path ambiguous, so none is drawn
VALUE = st.text(st.characters(blacklist_characters="]", blacklist_categories=("Cs",)), max_size=8)


@st.composite
def change_paths(draw: st.DrawFn, kind: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """A change path the planner can write for ``kind``, and its segments as ``(segment as a glob
    names it, the sibling names a glob could give in its place)``; '*' stands for a segment no glob
    can spell (an example's selector)."""
    tree: F.FieldTree = F.kind_tree(kind)
    text, segments = "", []
    while True:
        if isinstance(tree, Mapping) and F.LIST in tree:  # a list of models: by position, or a named item
            item = draw(st.one_of(st.integers(0, 30).map(str), KEY))
            text += f".{item}"
            segments.append((item, []))
            tree = tree[F.LIST]
        elif isinstance(tree, Mapping):
            names = sorted(tree)
            name = draw(st.sampled_from(names))
            text += ("." if text else "") + name
            segments.append((name, [n for n in names if n != name]))
            tree = tree[name]
        elif tree == F.ANY and segments and segments[-1][0] == "examples" and draw(st.booleans()):
            form = draw(st.sampled_from(["[+]", "[-]", "key"]))
            if form == "key":
                form = f"[{draw(KEY)}={draw(VALUE)}]"
            text += form
            segments.append(("*", []))
        elif tree == F.ANY:  # a key of a free-form value: a header, an invocation parameter, an example's field
            key = draw(KEY)
            text += f".{key}"
            segments.append((key, []))
        else:
            break
        if draw(st.integers(0, 3)) == 0:
            break
    return text, segments


def fires(kind: str, glob: str, path: str) -> bool:
    rule = CompiledRule(name="r", policy="p", effect="warn", message="", source="p.yaml:1", kinds=frozenset({kind}),
                        fields=(glob,))
    op = Operation(id="X#u", action="update", kind=kind, name="n", method="PATCH", path="/x",
                   changes=(Change(path, 1, 2),), address=f"{kind}/n")
    return bool(evaluate(Plan((op,)), [rule]))


@given(st.data())
def test_a_glob_naming_the_changed_path_or_a_parent_fires_and_one_naming_a_sibling_does_not(data: Any) -> None:
    kind = data.draw(st.sampled_from(F.ALL_KINDS))
    path, segments = data.draw(change_paths(kind))
    named = [glob for glob, _ in segments]
    for depth in range(1, len(segments) + 1):
        glob = ".".join(named[:depth])
        assert F.glob_can_match(glob, [kind]), glob  # the glob is one a policy may write
        assert fires(kind, glob, path), (glob, path)
        for sibling in segments[depth - 1][1]:
            other = ".".join([*named[:depth - 1], sibling])
            assert not fires(kind, other, path), (other, path)


@given(st.data())
def test_a_free_form_key_or_a_list_item_fires_its_own_glob_and_not_another_items(data: Any) -> None:
    key, other = data.draw(KEY), data.draw(KEY)
    if key == other:
        return
    for prefix in ("config.headers", "config.auth.headers", "config.request_presets", "version.messages"):
        kind = "Prompt" if prefix.startswith("version") else "Integration"
        path = f"{prefix}.{key}.x"
        assert fires(kind, f"{prefix}.{key}", path) and fires(kind, f"{prefix}.*", path)
        assert not fires(kind, f"{prefix}.{other}", path)


def test_the_segments_of_a_change_path_are_what_a_glob_names() -> None:
    assert F.path_segments("examples[+]") == ["examples", "+"]
    assert F.path_segments("examples[-]") == ["examples", "-"]
    assert F.path_segments("examples[ticket_id=T-1.2].expected") == ["examples", "ticket_id=T-1.2", "expected"]
    assert F.path_segments("examples[k=a]b]") == ["examples", "k=a]b"]
    assert F.path_segments("examples[k=a[b].x") == ["examples", "k=a[b", "x"]
    assert F.path_segments("config.headers.X-Token") == ["config", "headers", "X-Token"]
    assert F.path_segments("version.messages.0.content") == ["version", "messages", "0", "content"]
    assert F.path_segments("") == []
    assert not F.touches("examples", "")  # the resource itself (a replacement) is no field
    assert F.touches("version.labels", "version")  # a change of a parent changes the field too


def test_odd_change_paths_split_as_written() -> None:
    assert F.path_segments("a[x][y]") == ["a", "x", "y"]
    assert F.path_segments("a[].b") == ["a", "", "b"]
    assert F.path_segments("a[x") == ["a", "x"]
    assert F.path_segments("a[k]X]") == ["a", "k]X"]
    assert F.path_segments("a..b") == ["a", "b"]


def test_a_selection_into_a_list_or_a_free_form_value_is_not_checked_further() -> None:
    assert F.path_exists(["examples", "anything", "deeper"], [F.kind_tree("Dataset")])
    assert F.path_exists(["version", "messages", "whatever"], [F.kind_tree("Prompt")])
    assert not F.path_exists(["version", "nothing"], [F.kind_tree("Prompt")])
