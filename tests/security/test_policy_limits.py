"""A Policy's CEL condition (perhaps a fork's, run by the pull-request plan) has
a depth limit, a limit on nested macros and a step budget: a condition too deep or too nested is
a validation problem at its line, one too costly stops the plan with an error (never a deny rule
read as false), and none ends in a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from reconciler.cli.main import main
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
