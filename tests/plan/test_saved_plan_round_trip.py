"""A saved plan (``plan --out``) read back by ``apply`` is the plan that was shown: every field
survives the file, and the file holds only what it must. Long values render as diffs a reviewer
can read."""

from __future__ import annotations

import json

from reconciler.model import ReadScope
from reconciler.plan.model import FORMAT_VERSION, Change, Operation, Plan, PlanOptions, Unmanaged
from reconciler.plan.render import render_text, text_diff

FULL = Plan(
    operations=(
        Operation(id="Integration/a#create", action="create", kind="Integration", name="a", method="POST",
                  path="/v2/integrations", body={"name": "a", "config": {"api_key": "(sensitive)"}},
                  changes=(Change("config.api_key", None, "(sensitive)", "i.yaml:4"),), depends_on=(),
                  secrets={"/config/api_key": "env:K", "/config/headers/X": "file:/k"},
                  address="Integration/a", note="new"),
        Operation(id="Prompt/research/p#update", action="update", kind="Prompt", name="p", method="PATCH",
                  path="/v2/prompts/P1", body={"description": "d"}, changes=(Change("description", "c", "d"),),
                  depends_on=("Integration/a#create",), space="research", address="Prompt/research/p"),
    ),
    unverified_secrets=("Integration/b: config.api_key",),
    warnings=("a warning",),
    fingerprints={"Prompt/research/p": "f1", "Integration/b": "f0"},
    pins={"Prompt/research/p": ["prompts", "S1", "p"]},
    scope=ReadScope(spaces=frozenset({"research"}), prompts=frozenset({("research", "p")}),
                    kinds=frozenset({"Prompt", "Integration"})),
    manifests=("manifests",),
    options=PlanOptions(allow_replace=True, rotate_secrets=True, prune=True, allow_empty=True, version_name="v2",
                        targets=("Prompt/p",), rotate=("Integration/a",), since="HEAD~1",
                        resend=("Integration/a config.headers",), variables=("env=prod",), var_files=("v.yaml",)),
    unmanaged=(Unmanaged("Prompt/research/stray", "Prompt", "stray", "/v2/prompts/P9", "research"),
               Unmanaged("Integration/z", "Integration", "z", "/v2/integrations/I9")),
    owner="search",
    workdir="/work/tree",
)


def test_every_field_of_a_saved_plan_is_read_back_as_it_was_written() -> None:
    read = Plan.from_json(json.loads(FULL.dumps()))
    assert read == FULL
    assert read.dumps() == FULL.dumps()


def test_a_saved_plan_lists_unmanaged_resources_and_counts_them() -> None:
    data = json.loads(FULL.dumps())
    assert data["unmanaged"] == [
        {"address": "Prompt/research/stray", "kind": "Prompt", "name": "stray", "path": "/v2/prompts/P9",
         "space": "research"},
        {"address": "Integration/z", "kind": "Integration", "name": "z", "path": "/v2/integrations/I9"}]
    assert data["summary"] == {"create": 1, "update": 1, "delete": 0, "replace": 0, "unmanaged": 2}
    assert (data["owner"], data["workdir"]) == ("search", "/work/tree")


def test_an_operation_writes_optional_fields_only_when_it_has_them() -> None:
    ops = json.loads(FULL.dumps())["operations"]
    assert list(ops[0]) == ["id", "address", "action", "kind", "name", "method", "path", "body", "changes",
                            "depends_on", "secrets", "note"]
    assert ops[0]["secrets"] == {"/config/api_key": "env:K", "/config/headers/X": "file:/k"}
    assert list(ops[1]) == ["id", "address", "action", "kind", "name", "space", "method", "path", "body", "changes",
                            "depends_on"]
    assert ops[1]["changes"] == [{"path": "description", "before": "c", "after": "d", "source": None}]


def test_a_plan_without_owner_or_workdir_writes_neither_and_reads_defaults() -> None:
    data = json.loads(Plan(operations=()).dumps())
    assert "owner" not in data and "workdir" not in data
    assert data["format_version"] == FORMAT_VERSION
    read = Plan.from_json({"operations": []})
    assert (read.owner, read.workdir, read.unmanaged, read.options) == (None, "", (), PlanOptions())


def test_a_long_json_value_changes_as_an_indented_diff_with_its_keys_sorted_and_text_kept() -> None:
    before = {"temperature": 0.5, "stop": ["fin"], "prompt_prefix": "réponds brièvement " * 10}
    lines = text_diff(Change("invocation_params", before, {**before, "temperature": 0.7}))
    assert lines == ["@@ -5,3 +5,3 @@", "   ],", '-  "temperature": 0.5', '+  "temperature": 0.7', " }"]
    long_text = text_diff(Change("invocation_params", before, {**before, "prompt_prefix": "é"}))
    assert long_text is not None and '+  "prompt_prefix": "é",' in long_text  # not escaped to \\u00e9


def test_a_long_json_value_that_appears_is_all_added_lines() -> None:
    after = {"b": "x" * 90, "a": "y" * 90}
    lines = text_diff(Change("config.params", None, after))
    assert lines == ["@@ -0,0 +1,4 @@", "+{", '+  "a": "' + "y" * 90 + '",', '+  "b": "' + "x" * 90 + '"', "+}"]


def test_a_short_json_value_fits_on_one_line() -> None:
    assert text_diff(Change("config.params", {"a": 1}, {"a": 2})) is None


def test_the_text_plan_shows_a_long_json_change_under_its_field() -> None:
    op = Operation(id="x", action="update", kind="Prompt", name="p", method="POST", path="/v2/prompts/P1/versions",
                   changes=(Change("version.invocation_params", None, {"k": "v" * 200}),), address="Prompt/research/p")
    text = render_text(Plan(operations=(op,)))
    assert '        +  "k": "' + "v" * 200 + '"' in text
