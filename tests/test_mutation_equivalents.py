"""The equivalent mutants of ``make mutation`` (``tests/mutation_equivalents.toml``) are recorded by
the function and the text they change, not by mutmut's number: an edit elsewhere in the function
renumbers the mutants and leaves each record where it was."""

from __future__ import annotations

from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.mutation.file_mutation import mutate_file_contents

from tests.mutation_report import (
    SCOPE,
    ModuleResult,
    MutantKey,
    earlier_of,
    function_of,
    key_of,
    load_equivalents,
    module_name,
    mutant_keys,
    render,
    toml_entry,
)

SOURCE = '''\
def pick(items, default=0):
    total = sum(items)
    return items[0] if items else default
'''
EDITED = '''\
def pick(items, default=0):
    assert isinstance(items, list), "a list"
    total = sum(items)
    return items[0] if items else default
'''


def mutants(source: str) -> dict[str, list[str]]:
    """``reconciler.toy.NAME`` -> the diff lines of each mutant mutmut makes of ``source``."""
    made = mutate_file_contents("reconciler/toy.py", source)
    out = {}
    for name in made.mutant_names:
        diff = get_diff_for_mutant(name, source=made.code, path="reconciler/toy.py")
        out[f"reconciler.toy.{name}"] = [line for line in diff.splitlines()
                                         if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return out


def test_a_mutant_is_named_by_its_function_and_the_text_it_changes() -> None:
    assert function_of("reconciler.telemetry.x__labels__mutmut_2") == "reconciler.telemetry._labels"
    assert function_of("reconciler.telemetry.xǁTelemetryǁattach__mutmut_1") == "reconciler.telemetry.Telemetry.attach"
    assert function_of("reconciler.plan.model.xǁPlanǁdumps__mutmut_3") == "reconciler.plan.model.Plan.dumps"
    diff = ["-        child = children.get(key)", "+        child = None"]
    assert key_of("reconciler.telemetry.xǁTelemetryǁattach__mutmut_6", diff) == MutantKey(
        "reconciler.telemetry.Telemetry.attach", "child = children.get(key)", "child = None")


def test_a_recorded_equivalent_survives_an_edit_that_renumbers_the_mutants() -> None:
    before, after = mutants(SOURCE), mutants(EDITED)
    target = next(m for m, d in before.items() if "+    return items[1] if items else default" in d)
    key = key_of(target, before[target])
    moved = [m for m, d in after.items() if key_of(m, d) == key]
    assert moved and moved != [target]  # the same mutant, under another number
    equivalents = load_equivalents(toml_entry(key, "the default is never used"))
    report = render({"reconciler/toy.py": ModuleResult("reconciler/toy.py", survived=moved,
                                                       killed=[m for m in after if m not in moved])},
                    equivalents, after.__getitem__)
    assert "equivalent: the default is never used" in report and "**survives**" not in report
    assert "Equivalents no longer surviving" not in report
    gone = render({"reconciler/toy.py": ModuleResult("reconciler/toy.py", killed=list(after))}, equivalents,
                  after.__getitem__)
    assert "Equivalents no longer surviving" in gone and "reconciler.toy.pick" in gone


def test_the_same_text_changed_twice_in_one_function_is_told_apart_by_its_occurrence() -> None:
    twice = "def f(a, b):\n    if a > 0:\n        a = 1\n    if b > 0:\n        b = 1\n    return a + b\n"
    made = mutants(twice)
    same = [m for m, d in made.items() if d == ["-    if a > 0:", "+    if a >= 0:"]
            or d == ["-    if b > 0:", "+    if b >= 0:"]]
    assert len(same) == 2
    keys = mutant_keys(same, list(made), made.__getitem__)
    assert {k.original for k in keys.values()} == {"if a > 0:", "if b > 0:"}  # different lines: one each
    again = "def f(a):\n    if a > 0:\n        a = 1\n    if a > 0:\n        a = 2\n    return a\n"
    made = mutants(again)
    same = [m for m, d in made.items() if d == ["-    if a > 0:", "+    if a >= 0:"]]
    keys = mutant_keys(same, list(made), made.__getitem__)
    assert sorted(k.occurrence for k in keys.values()) == [1, 2]
    first = min(same, key=lambda m: int(m.rpartition("_")[2]))
    assert keys[first].occurrence == 1
    entry = toml_entry(keys[first], "r") + "\n" + toml_entry(keys[max(same, key=lambda m: int(m.rpartition("_")[2]))],
                                                               "s")
    assert "occurrence = 2" in entry and len(load_equivalents(entry)) == 2


def test_an_entry_reads_back_as_written() -> None:
    key = MutantKey("reconciler.x.f", 'return f"{a}" if b else "\\\\"', "return None\nx = 1")
    assert load_equivalents(toml_entry(key, 'a "quoted" reason')) == {key: 'a "quoted" reason'}


def test_every_recorded_equivalent_names_a_function_in_scope_and_a_reason() -> None:
    equivalents = load_equivalents()
    assert equivalents
    modules = {module_name(path) for path in SCOPE}
    for key, reason in equivalents.items():
        assert key.function.rpartition(".")[0] in modules or key.function.rsplit(".", 2)[0] in modules, key
        assert key.mutated or key.original, key
        assert reason, key


def test_every_recorded_equivalent_names_a_function_that_exists() -> None:
    """A function moved or renamed leaves its records behind, matching no mutant: each record's
    function must be defined in its module under its name (a line edited since is listed by the report instead, under
    "Equivalents no longer surviving", once its function's mutants are run again)."""
    import importlib

    modules = sorted((module_name(path) for path in SCOPE), key=len, reverse=True)
    missing = []
    for key in load_equivalents():
        module = next((m for m in modules if key.function.startswith(m + ".")), None)
        target: object = importlib.import_module(module) if module else None
        for part in key.function.removeprefix(f"{module}.").split(".") if module else ():
            target = getattr(target, part, None)
        if getattr(target, "__module__", None) != module:  # absent, or only imported there
            missing.append(key.function)
    assert not missing, sorted(set(missing))


def test_a_module_not_run_again_keeps_its_earlier_row_and_survivors_marked_so() -> None:
    before = mutants(SOURCE)
    survivor = next(iter(before))
    first = render({"reconciler/toy.py": ModuleResult("reconciler/toy.py", survived=[survivor],
                                                      killed=[m for m in before if m != survivor])},
                   {}, before.__getitem__)
    not_run = {"reconciler/toy.py": ModuleResult("reconciler/toy.py", unchecked=list(before))}
    again = render(not_run, {}, before.__getitem__, earlier_of(first))
    row = next(line for line in again.splitlines() if line.startswith("| `reconciler/toy.py`"))
    assert row == f"| `reconciler/toy.py` | all (earlier run) | {len(before)} | {len(before) - 1} | 0 | 1 | 0 | " \
                  f"{100 * (len(before) - 1) / len(before):.1f}% |"
    assert "### `reconciler/toy.py` (earlier run)" in again and "**survives**" in again
    assert f"In all: {len(before) - 1} of {len(before)} mutants killed, 0 equivalent, 1 surviving" in again
    third = render(not_run, {}, before.__getitem__, earlier_of(again))
    assert third.count("(earlier run)") == again.count("(earlier run)")  # marked once, however often kept
    assert "(earlier run)" not in render(not_run, {}, before.__getitem__)  # nothing to keep: not run, said so
