"""A Policy's CEL condition (perhaps a fork's, run by the pull-request plan) has
a depth limit, a limit on nested macros and a step budget: a condition too deep or too nested is
a validation problem at its line, one too costly stops the plan with an error (never a deny rule
read as false), and none ends in a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler.cli.main import main
from reconciler.errors import PlanError
from reconciler.manifests import load_manifests, policies
from reconciler.plan.model import Change, Operation, Plan
from reconciler.policy.evaluate import evaluate
from tests.security.test_plan_file import Cli

LONG = str(list(range(60)))
HEAVY = f'"{LONG}.all(a, {LONG}.all(b, {LONG}.all(c, a + b + c >= 0)))"'


def policy(path: Path, *conditions: str) -> Path:
    rules = "".join(f"  - name: r{i}\n    condition: {c}\n    effect: deny\n" for i, c in enumerate(conditions))
    path.write_text(f"kind: Policy\nname: limits\nrules:\n{rules}")
    return path


def test_a_condition_too_deep_or_too_nested_is_a_problem_at_its_line(tmp_path: Path) -> None:
    file = policy(tmp_path / "p.yaml", '"' + "(" * 3000 + "true" + ")" * 3000 + '"',
                  '"[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))"',
                  '"[1].all(a, [1].all(b, [1].all(c, true)))"')

    result = CliRunner().invoke(main, ["validate", str(file)], catch_exceptions=False)

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{file}:5:16: rules[0].condition: condition is nested too deeply (more than 32 levels)" in result.output
    assert (f"{file}:8:16: rules[1].condition: condition nests macros (all, exists, exists_one, map, filter) 4 "
            "deep; at most 3") in result.output
    assert "rules[2]" not in result.output  # three levels are fine


def test_a_condition_past_its_step_budget_stops_the_plan_with_an_error(
        cli: Cli, tree: Path, stats: Callable[[], dict[str, int]]) -> None:
    policy(tree / "heavy.yaml", HEAVY)

    result = cli("plan", str(tree))

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{tree / 'heavy.yaml'}:4: rule r0: the rule's condition took more than 100,000 steps" in result.output
    assert not any(k.split(" ")[0] in ("POST", "PATCH", "PUT", "DELETE") for k in stats())


UPDATE = Plan((Operation(id="p#update", action="update", kind="Prompt", name="triage", method="PATCH", path="/x",
                         changes=(Change("description", "a", "b"),), space="research",
                         address="Prompt/research/triage"),))


def validate(file: Path) -> str:
    result = CliRunner().invoke(main, ["validate", str(file)], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result.output


def test_thirty_two_levels_of_nested_expressions_are_allowed_and_not_one_more(tmp_path: Path) -> None:
    file = policy(tmp_path / "p.yaml", '"' + "(" * 31 + "true" + ")" * 31 + '"', '"' + "(" * 32 + "true" + ")" * 32 + '"')

    output = validate(file)

    assert "rules[0]" not in output
    assert f"{file}:8:16: rules[1].condition: condition is nested too deeply (more than 32 levels)" in output


def test_a_long_chain_of_operators_is_a_problem_at_its_line_not_a_traceback(tmp_path: Path) -> None:
    file = policy(tmp_path / "p.yaml", '"' + "!" * 340 + "true" + '"', '"' + "!" * 341 + "true" + '"',
                  '"' + " + ".join(["1"] * 1000) + ' > 0"', "op" + ".name" * 3000 + " == 1")

    output = validate(file)

    assert "rules[0]" not in output
    assert (f"{file}:8:16: rules[1].condition: condition is too long a chain of operators, selections or indexes "
            "(its parse tree is 351 deep; at most 350)") in output
    assert f"{file}:11:16: rules[2].condition: condition is too long a chain" in output
    assert f"{file}:14:16: rules[3].condition: condition is too long a chain" in output


@pytest.mark.parametrize("condition", [  # each as deep as allowed: 350 nodes, or 32 levels
    "!" * 326 + "(op.name != 'x')",
    " && ".join(["op.name != 'x'"] * 337),
    " + ".join(["1"] * 170) + " > size(op.name)",
    "dyn(op.changes)" + "[0]" * 162 + " == 1 || op.name == 'triage'",
    "op.name == 'triage' && " + "[" * 31 + "]" * 31 + " != []",
])
def test_the_deepest_condition_allowed_is_evaluated(tmp_path: Path, condition: str) -> None:
    ms = load_manifests([str(policy(tmp_path / "p.yaml", f'"{condition}"'))])

    assert [(v.rule, v.address) for v in evaluate(UPDATE, ms.policies, ms)] == [("r0", "Prompt/research/triage")]


def test_a_condition_within_its_step_budget_is_evaluated(tmp_path: Path) -> None:
    fifty = str(list(range(50)))  # 2,500 pairs: about 73,500 steps of the 100,000
    ms = load_manifests([str(policy(tmp_path / "p.yaml", f'"{fifty}.all(a, {fifty}.all(b, a + b >= 0))"'))])

    assert [v.rule for v in evaluate(UPDATE, ms.policies, ms)] == ["r0"]


def test_a_condition_may_take_every_step_of_its_budget_and_not_one_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = policy(tmp_path / "p.yaml", '"true"')  # 9 steps: one a level of its parse tree below the root
    ms = load_manifests([str(file)])

    monkeypatch.setattr(policies, "STEP_BUDGET", 9)
    assert [v.rule for v in evaluate(UPDATE, ms.policies, ms)] == ["r0"]
    monkeypatch.setattr(policies, "STEP_BUDGET", 8)
    with pytest.raises(PlanError) as stopped:
        evaluate(UPDATE, ms.policies, ms)
    assert str(stopped.value) == (f"{file}:4: rule r0: the rule's condition took more than 8 steps on one object and "
                                  "was stopped; simplify it (nested macros over long lists)")


def test_a_condition_at_a_depth_limit_is_refused_for_what_is_over_its_limit(tmp_path: Path) -> None:
    nested = "[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))"  # macros four deep
    file = policy(tmp_path / "p.yaml", '"' + "(" * 27 + nested + ")" * 27 + '"',  # at 32 levels
                  '"' + "!" * 297 + nested + '"')  # at 350 nodes

    output = validate(file)

    for line, rule in ((5, 0), (8, 1)):
        assert (f"{file}:{line}:16: rules[{rule}].condition: condition nests macros (all, exists, exists_one, map, "
                "filter) 4 deep; at most 3") in output
