"""Every problem of a Policy document, word for word at its ``file:line:col`` (docs/manifests.md,
"Policy"): bad address globs, CEL that does not parse, unknown variables, fields and functions, a
``fields`` glob that names nothing, a rule with nothing to match, a name used twice; and what a
valid rule compiles to."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import ManifestError
from reconciler.manifests import load_manifests

MANY = """\
kind: Policy
name: p
rules:
  - name: r
    match: {addresses: ['Integration/x', vendor-a-prod, 'Prompt/']}
    effect: warn
  - name: s
    condition: op.acton == 'x' && befor.name == 'y'
    effect: warn
  - name: t
    match: {kinds: [Dataset], fields: [version.*, examples]}
    condition: |
      before.nmae == 'x' &&
        lower(op.kind) == 'y'
    effect: warn
  - name: u
    effect: warn
  - name: v
    match: {kinds: [Prompt, Dataset]}
    condition: after.version.labels == [] && plan.summary.deletes > 1
    effect: warn
  - name: w
    match: {addresses: ['Prompt/']}
    effect: warn
  - name: x
    condition: op.action ==
    effect: warn
  - name: y
    condition: op.action == 'x' )
    effect: warn
  - name: z
    condition: "true"
    effect: block
"""


def problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "p.yaml").write_text(text)
    with pytest.raises(ManifestError) as caught:
        load_manifests([str(tmp_path / "p.yaml")])
    return [line.replace(str(tmp_path) + "/", "") for line in caught.value.problems]


def test_every_problem_of_a_policy_is_named_at_its_place(tmp_path: Path) -> None:
    assert problems(tmp_path, MANY) == [
        "p.yaml:5:42: rules[0].match.addresses[1]: an address glob is KIND/NAME (KIND/SPACE/NAME for Prompt, "
        "Dataset, Evaluator), e.g. Integration/*-prod",
        "p.yaml:8:16: rules[1].condition: 'op' has no field 'acton' (op.acton in condition)",
        "p.yaml:8:35: rules[1].condition: unknown variable 'befor' in condition; CEL sees op, before, after and plan "
        "(did you mean 'before'?)",
        "p.yaml:11:40: rules[2].match.fields[0]: 'version.*' matches no manifest field of Dataset (field paths are "
        "dotted manifest names; * is one segment)",
        "p.yaml:13:1: rules[2].condition: no field 'nmae' in the manifests of Dataset (before.nmae in condition)",
        "p.yaml:14:3: rules[2].condition: unknown function 'lower' in condition",
        "p.yaml:16:5: rules[3]: a rule needs a match, a condition or both",
        "p.yaml:20:46: rules[4].condition: 'plan' has no field 'summary.deletes' (plan.summary.deletes in condition)",
        "p.yaml:23:25: rules[5].match.addresses[0]: an address glob is KIND/NAME (KIND/SPACE/NAME for Prompt, "
        "Dataset, Evaluator), e.g. Integration/*-prod",
        "p.yaml:26:26: rules[6].condition: condition is not valid CEL: unexpected '==' at line 1, column 11 of the "
        "expression",
        "p.yaml:29:33: rules[7].condition: condition is not valid CEL: unexpected ')' at line 1, column 18 of the "
        "expression",
        "p.yaml:33:13: rules[8].effect: 'block' is not one of deny, require_approval, warn",
    ]


def test_a_name_used_twice_is_named_where_it_was_first(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n    match: {kinds: [Dataset]}\n    effect: warn\n---\n"
            "kind: Policy\nname: q2\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n    effect: warn\n")
    assert problems(tmp_path, text) == [
        "p.yaml:11:1: name: rule 'e' is already defined at p.yaml:4; rule names are unique"]


def test_an_unknown_name_with_nothing_close_gets_no_suggestion(tmp_path: Path) -> None:
    text = "kind: Policy\nname: q\nrules:\n  - name: e\n    condition: zzz == 1\n    effect: warn\n"
    assert problems(tmp_path, text) == [
        "p.yaml:5:16: rules[0].condition: unknown variable 'zzz' in condition; CEL sees op, before, after and plan"]


def test_a_valid_rule_compiles_with_what_its_condition_reads(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "kind: Policy\nname: central\nrules:\n"
        "  - name: d\n    match: {actions: [delete], kinds: [Prompt], addresses: ['Prompt/*/x'], fields: [version]}\n"
        "    condition: op.changes.exists(c, c.path == 'x') && dyn(plan).summary.create > 0 && before.name == 'x'\n"
        "    effect: deny\n    message: never\n"
        "  - name: wide\n    condition: plan.summary.delete > 1\n    effect: warn\n")
    ms = load_manifests([str(tmp_path / "p.yaml")])
    d, wide = ms.policies
    assert (d.name, d.policy, d.effect, d.message, d.source) == ("d", "central", "deny", "never", f"{tmp_path}/p.yaml:4")
    assert (d.actions, d.kinds, d.addresses, d.fields) == ({"delete"}, {"Prompt"}, ("Prompt/*/x",), ("version",))
    assert d.uses == {"op", "plan", "before"} and not d.plan_only
    assert d.selects == {"op": frozenset({"changes"}), "plan": None, "before": frozenset({"name"})}
    assert wide.plan_only and wide.uses == {"plan"} and wide.message == "" and wide.actions == frozenset()


MORE = """\
kind: Policy
name: p
rules:
  - name: a
    match: {fields: [zzz]}
    condition: before.zzz == 1 || after.qqq == 2
    effect: warn
  - name: b
    match: {kinds: [Prompt, Dataset], fields: [nothing]}
    effect: warn
  - name: d
    condition: |
      op.action == 'x' &&
        op.kind == 'y' ) && op.name == 'a very long name here'
    effect: warn
