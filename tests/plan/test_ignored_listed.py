"""What the plan lists as ignored (``Plan.ignored``, the ``-v`` "Ignored:" line): for a rule inside a
free-form object, the key the rule names, as deep as both sides are objects; the whole object when
the rule's key is a glob; a side that lacks the key shown as not set."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plan.test_ignore import PROMPT, listed, plan_of, prompt_live


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def shown(tmp_path: Path, rule: str, declared: str, live: dict[str, object]) -> list[tuple[object, ...]]:
    text = PROMPT.format(rules=f"ignore_changes: ['{rule}', version.labels]\n",
                         extra=f"  invocation_params: {declared}\n").replace("declared", "d")
    plan = plan_of(tmp_path, text, prompt_live(invocation_params=live))
    return [row[1:4] for row in listed(plan) if row[1] != "version.labels"]


@pytest.mark.parametrize("key", ["t*", "t?", "[t]"])
def test_a_glob_key_lists_the_whole_object(tmp_path: Path, key: str) -> None:
    # even where a key is written as the glob is: the glob may match others
    assert shown(tmp_path, f"version.invocation_params.{key}", f"{{'{key}': 0, t: 0, max_tokens: 5}}",
                 {key: 1, "t": 1, "max_tokens": 5}) == [
        ("version.invocation_params", {key: 1, "t": 1, "max_tokens": 5}, {key: 0, "t": 0, "max_tokens": 5})]


def test_a_key_only_live_has_is_listed_as_not_declared(tmp_path: Path) -> None:
    assert shown(tmp_path, "version.invocation_params.seed", "{max_tokens: 5}", {"max_tokens": 5, "seed": 3}) == [
        ("version.invocation_params.seed", 3, None)]


def test_a_key_only_the_tree_declares_is_listed_as_not_set_live(tmp_path: Path) -> None:
    assert shown(tmp_path, "version.invocation_params.seed", "{max_tokens: 5, seed: 3}", {"max_tokens": 5}) == [
        ("version.invocation_params.seed", None, 3)]


def test_the_listed_key_is_as_deep_as_both_sides_are_objects(tmp_path: Path) -> None:
    assert shown(tmp_path, "version.invocation_params.a.b.c", "{a: {b: {c: 1, d: 2}}, m: 1}",
                 {"a": {"b": {"c": 9, "d": 2}}, "m": 1}) == [("version.invocation_params.a.b.c", 9, 1)]
    assert shown(tmp_path, "version.invocation_params.a.b", "{a: {b: 1}, m: 1}",
                 {"a": {"b": [1]}, "m": 1}) == [("version.invocation_params.a.b", [1], 1)]
    assert shown(tmp_path, "version.invocation_params.a.b.c", "{a: {b: 1}, m: 1}",
                 {"a": {"b": {"c": 2}}, "m": 1}) == [("version.invocation_params.a.b", {"c": 2}, 1)]
