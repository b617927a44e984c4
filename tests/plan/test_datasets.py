"""Datasets at their edges (reconciler/plan/datasets.py), seen in the plan a user reads: examples
appended to an empty dataset, the retention rule's words and its day boundary, experiments made
at the same instant, and where each example change was written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from reconciler.model import DatasetObject, DesiredResource, ExperimentObject, LiveDataset, Source
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json, render_text
from tests.plan.helpers import RESEARCH, manifests, res, state

NOW = datetime(2026, 5, 15, tzinfo=UTC)


def live_dataset(examples: list[dict[str, Any]] | None = None, experiments: list[dict[str, Any]] | None = None,
                 matched: set[Any] | None = None) -> Any:
    live = state()
    live.datasets[(RESEARCH, "d")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0OjE", "name": "d", "space_id": RESEARCH}), examples=examples, matched=matched,
        experiments=experiments)
    return live


def retention_plan(rule: dict[str, Any], *created: str) -> Any:
    experiments = [ExperimentObject.read({"id": f"E{i}", "name": f"e{i}", "created_at": c}) for i, c in enumerate(created, 1)]
    return make_plan(manifests(res("Dataset", "d", "research", experiment_retention=rule)),
                     live_dataset([], experiments), now=NOW)


def test_a_keyed_example_declared_for_an_empty_live_dataset_is_appended() -> None:
    d = res("Dataset", "d", "research", key="k", examples=[{"k": 1, "q": "a"}])
    plan = make_plan(manifests(d), live_dataset([], matched=set()))
    assert [(op.method, op.body) for op in plan.operations] == [
        ("PATCH", {"examples": [], "new_version": "${apply_time}"}),
        ("POST", {"examples": [{"k": 1, "q": "a"}]})]


def test_a_retention_delete_shows_its_note_and_the_rule_in_its_words() -> None:
    plan = retention_plan({"keep_last": 1}, "2026-01-01T00:00:00Z", "2026-05-01T00:00:00Z")
    assert ("- Experiment/research/d/e1 (E1)\n"
            "    DELETE /v2/experiments/E1  (experiment retention)\n"
            "      experiment e1 (created 2026-01-01): not among the 1 newest\n") in render_text(plan)
    plan = retention_plan({"keep_last": 1, "older_than_days": 60}, "2026-01-01T00:00:00Z", "2026-05-01T00:00:00Z")
    (op,) = json.loads(render_json(plan))["operations"]
    assert op["changes"] == [{"path": "experiment_retention", "before": "experiment e1 (created 2026-01-01): older "
                              "than 60 days and not among the 1 newest", "after": None, "source": None}]


def test_a_keep_last_rule_alone_names_only_the_rank() -> None:
    plan = retention_plan({"keep_last": 1}, "2026-01-01T00:00:00Z", "2026-05-01T00:00:00Z")
    (op,) = plan.operations
    assert [c.before for c in op.changes] == ["experiment e1 (created 2026-01-01): not among the 1 newest"]


def test_an_age_rule_alone_deletes_every_experiment_older_than_it() -> None:
    plan = retention_plan({"older_than_days": 30}, "2026-01-01T00:00:00Z", "2026-05-01T00:00:00Z",
                          "2026-03-01T00:00:00Z")
    assert [op.path for op in plan.operations] == ["/v2/experiments/E3", "/v2/experiments/E1"]
    assert [c.before for op in plan.operations for c in op.changes] == [
        "experiment e3 (created 2026-03-01): older than 30 days", "experiment e1 (created 2026-01-01): older than 30 days"]


def test_an_experiment_exactly_as_old_as_the_rule_is_kept() -> None:
    plan = retention_plan({"older_than_days": 30}, "2026-04-15T00:00:00Z", "2026-04-14T23:59:59Z")
    assert [op.path for op in plan.operations] == ["/v2/experiments/E2"]


def test_experiments_made_at_the_same_instant_are_ranked_by_id() -> None:
    same = "2026-01-01T00:00:00Z"
    plan = retention_plan({"keep_last": 1}, same, same, same)
    assert [op.path for op in plan.operations] == ["/v2/experiments/E2", "/v2/experiments/E1"]


def test_example_changes_without_a_recorded_source_have_none() -> None:
    d = res("Dataset", "d", "research", key="k", examples=[{"k": 2}])
    plan = make_plan(manifests(d), live_dataset([{"id": "X1", "k": 1}]))
    sources = [c["source"] for op in json.loads(render_json(plan))["operations"] for c in op["changes"]]
    assert sources == [None, None]
    assert "# None" not in render_text(plan)


def test_an_example_only_live_has_points_at_the_examples_line() -> None:
    d = res("Dataset", "d", "research", key="k", examples=[{"k": 2}])
    d = DesiredResource(kind=d.kind, name=d.name, space=d.space, spec=d.spec,
                        sources={"": Source("d.yaml", 1), "examples": Source("d.yaml", 4),
                                 "examples.0": Source("d.yaml", 5)})
    plan = make_plan(manifests(d), live_dataset([{"id": "X1", "k": 1}]))
    assert [(c.path, c.source) for op in plan.operations for c in op.changes] == [
        ("examples[k=2]", "d.yaml:5"), ("examples[k=1]", "d.yaml:4")]


def test_a_live_example_no_longer_declared_is_deleted_when_the_rest_were_matched_while_reading() -> None:
    d = res("Dataset", "d", "research", key="k", examples=[{"k": 1}])
    plan = make_plan(manifests(d), live_dataset([{"id": "X9", "k": 9}], matched={1}))
    assert [(op.method, op.body) for op in plan.operations][1:] == [
        ("DELETE", {"dataset_version_id": "${Dataset/research/d#examples-version:dataset_version_id}",
                    "example_ids": ["X9"]})]


def test_every_declared_example_matched_while_reading_plans_nothing() -> None:
    d = res("Dataset", "d", "research", key="k", examples=[{"k": 1}, {"k": 2}])
    assert make_plan(manifests(d), live_dataset([], matched={1, 2})).empty
    plan = make_plan(manifests(d), live_dataset([], matched=None))  # examples not read against the manifest
    assert [(op.method, op.body) for op in plan.operations][1:] == [("POST", {"examples": [{"k": 1}, {"k": 2}]})]


def test_examples_without_a_key_are_appended_and_deleted_whole_with_their_lines() -> None:
    d = res("Dataset", "d", "research", examples=[{"q": "same"}, {"q": "new"}])
    d = DesiredResource(kind=d.kind, name=d.name, space=d.space, spec=d.spec,
                        sources={"examples": Source("d.yaml", 4), "examples.1": Source("d.yaml", 6)})
    plan = make_plan(manifests(d), live_dataset([{"id": "X1", "created_at": "t", "q": "same"},
                                                 {"id": "X2", "created_at": "t", "q": "old"}]))
    assert [(op.method, op.body) for op in plan.operations] == [
        ("PATCH", {"examples": [], "new_version": "${apply_time}"}),
        ("POST", {"examples": [{"q": "new"}]}),
        ("DELETE", {"dataset_version_id": "${Dataset/research/d#examples-version:dataset_version_id}",
                    "example_ids": ["X2"]})]
    assert [(c.path, c.before, c.after, c.source) for op in plan.operations for c in op.changes] == [
        ("examples[+]", None, {"q": "new"}, "d.yaml:6"), ("examples[-]", {"q": "old"}, None, "d.yaml:4")]


def test_more_than_a_thousand_changed_examples_go_in_batches_chained_in_order() -> None:
    n = 1001
    live = [{"id": f"X{i}", "k": i, "q": "old"} for i in range(n + 1)] + [{"id": f"G{i}", "k": -1 - i}
                                                                          for i in range(n)]
    want = [{"k": i, "q": "new"} for i in range(n + 1)] + [{"k": 2 * n + i} for i in range(n)]
    plan = make_plan(manifests(res("Dataset", "d", "research", key="k", examples=want)), live_dataset(live))
    ops = json.loads(render_json(plan))["operations"]
    base = "Dataset/research/d#"
    assert [(op["id"].removeprefix(base), op["method"], len(op["body"]["examples"] if "examples" in op["body"]
                                                             else op["body"]["example_ids"]),
             [d.removeprefix(base) for d in op["depends_on"]], len(op["changes"])) for op in ops] == [
        ("examples-version", "PATCH", 1000, [], 1002),  # every update's changes on the first call
        ("examples-update-2", "PATCH", 2, ["examples-version"], 0),
        ("examples-append", "POST", 1000, ["examples-update-2"], 1001),
        ("examples-append-2", "POST", 1, ["examples-append"], 0),
        ("examples-delete", "DELETE", 1000, ["examples-append-2"], 1001),
        ("examples-delete-2", "DELETE", 1, ["examples-delete"], 0)]
    assert ops[1]["path"] == "/v2/datasets/RGF0OjE/examples"
    assert ops[1]["body"] == {"examples": [{"id": "X1000", "k": 1000, "q": "new"}, {"id": "X1001", "k": 1001, "q": "new"}]}
    assert ops[0]["changes"][0] == {"path": "examples[k=0].q", "before": "old", "after": "new", "source": None}


def test_a_dataset_found_under_its_alias_shows_the_rename() -> None:
    live = live_dataset([])
    d = res("Dataset", "new", "research", examples=[])
    d = DesiredResource(kind=d.kind, name=d.name, space=d.space, spec=d.spec, aliases=("d",))
    plan = make_plan(manifests(d), live)
    assert ("~ Dataset/research/new\n"
            "    PATCH /v2/datasets/RGF0OjE  (rename)\n"
            '      name: "d" -> "new"\n') in render_text(plan)
    assert [op.id for op in plan.operations] == ["Dataset/research/new#rename"]


def test_a_dataset_that_declares_no_examples_leaves_the_live_ones_alone() -> None:
    d = res("Dataset", "d", "research", experiment_retention={"keep_last": 1})
    plan = make_plan(manifests(d), live_dataset([{"id": "X1", "k": 1}], []), now=NOW)
    assert plan.empty
