"""The rehearsal's report word for word (README.md, "Rehearsal"): its headline for each outcome, the
findings the text and Markdown reports list, what a replica cannot know, the JSON of it, the error a
failed rehearsal ends the command with, and how the plan's remaining differences are summed up."""

from __future__ import annotations

import json

from reconciler.emulator.integrations import PLACEHOLDER
from reconciler.plan.model import Change, Operation, Plan
from reconciler.rehearse import Refusal, Rehearsal, _differences, with_placeholders

REFUSAL = Refusal(call="Evaluator/moss/judge POST /v2/evaluators", address="Evaluator/moss/judge", status=422,
                  detail="integration 'fern-llm' is not scoped to space 'moss'",
                  sources=("integration at tree.yaml:14", "scopings at tree.yaml:4"))
FAILED = Rehearsal(calls=3, accepted=1, refusals=(REFUSAL,), skipped=("Prompt/moss/p POST /v2/prompts: after a refusal",),
                   converged=False, remaining=("Integration/fern-llm: description",),
                   unknown=("1 secret value the plan sends is a placeholder (never read): the replica takes any value",
                            "who else | <writes>"))


def test_a_rehearsal_that_passed_says_so_in_one_line() -> None:
    passed = Rehearsal(calls=1, accepted=1)
    assert passed.ok
    assert passed.headline() == ("Rehearsal: passed: 1 of 1 call accepted by a replica of the account, the replica "
                                 "converged (its re-plan is empty).")
    assert Rehearsal(calls=2, accepted=2, converged=None).headline() == (
        "Rehearsal: passed: 2 of 2 calls accepted by a replica of the account, convergence not checked (the plan's "
        "manifests are not here).")


def test_a_refusal_a_call_not_tried_or_a_difference_left_fails_the_rehearsal() -> None:
    assert not FAILED.ok
    assert FAILED.headline() == ("Rehearsal: FAILED: 1 of 3 calls accepted by a replica of the account, 1 refused, "
                                 "1 not tried (after a refusal), the replica did NOT converge.")
    assert not Rehearsal(calls=1, accepted=0, refusals=(REFUSAL,)).ok
    assert not Rehearsal(calls=2, accepted=1, skipped=("x",)).ok
    assert not Rehearsal(calls=1, accepted=1, converged=False).ok
    assert Rehearsal(calls=0, accepted=0).headline() == "Rehearsal: nothing to rehearse (the plan is empty)."


def test_the_text_report_lists_each_finding_and_what_a_replica_cannot_know() -> None:
    assert FAILED.lines() == [
        FAILED.headline(),
        "  refused: Evaluator/moss/judge POST /v2/evaluators: integration 'fern-llm' is not scoped to space 'moss' "
        "-> integration at tree.yaml:14, scopings at tree.yaml:4",
        "  not tried: Prompt/moss/p POST /v2/prompts: after a refusal",
        "  still differs after the replica's apply: Integration/fern-llm: description",
        "  A replica cannot know: 1 secret value the plan sends is a placeholder (never read): the replica takes any "
        "value; who else | <writes>.",
    ]
    assert Rehearsal(calls=0, accepted=0, unknown=("x",)).lines() == [
        "Rehearsal: nothing to rehearse (the plan is empty)."]
    assert Refusal("C", "A", None, "no", ()).line() == "C: no"


def test_the_json_report_holds_every_finding() -> None:
    assert json.loads(json.dumps(FAILED.to_json())) == {
        "ok": False, "calls": 3, "accepted": 1,
        "refused": [{"call": REFUSAL.call, "address": "Evaluator/moss/judge", "status": 422, "detail": REFUSAL.detail,
                     "sources": ["integration at tree.yaml:14", "scopings at tree.yaml:4"]}],
        "skipped": ["Prompt/moss/p POST /v2/prompts: after a refusal"], "converged": False,
        "remaining": ["Integration/fern-llm: description"], "unknown": list(FAILED.unknown)}


