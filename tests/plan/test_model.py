"""A saved plan file (``plan --out``) read back by ``apply PLANFILE``: every field survives the round
trip, the file's keys are the documented ones (README.md, `reconciler schema --plan`), and what a hand-trimmed or older
file leaves out reads as the default. Kills the surviving mutants of ``reconciler/plan/model.py``."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema

from reconciler.model import ReadScope
from reconciler.plan.model import (
    Change,
    Ignored,
    Operation,
    Plan,
    PlanOptions,
    Unmanaged,
    Verdict,
    has_ref,
    ref,
)
from reconciler.plan.schema import plan_json_schema

OPTIONS = PlanOptions(allow_replace=True, rotate_secrets=True, prune=True, allow_empty=True, version_name="v7",
                      targets=("Prompt/research/a",), rotate=("Integration/x",), since="HEAD~1",
                      resend=("Integration/x config.api_key",), variables=("env=prod",), var_files=("vars.yaml",),
                      excludes=("Dataset/*",), policies=("policy.yaml",), restrictions="skip")

FULL = Plan(
    operations=(
        Operation(id="Integration/x#create", action="create", kind="Integration", name="x", method="POST",
                  path="/v2/integrations", body={"name": "x", "config": {"api_key": "(sensitive)"}},
                  changes=(Change("config.model", None, "gpt-é", "manifests/x.yaml:4"),),
                  secrets={"/config/api_key": "env:KEY"}, address="Integration/x", note="new"),
        Operation(id="Prompt/research/a#update", action="update", kind="Prompt", name="a", method="PATCH",
                  path="/v2/prompts/p1", body={"integration_id": ref("Integration/x#create", "id")},
                  changes=(Change("description", "old", "new"),), depends_on=("Integration/x#create",),
                  space="research", address="Prompt/research/a"),
    ),
    unverified_secrets=("Integration/y: config.api_key",),
    warnings=("a warning",),
    fingerprints={"Prompt/research/a": "abc"},
    pins={"Prompt/research/a": ["Prompt", "s1", "a"]},
    scope=ReadScope(spaces=frozenset({"research"}), prompts=frozenset({("research", "a")}),
                    kinds=frozenset({"Integration", "Prompt"})),
    manifests=("manifests",),
    options=OPTIONS,
    unmanaged=(Unmanaged("Dataset/research/old", "Dataset", "old", "/v2/datasets/d1", "research"),
               Unmanaged("Integration/z", "Integration", "z", "/v2/integrations/i9")),
    owner="team-research",
    workdir="/repo",
    ignored=(Ignored("Prompt/research/a", "description", "live", "declared", "manifests/a.yaml:9"),
             Ignored("Integration/x", "config.model", 1, 2)),
    policy=(Verdict("no-prod-delete", "deny", "Integration/x", "not in prod", "policy.yaml:3"),
            Verdict("small-plans", "warn", None, "big plan", "policy.yaml:8")),
)


def test_a_saved_plan_reads_back_as_the_same_plan_every_field_included() -> None:
    text = FULL.dumps()
    assert Plan.from_json(json.loads(text)) == FULL


def test_the_plan_file_writes_each_part_under_its_documented_keys() -> None:
    data = json.loads(FULL.dumps())
    assert data["policy"] == [
        {"rule": "no-prod-delete", "effect": "deny", "address": "Integration/x", "message": "not in prod",
         "source": "policy.yaml:3"},
        {"rule": "small-plans", "effect": "warn", "address": None, "message": "big plan", "source": "policy.yaml:8"},
    ]
    assert data["ignored"] == [
        {"address": "Prompt/research/a", "path": "description", "before": "live", "after": "declared",
         "source": "manifests/a.yaml:9"},
        {"address": "Integration/x", "path": "config.model", "before": 1, "after": 2, "source": None},
    ]
    assert data["options"] == {
        "allow_replace": True, "rotate_secrets": True, "prune": True, "allow_empty": True, "version_name": "v7",
        "targets": ["Prompt/research/a"], "rotate": ["Integration/x"], "since": "HEAD~1",
        "resend": ["Integration/x config.api_key"], "variables": ["env=prod"], "var_files": ["vars.yaml"],
        "excludes": ["Dataset/*"], "policies": ["policy.yaml"], "restrictions": "skip"}
    assert list(data) == ["format_version", "operations", "summary", "unverified_secrets", "warnings",
                          "fingerprints", "pins", "scope", "manifests", "options", "unmanaged", "ignored", "owner",
                          "workdir", "policy"]
    assert data["summary"] == {"create": 1, "update": 1, "delete": 0, "replace": 0, "unmanaged": 2, "ignored": 2}
    assert data["operations"][0] == {
        "id": "Integration/x#create", "address": "Integration/x", "action": "create", "kind": "Integration",
        "name": "x", "method": "POST", "path": "/v2/integrations",
        "body": {"name": "x", "config": {"api_key": "(sensitive)"}},
        "changes": [{"path": "config.model", "before": None, "after": "gpt-é", "source": "manifests/x.yaml:4"}],
        "depends_on": [], "secrets": {"/config/api_key": "env:KEY"}, "note": "new"}
    assert list(data["operations"][1]) == ["id", "address", "action", "kind", "name", "space", "method", "path",
                                           "body", "changes", "depends_on"]


def test_default_options_write_only_the_keys_of_format_1_0() -> None:
    data = json.loads(Plan(()).dumps())
    assert data["options"] == {
        "allow_replace": False, "rotate_secrets": False, "prune": False, "allow_empty": False, "version_name": None,
        "targets": [], "rotate": [], "since": None, "resend": [], "variables": [], "var_files": []}
    assert Plan((), options=PlanOptions(restrictions="compare")).to_json()["options"]["restrictions"] == "compare"
    assert not {"ignored", "owner", "workdir", "policy"} & set(data)
    assert data["summary"] == {"create": 0, "update": 0, "delete": 0, "replace": 0, "unmanaged": 0}


def test_what_a_trimmed_plan_file_leaves_out_reads_as_the_default() -> None:
    plan = Plan.from_json({"operations": [{"id": "Prompt/a#delete", "action": "delete", "kind": "Prompt",
                                           "name": "a", "method": "DELETE", "path": "/v2/prompts/p1"}],
                           "policy": [{"rule": "r", "effect": "warn"}],
                           "ignored": [{"address": "Prompt/a", "path": "description"}]})
    assert plan == Plan(
        operations=(Operation(id="Prompt/a#delete", action="delete", kind="Prompt", name="a", method="DELETE",
                              path="/v2/prompts/p1"),),
        policy=(Verdict("r", "warn", None, "", ""),),
        ignored=(Ignored("Prompt/a", "description", None, None, None),))
    assert plan.options == PlanOptions()
    assert plan.workdir == "" and plan.owner is None and plan.scope == ReadScope()
    assert Plan.from_json({"options": {}, "operations": []}).options == PlanOptions()
    options = Plan.from_json({"options": {"prune": 1, "allow_replace": "yes"}, "operations": []}).options
    assert options == PlanOptions(prune=True, allow_replace=True)


def test_verdict_fields_are_text_even_when_a_file_holds_numbers() -> None:
    verdict = {"rule": 7, "effect": "deny", "address": "Prompt/a", "message": 3, "source": 9}
    assert Plan.from_json({"operations": [], "policy": [verdict]}).policy == (Verdict("7", "deny", "Prompt/a", "3", "9"),)


def test_a_plan_file_is_indented_utf8_text_ending_in_a_newline() -> None:
    text = FULL.dumps()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert '\n  "format_version": "1.3.0",\n' in text
    assert "gpt-é" in text  # not escaped
    assert text.index('"operations"') < text.index('"summary"') < text.index('"policy"')  # written order, not sorted


def test_a_plan_built_from_lists_or_holding_infinity_is_written_as_json_dumps_writes_it() -> None:
    op = FULL.operations[0]
    built = replace(op, changes=list(op.changes), depends_on=["Prompt/research/a#update"], body={"t": float("inf")})
    plan = Plan([built], warnings=["a warning"])  # type: ignore[arg-type]
    assert plan.dumps() == replace(plan, operations=(replace(built, changes=op.changes, depends_on=(
        "Prompt/research/a#update",)),), warnings=("a warning",)).dumps()
    assert '"t": Infinity' in plan.dumps() and '"secrets": {' in plan.dumps() and '"note": "new"' in plan.dumps()


def test_the_plan_schema_requires_what_every_plan_writes_and_nothing_it_leaves_out() -> None:
    schema = plan_json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(json.loads(FULL.dumps())))
    assert not list(validator.iter_errors(json.loads(Plan(()).dumps())))
    assert schema["required"] == ["operations", "unverified_secrets", "warnings", "fingerprints", "pins", "scope",
                                  "manifests", "options", "unmanaged", "format_version", "summary"]
    assert schema["$defs"]["Operation"]["required"] == ["id", "address", "action", "kind", "name", "method", "path",
                                                        "body", "changes", "depends_on"]
    assert schema["$defs"]["Operation"]["additionalProperties"] is False and schema["additionalProperties"] is True


def test_references_are_found_at_any_depth() -> None:
    reference = ref("Integration/x#create", "id")
    assert has_ref(reference)
    assert has_ref({"a": {"b": [1, reference]}})
    assert has_ref(("x", reference))
    assert has_ref(["${apply_time}"])
    assert not has_ref({"a": ["plain", 1, None, {"b": "text"}]})
    assert not has_ref(("x", "y"))
    assert not has_ref(42)
    assert not has_ref("$apply_time")
