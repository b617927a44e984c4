"""The table of kinds by action a reviewer reads first: deletes and replacements first, one count per
object, only when the plan touches more than one resource (README.md, "Guardrails")."""

from __future__ import annotations

from reconciler.plan.model import Operation, Plan, Verdict
from reconciler.plan.render import render_markdown, render_text


def op(action: str, kind: str, name: str, n: str = "0") -> Operation:
    return Operation(id=f"{kind}/{name}#{n}", action=action, kind=kind, name=name, method="PATCH",
                     path=f"/v2/x/{name}", address=f"{kind}/{name}")


def test_the_table_counts_objects_by_kind_with_deletes_and_replacements_first() -> None:
    plan = Plan((op("update", "Prompt", "a"), op("update", "Prompt", "a", "1"), op("create", "Prompt", "b"),
                 op("replace", "Integration", "x"), op("delete", "ResourceRestriction", "r")))
    text = render_text(plan).splitlines()
    assert text[:5] == [
        "Changes by kind:",
        "  kind                  delete  replace   create   update",
        "  Integration                0        1        0        0",
        "  ResourceRestriction        1        0        0        0",
        "  Prompt                     0        0        1        1",
    ]
    markdown = render_markdown(plan)
    assert "| kind | delete | replace | create | update |\n|---|---:|---:|---:|---:|\n| Integration | 0 | 1 | 0 | 0 |" \
        in markdown
    assert markdown.count("<details>") == 4  # each resource's details stay collapsed


def test_a_plan_of_one_resource_has_no_table() -> None:
    plan = Plan((op("update", "Prompt", "a"), op("update", "Prompt", "a", "1")))
    assert "Changes by kind" not in render_text(plan) and "| kind |" not in render_markdown(plan)


def test_verdicts_come_before_the_summary_line_and_at_the_top_of_markdown() -> None:
    plan = Plan((op("delete", "Integration", "x"),),
                policy=(Verdict("no-deletes", "deny", "Integration/x", "by hand", "p.yaml:4"),))
    text = render_text(plan).splitlines()
    assert text[-2] == "Policy DENIED: no-deletes on Integration/x: by hand   # p.yaml:4"
    assert text[-1].startswith("Plan: ")
    markdown = render_markdown(plan)
    assert markdown.index("no-deletes") < markdown.index("| create | update |")


# --------------------------------------------------------------------------------------------------
# Policy verdicts as a reviewer reads them (reconciler/plan/review.py), in text and in the Markdown
# table, and the table of kinds from two resources on.


def an_update(kind: str, name: str) -> Operation:
    return Operation(id=f"{kind}/{name}#u", action="update", kind=kind, name=name, method="PATCH",
                     path=f"/v2/x/{name}", address=f"{kind}/{name}")


VERDICTS = (Verdict("no-deletes", "deny", "Integration/x", "a | b", "p.yaml:4"),
            Verdict("small", "warn", None, "big plan", "p.yaml:9"),
            Verdict("later", "audit", None, "kept", "p.yaml:12"))


def test_verdicts_in_text_name_the_plan_when_they_have_no_address() -> None:
    text = render_text(Plan((an_update("Prompt", "a"),), policy=VERDICTS)).splitlines()
    assert text[-4:-1] == ["Policy DENIED: no-deletes on Integration/x: a | b   # p.yaml:4",
                           "Policy WARNING: small on the plan: big plan   # p.yaml:9",
                           "Policy audit: later on the plan: kept   # p.yaml:12"]


def test_verdicts_in_markdown_are_a_table_with_pipes_as_entities() -> None:
    markdown = render_markdown(Plan((an_update("Prompt", "a"),), policy=VERDICTS))
    assert ("| policy | rule | on | message | source |\n"
            "|---|---|---|---|---|\n"
            "| **DENIED** | `no-deletes` | `Integration/x` | a &#124; b | p.yaml:4 |\n"
            "| **WARNING** | `small` | `the plan` | big plan | p.yaml:9 |\n"
            "| **audit** | `later` | `the plan` | kept | p.yaml:12 |\n"
            "\n") in markdown


def test_two_resources_get_the_table_of_kinds() -> None:
    text = render_text(Plan((an_update("Prompt", "a"), an_update("Dataset", "b"))))
    assert text.startswith("Changes by kind:\n")