def test_a_failed_rehearsal_ends_the_command_with_its_outcome() -> None:
    outcome = ("1 of 3 calls accepted by a replica of the account, 1 refused, 1 not tried (after a refusal), the "
               "replica did NOT converge.")
    assert str(FAILED.error()) == "the rehearsal failed: " + outcome
    assert str(FAILED.error(applying=True)) == "the rehearsal failed, so nothing was applied: " + outcome
    assert FAILED.error().exit_code == 1


def test_the_report_goes_under_a_text_plan_after_a_markdown_heading_and_into_a_json_plan() -> None:
    assert FAILED.rendered("Plan: 3 to create.\n", "text") == "Plan: 3 to create.\n" + "\n".join(FAILED.lines()) + "\n"
    assert FAILED.rendered("## Plan\nbody\n", "markdown") == "\n".join([
        "## Plan", "",
        f"**{FAILED.headline()}**",
        "- refused: Evaluator/moss/judge POST /v2/evaluators: integration 'fern-llm' is not scoped to space 'moss' "
        "-> integration at tree.yaml:14, scopings at tree.yaml:4",
        "- not tried: Prompt/moss/p POST /v2/prompts: after a refusal",
        "- still differs after the replica's apply: Integration/fern-llm: description",
        "<details><summary>What a replica cannot know</summary>\n\n"
        "- 1 secret value the plan sends is a placeholder (never read): the replica takes any value\n"
        "- who else \\| &lt;writes>\n\n</details>",
        "body\n"])
    assert Rehearsal(calls=0, accepted=0, unknown=("x",)).rendered("## Plan\n", "markdown") == (
        "## Plan\n\n**Rehearsal: nothing to rehearse (the plan is empty).**\n")
    rendered = FAILED.rendered('{"operations": [], "name": "ü"}', "json")
    assert rendered.endswith("}\n") and '\n  "name": "ü",\n' in rendered  # indented by two, not escaped
    assert json.loads(rendered) == {"operations": [], "name": "ü", "rehearsal": json.loads(json.dumps(FAILED.to_json()))}


def op(subject: str, *paths: str, method: str = "PATCH", path: str = "/v2/x") -> Operation:
    kind, name = subject.split("/", 1)
    return Operation(id=f"{subject}#{method}{path}", action="update", kind=kind, name=name, method=method, path=path,
                     changes=tuple(Change(p, "a", "b") for p in paths), address=subject)


def test_what_still_differs_names_three_fields_of_each_resource_and_counts_the_rest() -> None:
    again = Plan((op("Prompt/p", "description", "version.labels", "description"),
                  op("Prompt/p", "version.messages", "version.model", "tags"),
                  op("Integration/i", method="DELETE", path="/v2/integrations/I1"),
                  op("Dataset/d", "examples", "examples[+]", "key"),
                  op("Evaluator/e", "a", "b", "c", "d")))
    assert _differences(again) == [
        "Prompt/p: description, version.labels, version.messages (+2 more)",
        "Integration/i: DELETE /v2/integrations/I1",
        "Dataset/d: examples, examples[+], key",
        "Evaluator/e: a, b, c (+1 more)",
    ]


def test_every_secret_the_plan_sends_is_a_placeholder_on_the_replica() -> None:
    secret = Operation(id="i#create", action="create", kind="Integration", name="i", method="POST",
                       path="/v2/integrations", address="Integration/i",
                       body={"config": {"api_key": "(sensitive)", "headers": [{"value": "(sensitive)"}]}, "name": "i"},
                       secrets={"/config/api_key": "env:KEY", "/config/headers/0/value": "file:/run/h"})
    plain = op("Prompt/p", "description")
    placeholders = with_placeholders(Plan((secret, plain)))
    sent, untouched = placeholders.operations
    assert sent.body == {"config": {"api_key": PLACEHOLDER, "headers": [{"value": PLACEHOLDER}]}, "name": "i"}
    assert sent.secrets == {} and untouched is plain
    assert secret.body["config"]["api_key"] == "(sensitive)"  # the plan itself is left as it was
