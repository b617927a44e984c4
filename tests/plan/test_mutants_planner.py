"""One resource declared twice, its space written by name and by id (reconciler/plan/planner.py):
the second is refused naming the first; the same name in two spaces, or in a space that does not
exist, is not a duplicate."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import PlanError
from reconciler.manifests import load_manifests
from reconciler.plan.planner import make_plan
from tests.plan.helpers import manifests, res, state

EXAMPLES = [{"q": 1}]


def error(tree) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(PlanError) as err:
        make_plan(tree, state())
    return str(err.value)


def test_a_space_written_by_name_and_by_id_is_one_resource_declared_twice(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.yaml").write_text("kind: Dataset\nspace: research\nname: d\nexamples: [{q: 1}]\n---\n"
                              "kind: Dataset\nspace: U3BhY2U6Mg\nname: d\nexamples: [{q: 1}]\n")
    assert error(load_manifests(["t.yaml"])) == (
        "cannot plan:\n  t.yaml:7: Dataset/U3BhY2U6Mg/d: space: declares Dataset/research/d again (space "
        "'U3BhY2U6Mg' is space 'research', declared at t.yaml:2); declare it once")
    assert error(manifests(res("Dataset", "d", "research", examples=EXAMPLES),
                           res("Dataset", "d", "U3BhY2U6Mg", examples=EXAMPLES),
                           res("Dataset", "e", "U3BhY2U6Mg", examples=EXAMPLES))) == (
        "cannot plan:\n"
        "  Dataset/U3BhY2U6Mg/d: space: declares Dataset/research/d again (space 'U3BhY2U6Mg' is space 'research'); "
        "declare it once")


def test_the_same_name_in_two_spaces_or_in_unknown_spaces_is_no_duplicate() -> None:
    plan = make_plan(manifests(res("Dataset", "d", "research", examples=EXAMPLES),
                               res("Dataset", "d", "default", examples=EXAMPLES),
                               res("Prompt", "d", "research", version={"commit_message": "v1", "provider": "VENDOR_A",
                                                                       "messages": [{"role": "user", "content": "q"}]})),
                     state())
    assert sorted((op.kind, op.space, op.method) for op in plan.operations) == [
        ("Dataset", "default", "POST"), ("Dataset", "research", "POST"), ("Prompt", "research", "POST")]
    message = error(manifests(res("Dataset", "d", "nowhere", examples=EXAMPLES),
                              res("Dataset", "d", "elsewhere", examples=EXAMPLES)))
    assert "again" not in message and message.count("no space named (or with the id)") == 2
