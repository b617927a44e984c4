"""Policy verdicts as a reviewer reads them (reconciler/plan/review.py), in text and in the Markdown
table, and the table of kinds from two resources on."""

from __future__ import annotations

from reconciler.plan.model import Operation, Plan, Verdict
from reconciler.plan.render import render_markdown, render_text


def op(kind: str, name: str) -> Operation:
    return Operation(id=f"{kind}/{name}#u", action="update", kind=kind, name=name, method="PATCH",
                     path=f"/v2/x/{name}", address=f"{kind}/{name}")


VERDICTS = (Verdict("no-deletes", "deny", "Integration/x", "a | b", "p.yaml:4"),
            Verdict("small", "warn", None, "big plan", "p.yaml:9"),
            Verdict("later", "audit", None, "kept", "p.yaml:12"))


def test_verdicts_in_text_name_the_plan_when_they_have_no_address() -> None:
    text = render_text(Plan((op("Prompt", "a"),), policy=VERDICTS)).splitlines()
    assert text[-4:-1] == ["Policy DENIED: no-deletes on Integration/x: a | b   # p.yaml:4",
                           "Policy WARNING: small on the plan: big plan   # p.yaml:9",
                           "Policy audit: later on the plan: kept   # p.yaml:12"]


def test_verdicts_in_markdown_are_a_table_with_pipes_as_entities() -> None:
    markdown = render_markdown(Plan((op("Prompt", "a"),), policy=VERDICTS))
    assert ("| policy | rule | on | message | source |\n"
            "|---|---|---|---|---|\n"
            "| **DENIED** | `no-deletes` | `Integration/x` | a &#124; b | p.yaml:4 |\n"
            "| **WARNING** | `small` | `the plan` | big plan | p.yaml:9 |\n"
            "| **audit** | `later` | `the plan` | kept | p.yaml:12 |\n"
            "\n") in markdown


def test_two_resources_get_the_table_of_kinds() -> None:
    text = render_text(Plan((op("Prompt", "a"), op("Dataset", "b"))))
    assert text.startswith("Changes by kind:\n")
