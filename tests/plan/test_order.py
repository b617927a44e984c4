"""Execution order (reconciler/plan/planner.py ``order``): creates and updates before deletes, each
op after what it depends on (a dependency outside the plan is no wait), a cycle refused by name."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reconciler.errors import PlanError
from reconciler.model import DatasetObject, ExperimentObject, LiveDataset
from reconciler.plan.model import Operation
from reconciler.plan.planner import make_plan, order
from tests.plan.helpers import RESEARCH, live_llm, manifests, res, state

TC = {"name": "f", "template": "t", "llm_config": {"integration": "judge", "model_name": "m"},
      "classification_choices": {"a": 1}}


def test_an_evaluator_is_created_before_retention_deletes_an_experiment() -> None:
    live = state(live_llm("judge", has_api_key=True))
    exps = [ExperimentObject.read({"id": f"X{i}", "name": f"e{i}", "created_at": f"2026-0{i}-01T00:00:00Z"}) for i in (1, 2)]
    live.datasets[(RESEARCH, "d")] = LiveDataset(dataset=DatasetObject.read({"id": "D1", "name": "d", "space_id": RESEARCH}),
                                                 examples=[], experiments=exps)
    tree = manifests(res("Dataset", "d", "research", examples=[], experiment_retention={"keep_last": 1}),
                     res("Evaluator", "ev", "research", commit_message="c", template_config=TC))
    plan = make_plan(tree, live, now=datetime(2026, 6, 1, tzinfo=UTC))
    assert [(op.method, op.kind) for op in plan.operations] == [("POST", "Evaluator"), ("DELETE", "Experiment")]


def op(id: str, *depends_on: str) -> Operation:
    return Operation(id=id, action="update", kind="Prompt", name=id, method="PATCH", path=f"/v2/prompts/{id}",
                     depends_on=depends_on, address=f"Prompt/{id}")


def test_an_op_follows_its_dependency_and_a_dependency_outside_the_plan_is_no_wait() -> None:
    assert [o.id for o in order([op("a", "b"), op("b", "gone"), op("c")])] == ["b", "a", "c"]


def test_a_dependency_cycle_is_refused_naming_its_ops() -> None:
    with pytest.raises(PlanError) as err:
        order([op("a", "b"), op("b", "a"), op("c")])
    assert str(err.value) == "dependency cycle among: a, b"
