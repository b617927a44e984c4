"""The executor at edges mutation testing found unpinned (reconciler/apply/executor.py): what the
advice after a refused call names, and a refusal's detail explained from the responses so far."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.apply.executor import FAILED, ApplyReport, Outcome
from reconciler.plan.model import Change, Operation, Plan
from tests.apply.runs import run_plan
from tests.apply.test_executor_edges import Recorder, client, op, problem

MODEL = Change("template_config.llm_config.model_name", "m1", "m2", "judge.yaml:12")
DESCRIPTION = Change("description", "a", "b", "judge.yaml:4")
PARAMETER = Change("template_config.llm_config.invocation_parameters.x", 1, 2, "judge.yaml:13")


def evaluator_update(*changes: Change) -> Operation:
    return Operation(id="Evaluator/research/judge#update", action="update", kind="Evaluator", name="judge",
                     method="PATCH", path="/v2/evaluators/E1", changes=changes, address="Evaluator/research/judge")


def test_a_quoted_value_in_a_refusal_does_not_name_a_field_and_is_not_read_as_other_text() -> None:
    # 'description' is the value the API quotes, not the field; nothing but the quote holds an 'x'.
    detail = "422 Unprocessable: unknown model_name 'description'"
    report = ApplyReport([Outcome(evaluator_update(DESCRIPTION, MODEL, PARAMETER), "failed", detail, http_status=422)])
    assert report.failure_summary().splitlines()[1] == (
        f"  Evaluator/research/judge: {detail} -> change template_config.llm_config.model_name at judge.yaml:12")


def test_a_refusal_naming_an_id_made_earlier_in_the_apply_is_explained_with_its_name() -> None:
    seen: list[dict[str, Any]] = []

    def explain(detail: str, responses: Mapping[str, Any]) -> str:
        seen.append(dict(responses))
        return detail.replace(responses["made"]["id"], "Integration/made")

    rec = Recorder({"/v2/things/uses": problem(422, "ID1 is not an LLM integration")})
    plan = Plan(operations=(op("made", "POST", "/v2/things", {"name": "made"}),
                            op("uses", "PATCH", "/v2/things/uses", {"x": 1}, depends=("made",))))
    report = run_plan(plan, client(rec), parallelism=2, explain=explain)
    assert [(o.status, o.detail) for o in report.outcomes] == [
        ("applied", None), (FAILED, "422 Boom: Integration/made is not an LLM integration")]
    assert seen == [{"made": {"id": "ID1"}}]


def test_fail_fast_starts_nothing_after_a_failure_even_what_was_ready_beside_it() -> None:
    """Two ready calls, room for one: ``b`` fails first (plan order), and ``a``, ready all along, is
    never sent; the report says why."""
    rec = Recorder({"/v2/things/b": problem(422, "bad")})
    plan = Plan(operations=(op("b", "PATCH", "/v2/things/b", {"x": 2}), op("a", "PATCH", "/v2/things/a", {"x": 1})))
    report = run_plan(plan, client(rec), parallelism=1, fail_fast=True)
    assert [(o.op.id, o.status, o.detail) for o in report.outcomes] == [
        ("b", FAILED, "422 Boom: bad"), ("a", "skipped", "not started: --fail-fast after an earlier failure")]
    assert rec.sent == ["PATCH /v2/things/b"]
