"""What a pull lists as still differing once its edits are made (``Puller._left_listed``, the engine alone on
live values given): every difference the edited tree still has, unless a record already covers it (a value not
written, a conflict, a field left alone on purpose), the resource is accounted for whole, or a rule ignores it."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.fieldkinds import ABSENT
from reconciler.plan.liveview import ExamplesEdit, FieldEdit
from reconciler.pull.engine import Conflict, NotWritten, Tree
from tests.pull.helpers import MISSING, puller

TREE = """\
kind: Ownership
name: research
spaces: [research]
ignore_changes:
  - match: ["Prompt/research/*"]
    fields: [version.invocation_params]
---
kind: Prompt
space: research
name: gone
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{ticket}"}]}
---
kind: Prompt
space: research
name: triage
description: first words
version: {commit_message: first, provider: VENDOR_A, messages: [{role: user, content: "{ticket}"}]}
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{output}} right?"
  classification_choices: {right: 1, wrong: 0}
  llm_config: {integration: llm-a, model_name: m}
---
kind: Dataset
space: research
name: cases
ignore_changes: [examples]
examples: [{q: one}]
"""
GONE, TRIAGE, JUDGE, CASES = "Prompt/research/gone", "Prompt/research/triage", "Evaluator/research/judge", \
    "Dataset/research/cases"
STILL = "still differs live after the edits pull can make: not written"


def left(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, live: dict[str, object], *, whole: tuple[str, ...] = (),
         hidden: bool = False, examples: dict[str, ExamplesEdit] | None = None,
         records: tuple[NotWritten | Conflict, ...] = (), alone: tuple[tuple[str, str], ...] = ()) -> list[NotWritten]:
    """The records ``_left_listed`` adds to those given, on the tree as it is (no edit made)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tree.yaml").write_text(TREE)
    p = puller(monkeypatch, Tree(("tree.yaml",)), live, examples=examples)
    p.restrictions_hidden = hidden
    p._whole.update(whole)
    p._left.update(alone)
    p.result.not_written.extend(r for r in records if isinstance(r, NotWritten))
    p.result.conflicts.extend(r for r in records if isinstance(r, Conflict))
    p._left_listed(p.manifests)
    return [n for n in p.result.not_written if n not in records]


def test_each_difference_left_is_listed_once_with_its_field(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert left(monkeypatch, tmp_path, {TRIAGE: {"description": "live words", "version.model": "m"}}) == [
        NotWritten(TRIAGE, "description", STILL), NotWritten(TRIAGE, "version.model", STILL)]


def test_a_resource_absent_live_or_accounted_for_whole_is_passed_over_not_the_ones_after_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    live = {GONE: MISSING, TRIAGE: {"description": "live words"}}
    assert left(monkeypatch, tmp_path, live) == [NotWritten(TRIAGE, "description", STILL)]
    live = {GONE: {"description": "live words"}, TRIAGE: {"description": "live words"}}
    assert left(monkeypatch, tmp_path, live, whole=(GONE,)) == [NotWritten(TRIAGE, "description", STILL)]


def test_a_difference_a_record_covers_is_not_listed_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    live = {TRIAGE: {"description": "live words", "version.model": "m"}, JUDGE: {"commit_message": "second"}}
    conflict = Conflict(TRIAGE, "description", "a", "b", "c", None)
    not_written = NotWritten(TRIAGE, "version", "why")
    assert left(monkeypatch, tmp_path, live, records=(conflict, not_written), alone=((JUDGE, "commit_message"),)) == []
    assert left(monkeypatch, tmp_path, live, records=(conflict,)) == [NotWritten(TRIAGE, "version.model", STILL)]


def test_a_difference_a_rule_ignores_is_not_listed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    live = {TRIAGE: {"version.invocation_params": {"temperature": 0.5}},
            JUDGE: [FieldEdit("template_config.name", "judge", "judge2")]}
    examples = {CASES: ExamplesEdit(append=[{"q": "two"}])}
    assert left(monkeypatch, tmp_path, live, examples=examples) == [
        NotWritten(JUDGE, "template_config.name", STILL)]


def test_examples_left_are_listed_as_examples(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    tree_without_rule = ExamplesEdit(replace={0: {"q": "uno"}})
    found = left(monkeypatch, tmp_path, {}, examples={TRIAGE: tree_without_rule})
    assert found == [NotWritten(TRIAGE, "examples", STILL)]


def test_a_restriction_a_reader_key_cannot_see_is_not_listed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    live = {TRIAGE: [FieldEdit("restricted", ABSENT, True), FieldEdit("description", "first words", "live")]}
    assert left(monkeypatch, tmp_path, live, hidden=True) == [NotWritten(TRIAGE, "description", STILL)]
    assert left(monkeypatch, tmp_path, live) == [NotWritten(TRIAGE, "restricted", STILL),
                                                 NotWritten(TRIAGE, "description", STILL)]


@pytest.mark.parametrize(("address", "message", "versioned"), [
    (TRIAGE, "version.commit_message", "version.model"), (JUDGE, "commit_message", "template_config.name")])
def test_a_commit_message_left_is_listed_only_beside_a_versioned_field(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, address: str, message: str, versioned: str) -> None:
    alone = [FieldEdit(message, "first", "second")]
    assert left(monkeypatch, tmp_path, {address: alone}) == []
    both = [FieldEdit(versioned, "a", "b"), *alone]
    assert left(monkeypatch, tmp_path, {address: both}) == [NotWritten(address, versioned, STILL),
                                                           NotWritten(address, message, STILL)]