"""


def test_a_rule_without_kinds_is_checked_against_every_kind_and_a_long_error_is_cut(tmp_path: Path) -> None:
    assert problems(tmp_path, MORE) == [
        "p.yaml:5:22: rules[0].match.fields[0]: 'zzz' matches no manifest field of any kind (field paths are dotted "
        "manifest names; * is one segment)",
        "p.yaml:6:16: rules[0].condition: no field 'zzz' in the manifests of any kind (before.zzz in condition)",
        "p.yaml:6:35: rules[0].condition: no field 'qqq' in the manifests of any kind (after.qqq in condition)",
        "p.yaml:9:48: rules[1].match.fields[0]: 'nothing' matches no manifest field of Prompt, Dataset (field paths "
        "are dotted manifest names; * is one segment)",
        "p.yaml:14:18: rules[2].condition: condition is not valid CEL: unexpected \") && op.name == 'a v\" at line 2, "
        "column 18 of the expression",
    ]


def test_rules_that_are_no_list_are_one_problem(tmp_path: Path) -> None:
    assert problems(tmp_path, "kind: Policy\nname: q\nrules: 5\n") == [
        "p.yaml:3:8: rules: expected a list, got an integer"]


def test_a_rule_defined_twice_is_named_whatever_its_path_holds(tmp_path: Path) -> None:
    where = tmp_path / "a:b"
    where.mkdir()
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n    match: {kinds: [Dataset]}\n    effect: warn\n---\n"
            "kind: Policy\nname: q2\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n    effect: warn\n")
    assert problems(where, text) == [
        "p.yaml:11:1: name: rule 'e' is already defined at p.yaml:4; rule names are unique"]


def test_a_selection_after_a_macro_variables_is_still_checked(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n"
            "    condition: op.changes.exists(c, c.path == 'x') && before.nmae == 'y'\n    effect: warn\n")
    assert problems(tmp_path, text) == [
        "p.yaml:6:55: rules[0].condition: no field 'nmae' in the manifests of Prompt (before.nmae in condition)"]


def test_a_selection_is_checked_against_every_kind_the_rule_names(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n    match: {kinds: [Prompt, Dataset]}\n"
            "    condition: before.nothing == 'y'\n    effect: warn\n")
    assert problems(tmp_path, text) == [
        "p.yaml:6:16: rules[0].condition: no field 'nothing' in the manifests of Prompt, Dataset (before.nothing in "
        "condition)"]


@pytest.mark.parametrize("glob", ["Prompt/research/", "/triage", "Prompt//triage"])
def test_an_address_glob_with_an_empty_part_is_refused_as_matching_nothing(tmp_path: Path, glob: str) -> None:
    text = f"kind: Policy\nname: q\nrules:\n  - name: e\n    match: {{addresses: ['{glob}']}}\n    effect: warn\n"
    assert problems(tmp_path, text) == [
        "p.yaml:5:25: rules[0].match.addresses[0]: an address glob is KIND/NAME (KIND/SPACE/NAME for Prompt, "
        "Dataset, Evaluator), e.g. Integration/*-prod"]
    (tmp_path / "p.yaml").write_text(text.replace(glob, "Prompt/*/triage"))
    assert load_manifests([str(tmp_path / "p.yaml")]).policies[0].addresses == ("Prompt/*/triage",)


def test_a_selection_inside_a_call_whose_result_is_selected_from_is_still_checked(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n"
            "    condition: dyn(after.verison).labels == []\n    effect: warn\n")
    assert problems(tmp_path, text) == [
        "p.yaml:6:20: rules[0].condition: no field 'verison' in the manifests of Prompt (after.verison in "
        "condition)"]


def test_an_unknown_variable_in_the_last_branch_of_a_choice_is_named(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n"
            "    condition: op.name == 'x' ? true :zzz\n    effect: warn\n")
    assert problems(tmp_path, text) == [
        "p.yaml:5:39: rules[0].condition: unknown variable 'zzz' in condition; CEL sees op, before, after and plan"]


def test_a_macro_without_its_variable_and_expression_is_a_problem_not_a_rule_read_as_false(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n"
            "    condition: op.changes.exists() || op.changes.all(c) || op.changes.map(c, c.path, c.after) == []"
            " || op.changes.filter(1, true) == []\n    effect: deny\n")
    assert problems(tmp_path, text) == [
        "p.yaml:5:16: rules[0].condition: exists() takes a variable and an expression, e.g. "
        "op.changes.exists(c, c.path == 'name')",
        "p.yaml:5:39: rules[0].condition: all() takes a variable and an expression, e.g. "
        "op.changes.all(c, c.path == 'name')",
        "p.yaml:5:60: rules[0].condition: map() takes a variable and an expression, e.g. "
        "op.changes.map(c, c.path == 'name')",
        "p.yaml:5:104: rules[0].condition: filter() takes a variable and an expression, e.g. "
        "op.changes.filter(c, c.path == 'name')",
    ]


def test_a_condition_of_blank_lines_ends_too_early(tmp_path: Path) -> None:
    text = "kind: Policy\nname: q\nrules:\n  - name: e\n    condition: \"\\n\\n\"\n    effect: warn\n"
    [problem] = problems(tmp_path, text)
    assert problem.endswith(": rules[0].condition: condition is not valid CEL: the expression ends too early")


def test_a_policy_missing_its_name_or_its_rules_is_named_by_what_it_has(tmp_path: Path) -> None:
    assert problems(tmp_path, "kind: Policy\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n    effect: warn\n") == [
        "p.yaml:1:1: Policy/?: missing required field 'name'"]
    assert problems(tmp_path, "kind: Policy\nname: q\n") == ["p.yaml:1:1: Policy/q: missing required field 'rules'"]


def test_a_space_on_a_policy_is_one_problem_at_the_space(tmp_path: Path) -> None:
    text = "kind: Policy\nname: q\nspace: research\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n    effect: warn\n"
    assert problems(tmp_path, text) == ["p.yaml:3:1: space: 'space' does not apply to Policy"]


def test_a_name_used_twice_is_named_beside_the_other_problems_of_its_policy(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n    condition: befor.name == 'x'\n    effect: warn\n---\n"
            "kind: Policy\nname: q2\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n    effect: warn\n")
    assert problems(tmp_path, text) == [
        "p.yaml:5:16: rules[0].condition: unknown variable 'befor' in condition; CEL sees op, before, after and plan "
        "(did you mean 'before'?)",
        "p.yaml:11:1: name: rule 'e' is already defined at p.yaml:4; rule names are unique"]


def test_a_value_the_yaml_reader_refused_is_one_problem_not_two(tmp_path: Path) -> None:
    text = ("kind: Policy\nname: q\nrules:\n  - name: e\n    match: {kinds: [Prompt]}\n    effect: warn\n"
            "    message: *m\n")
    assert problems(tmp_path, text) == [
        "p.yaml:7:14: rules[0].message: YAML aliases are not supported (*m): write the value out (aliases can expand "
        "a small file into a huge document)"]
