"""A saved plan read back by ``apply PLANFILE`` (reconciler/plan/planfile.py): every way a file can be
wrong gets its own message naming the file and what is wrong, before any request; a plan as reconciler
writes it reads back whole; its secret references are replaced by the ones the manifests declare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import PlanError
from reconciler.model import SecretRef
from reconciler.plan import planfile
from reconciler.plan.model import Operation, Plan
from reconciler.plan.planfile import declared_secrets, read_plan_file
from reconciler.plan.planner import make_plan
from tests.plan.helpers import key, llm, manifests, res, state

TREE = manifests(llm("a", api_key=key("A_KEY")),
                 res("Integration", "ag", type="AGENT", config={"endpoint": "https://a.example/x",
                                                                "headers": {"X-T": SecretRef("file", "/run/t")}}))
HEAD = "refused before any request: not a plan file as reconciler makes it (was it edited?):"


def saved() -> dict[str, Any]:
    return json.loads(make_plan(TREE, state()).dumps())


def write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "plan.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def error(tmp_path: Path, data: Any) -> str:
    path = write(tmp_path, data)
    with pytest.raises(PlanError) as err:
        read_plan_file(path)
    return str(err.value).replace(path, "plan.json")


def problems(tmp_path: Path, data: Any) -> list[str]:
    message = error(tmp_path, data)
    head, *lines = message.splitlines()
    assert head == f"plan.json: {HEAD}"
    return [line.removeprefix("  ") for line in lines]


# ---------------------------------------------------------------------- the file itself


def test_a_plan_as_reconciler_writes_it_reads_back_whole(tmp_path: Path) -> None:
    plan = make_plan(TREE, state())
    back = read_plan_file(write(tmp_path, plan.dumps()))
    assert back.to_json() == plan.to_json()
    assert [op.secrets for op in back] == [{"/config/api_key": "env:A_KEY"}, {"/config/headers/X-T": "file:/run/t"}]


def test_a_file_with_only_a_format_version_is_a_plan_with_nothing_to_do(tmp_path: Path) -> None:
    plan = read_plan_file(write(tmp_path, {"format_version": "1.0"}))
    assert plan.operations == () and plan.empty and plan.options.allow_replace is False


def test_a_missing_file_or_one_that_is_not_text_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"^.*nope\.json: cannot read the plan file \(No such file or directory\)$"):
        read_plan_file(str(tmp_path / "nope.json"))
    (tmp_path / "plan.json").write_bytes(b'{"format_version": "\xff"}')
    with pytest.raises(PlanError, match=r"plan\.json: not a plan file \(not UTF-8 text\)$"):
        read_plan_file(str(tmp_path / "plan.json"))


def test_invalid_json_names_its_line_and_column_and_a_cut_file_says_it_looks_truncated(tmp_path: Path) -> None:
    assert error(tmp_path, '{"format_version": "1.0",\n "operations": [x]}') == (
        "plan.json:2:17: not a valid plan file: invalid JSON (Expecting value); make the plan again")
    assert error(tmp_path, '{"format_version": "1.0",\n "operations": [') == (
        "plan.json:2:17: not a valid plan file: invalid JSON (Expecting value) (the file ends early: truncated?); "
        "make the plan again")
    assert error(tmp_path, '{"format_version": "1.0", "operations": [], "warnings": ["cut her') == (
        "plan.json:1:58: not a valid plan file: invalid JSON (Unterminated string starting at) (the file ends "
        "early: truncated?); make the plan again")
    assert error(tmp_path, "[" * 100_000 + "]" * 100_000) == "plan.json: not a valid plan file: JSON nested too deeply"


def test_json_that_is_not_an_object_is_not_a_plan_file(tmp_path: Path) -> None:
    assert error(tmp_path, "[1, 2]") == (
        "plan.json: not a plan file: expected a JSON object with format_version and operations")


@pytest.mark.parametrize(("version", "message"), [
    (None, "plan.json: not a plan file: format_version null is not a version (MAJOR.MINOR.PATCH)"),
    (1, "plan.json: not a plan file: format_version 1 is not a version (MAJOR.MINOR.PATCH)"),
    ("1", 'plan.json: not a plan file: format_version "1" is not a version (MAJOR.MINOR.PATCH)'),
    ("1.2.3.4", 'plan.json: not a plan file: format_version "1.2.3.4" is not a version (MAJOR.MINOR.PATCH)'),
    ("v" * 60, 'plan.json: not a plan file: format_version "' + "v" * 39 + " is not a version (MAJOR.MINOR.PATCH)"),
    ("2.0.0", "plan.json: the plan file's format_version 2.0.0 is newer than this reconciler reads (1.x): apply it "
              "with the reconciler that made it, or make the plan again"),
    ("0.9", "plan.json: the plan file's format_version 0.9 is older than this reconciler reads (1.x): make the "
            "plan again"),
])
def test_a_format_version_this_reconciler_does_not_read_is_refused(tmp_path: Path, version: Any,
                                                                   message: str) -> None:
    assert error(tmp_path, {"format_version": version, "operations": []}) == message


@pytest.mark.parametrize("version", ["1.0", "1.9", "1.0.7", "1.12.30"])
def test_any_minor_or_patch_of_the_same_major_is_read(tmp_path: Path, version: str) -> None:
    assert read_plan_file(write(tmp_path, {**saved(), "format_version": version})).operations


def test_a_file_the_plan_model_cannot_read_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    assert error(tmp_path, {"format_version": "1.0", "ignored": [{"path": "x"}]}) == (
        "plan.json: refused before any request: not a plan file as reconciler makes it (was it edited?):\n"
        "  ignored[0].address: Field required")


def test_every_part_the_plan_model_cannot_read_is_named_where_it_is(tmp_path: Path) -> None:
    assert error(tmp_path, {"format_version": "1.0", "policy": [{"rule": "r", "effect": "warn", "address": []}],
                            "options": {"prune": "maybe"}}) == (
        "plan.json: refused before any request: not a plan file as reconciler makes it (was it edited?):\n"
        "  options.prune: Input should be a valid boolean, unable to interpret input\n"
        "  policy[0].address: Input should be a valid string")


def test_a_read_scope_entry_that_is_not_a_pair_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    assert error(tmp_path, {"format_version": "1.0", "scope": {"prompts": [5]}}) == (
        "plan.json: not a valid plan file (TypeError: cannot unpack non-iterable int object)")


# ---------------------------------------------------------------------- the JSON shapes


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("operations", {}, "operations: expected a JSON array"),
    ("options", [], "options: expected a JSON object"),
    ("scope", "x", "scope: expected a JSON object"),
    ("fingerprints", [], "fingerprints: expected a JSON object"),
    ("pins", [], "pins: expected a JSON object"),
    ("manifests", {}, "manifests: expected a JSON array"),
    ("unmanaged", {}, "unmanaged: expected a JSON array"),
    ("unverified_secrets", "x", "unverified_secrets: expected a JSON array"),
    ("warnings", {}, "warnings: expected a JSON array"),
])
def test_a_top_level_value_of_the_wrong_json_type_is_named(tmp_path: Path, key: str, value: Any,
                                                            expected: str) -> None:
    assert problems(tmp_path, {**saved(), key: value}) == [expected]


def test_every_wrong_top_level_type_is_named_at_once_and_stops_the_deeper_checks(tmp_path: Path) -> None:
    assert problems(tmp_path, {**saved(), "operations": {}, "warnings": {}, "workdir": 3}) == [
        "operations: expected a JSON array", "warnings: expected a JSON array"]


def test_arrays_of_strings_workdir_and_unmanaged_entries_are_checked(tmp_path: Path) -> None:
    data = {**saved(), "manifests": ["a.yaml", 1], "unverified_secrets": [None], "warnings": ["w", ["x"]],
            "workdir": 3, "unmanaged": [{"address": "A", "kind": "K", "name": "n", "path": "/v2/x"},
                                        {"address": "A", "kind": "K", "name": "n"}, "x"]}
    assert problems(tmp_path, data) == [
        "manifests: expected an array of strings", "unverified_secrets: expected an array of strings",
        "warnings: expected an array of strings", "workdir: expected a string",
        "unmanaged[1]: expected an object with address, kind, name and path",
        "unmanaged[2]: expected an object with address, kind, name and path"]


def test_well_formed_optional_parts_pass(tmp_path: Path) -> None:
    data = {**saved(), "workdir": "/w", "manifests": ["a.yaml"], "unverified_secrets": ["env:X"], "warnings": ["w"],
            "unmanaged": [{"address": "A", "kind": "K", "name": "n", "path": "/v2/x"}],
            "options": {"targets": ["Integration/a"], "rotate": [], "resend": [], "variables": ["x=1"],
                        "var_files": ["v.yaml"]}}
    plan = read_plan_file(write(tmp_path, data))
    assert (plan.workdir, plan.manifests, plan.options.targets) == ("/w", ("a.yaml",), ("Integration/a",))


@pytest.mark.parametrize("pins", [{"a": ["Integration", "LLM"]}, {"a": ["Integration", "LLM", 3]},
                                  {"a": "Integration/LLM/a"}, {"a": ["Integration", "LLM", "a", "b"]}])
def test_a_pin_that_is_not_three_strings_is_refused(tmp_path: Path, pins: Any) -> None:
    assert problems(tmp_path, {**saved(), "pins": pins}) == [
        "pins: expected arrays of three strings (KIND and the object's key)"]


@pytest.mark.parametrize("option", ["targets", "rotate", "resend", "variables", "var_files"])
def test_options_that_are_lists_of_strings_are_checked(tmp_path: Path, option: str) -> None:
    assert problems(tmp_path, {**saved(), "options": {option: ["x", 1]}}) == [
        f"options.{option}: expected an array of strings"]
    assert problems(tmp_path, {**saved(), "options": {option: "x"}}) == [
        f"options.{option}: expected an array of strings"]


def test_each_malformed_operation_field_is_named_with_its_index(tmp_path: Path) -> None:
    data = saved()
    first = data["operations"][0]
    data["operations"] = [
        "x",
        {**first, "id": 1, "action": None, "kind": [], "name": {}, "method": 2, "path": None},
        {**first, "address": 3},
        {**first, "space": 4},
        {**first, "depends_on": "a"},
        {**first, "depends_on": ["a", 1]},
        {**first, "changes": {}},
        {**first, "changes": [{"path": 1}]},
        {**first, "changes": ["x"]},
        {**first, "secrets": []},
        {**first, "secrets": {"/config/api_key": 1}},
    ]
    assert problems(tmp_path, data) == [
        "operations[0]: expected an object",
        "operations[1].id: expected a string", "operations[1].action: expected a string",
        "operations[1].kind: expected a string", "operations[1].name: expected a string",
        "operations[1].method: expected a string", "operations[1].path: expected a string",
        "operations[2]: address and space must be strings",
        "operations[3]: address and space must be strings",
        "operations[4].depends_on: expected an array of operation ids",
        "operations[5].depends_on: expected an array of operation ids",
        "operations[6].changes: expected an array of objects with a path",
        "operations[7].changes: expected an array of objects with a path",
        "operations[8].changes: expected an array of objects with a path",
        "operations[9].secrets: expected an object of JSON pointers to references",
        "operations[10].secrets: expected an object of JSON pointers to references",
    ]


def test_an_operation_with_no_space_a_null_space_or_no_optional_parts_passes(tmp_path: Path) -> None:
    data = saved()
    # the address stays: an operation's label is checked against its call (refused without one)
    first = {k: v for k, v in data["operations"][0].items() if k not in ("depends_on", "changes", "secrets")}
    data["operations"] = [{**first, "id": "x", "space": None}, {**first, "id": "y", "body": None}]
    assert [op.id for op in read_plan_file(write(tmp_path, data))] == ["x", "y"]


def test_more_than_twenty_problems_show_twenty_and_a_count(tmp_path: Path) -> None:
    data = saved()
    data["operations"] = ["x"] * 23
    assert problems(tmp_path, data) == [f"operations[{i}]: expected an object" for i in range(20)] + [
        "... and 3 more"]
    data["operations"] = ["x"] * 20
    assert len(problems(tmp_path, data)) == 20


# ---------------------------------------------------------------------- the operations


def test_operations_reconciler_never_plans_are_each_refused(tmp_path: Path) -> None:
    data = saved()
    a, b = data["operations"]
    data["operations"] = [
        {**a, "action": "destroy", "method": "GET", "path": "/v1/x", "depends_on": ["nothing", a["id"], "gone"]},
        {**b, "id": a["id"]},
    ]
    assert problems(tmp_path, data) == [
        "two operations have the same id",
        f"operation {a['id']!r}: unknown action 'destroy'",
        f"operation {a['id']!r}: method 'GET' is not one apply sends (DELETE, PATCH, POST, PUT)",
        f"operation {a['id']!r}: path '/v1/x' is not an API path under /v2/ relative to the configured endpoint",
        f"operation {a['id']!r}: depends on unknown operations 'nothing', 'gone'",
    ]


@pytest.mark.parametrize("method", ["POST", "PATCH", "PUT", "DELETE"])
@pytest.mark.parametrize("action", ["create", "update", "delete", "replace"])
def test_every_action_and_write_method_is_read_when_the_call_does_it(tmp_path: Path, method: str,
                                                                       action: str) -> None:
    """An integration's calls: POST the collection creates (or replaces), PATCH an object updates,
    DELETE deletes (or replaces); any other label on them is refused, naming what the call does."""
    data = saved()
    op = data["operations"][0]
    assert op["kind"] == "Integration"
    path = "/v2/integrations" if method == "POST" else "/v2/integrations/SW50ZWc6MQ"
    op.update(method=method, action=action, path=path)
    does = {"POST": ("create", "replace"), "PATCH": ("update",), "DELETE": ("delete", "replace")}.get(method, ())
    if action in does:
        assert read_plan_file(write(tmp_path, data)).operations[0].method == method
    elif method == "PUT":
        assert problems(tmp_path, data) == [f"operation {op['id']!r}: PUT {path} is no call a reconciler plans"]
    else:
        assert problems(tmp_path, data) == [
            f"operation {op['id']!r}: labelled {action} Integration ({op['address']}), but {method} {path} is "
            f"the {' or '.join(does)} of an Integration"]


def test_a_path_with_a_reference_to_an_earlier_response_is_an_api_path(tmp_path: Path) -> None:
    data = saved()
    a, b = data["operations"]
    b.update(method="PATCH", action="update", path="/v2/integrations/${" + a["id"] + ":id}", depends_on=[a["id"]])
    plan = read_plan_file(write(tmp_path, data))
    assert plan.operations[1].path == "/v2/integrations/${Integration/LLM/a#create:id}"
    b["path"] = "/v2/integrations/${" + a["id"] + ":id}/../admin"
    assert problems(tmp_path, data) == [
        f"operation {b['id']!r}: path {b['path']!r} holds a '.' or '..' segment"]


@pytest.mark.parametrize(("pointer", "shown"), [
    ("/config/provider", "/config/provider"),  # not a placeholder
    ("/config/nothing", "/config/nothing"),
    ("/config/api_key/x", "/config/api_key/x"),  # below a string
    ("config/api_key", "config/api_key"),  # not a JSON pointer
    ("/config//api_key", "/config//api_key"),
    ("/", "/"),
])
def test_a_secret_that_is_not_at_a_placeholder_of_its_body_is_refused(tmp_path: Path, pointer: str,
                                                                       shown: str) -> None:
    data = saved()
    data["operations"][0]["secrets"] = {pointer: "env:A_KEY"}
    assert problems(tmp_path, data) == [
        f"operation 'Integration/LLM/a#create': secret at {shown!r} is not a (sensitive) placeholder of its body"]


def test_a_secret_pointer_may_escape_and_index_into_lists(tmp_path: Path) -> None:
    data = saved()
    op = data["operations"][1]
    op["body"]["config"]["headers"] = {"X/A~B": "(sensitive)", "list": ["x", "(sensitive)"]}
    op["secrets"] = {"/config/headers/X~1A~0B": "env:T", "/config/headers/list/1": "file:/run/l"}
    assert read_plan_file(write(tmp_path, data)).operations[1].secrets == op["secrets"]
    for pointer in ("/config/headers/list/2", "/config/headers/list/x", "/config/headers/X/A~B",
                    "/config/headers/list/0"):
        op["secrets"] = {pointer: "env:T"}
        assert problems(tmp_path, data) == [f"operation 'Integration/AGENT/ag#create': secret at {pointer!r} is not "
                                            "a (sensitive) placeholder of its body"]


@pytest.mark.parametrize("spec", ["env:", "env:1X", "env:A-B", "vault:a", "file:", "ENV:A", "env:A\n", "A_KEY"])
def test_a_secret_that_is_not_env_name_or_file_path_is_refused(tmp_path: Path, spec: str) -> None:
    data = saved()
    data["operations"][0]["secrets"] = {"/config/api_key": spec}
    assert problems(tmp_path, data) == [
        f"operation 'Integration/LLM/a#create': secret at '/config/api_key': {spec!r} is not env:NAME or file:PATH"]


@pytest.mark.parametrize("spec", ["env:_a9", "file:relative/p", "file:/a:b\nc"])
def test_env_names_and_any_file_path_are_references(tmp_path: Path, spec: str) -> None:
    data = saved()
    data["operations"][0]["secrets"] = {"/config/api_key": spec}
    assert read_plan_file(write(tmp_path, data)).operations[0].secrets == {"/config/api_key": spec}


# ---------------------------------------------------------------------- the manifests' own references


def plan_sending(*secrets: tuple[str, str, str]) -> Plan:
    """A saved plan whose operations (one per address) send these (address, pointer, spec)."""
    data = saved()
    a, b = data["operations"]
    by_address = {a["address"]: a, b["address"]: b}
    for op in (a, b):
        op["secrets"] = {}
    for address, pointer, spec in secrets:
        by_address[address]["secrets"][pointer] = spec
    return Plan.from_json(data)


def test_the_manifests_own_references_replace_the_plans(tmp_path: Path) -> None:
    tree = manifests(llm("a", api_key=key("A_KEY")),
                     res("Integration", "ag", type="AGENT", config={
                         "endpoint": "https://a.example/x", "headers": {"X-T": SecretRef("file", "/repo/t")}}))
    plan = plan_sending(("Integration/a", "/config/api_key", "env:A_KEY"),
                        ("Integration/ag", "/config/headers/X-T", "file:/elsewhere/t"))
    fixed = declared_secrets(plan, tree, "plan.json")
    assert [op.secrets for op in fixed] == [{"/config/api_key": "env:A_KEY"}, {"/config/headers/X-T": "file:/repo/t"}]
    assert [op.id for op in fixed] == [op.id for op in plan]


def test_a_plan_sending_no_secret_needs_no_manifests() -> None:
    plan = plan_sending()
    assert declared_secrets(plan, None, "plan.json") is plan


def test_a_plan_sending_secrets_without_its_manifests_is_refused_naming_them() -> None:
    plan = plan_sending(("Integration/a", "/config/api_key", "env:A_KEY"),
                        ("Integration/ag", "/config/headers/X-T", "file:/run/t"),
                        ("Integration/ag", "/config/headers/Y", "env:A_KEY"))
    plan = Plan.from_json({**plan.to_json(), "manifests": ["a.yaml", "b.yaml"]})
    with pytest.raises(PlanError) as err:
        declared_secrets(plan, None, "plan.json")
    assert str(err.value) == (
        "plan.json: refused before any request: the plan sends secrets (env:A_KEY, file:/run/t) and its manifests "
        "(a.yaml, b.yaml) are not found here: a plan file's secret references are used only when the manifests "
        "declare them. Run apply where the manifests are (the repository's checkout), or plan and apply from the "
        "manifests.")


def test_references_the_manifests_do_not_declare_there_are_each_refused() -> None:
    tree = manifests(llm("a", api_key=key("A_KEY"), endpoint="https://e.example"),
                     res("Integration", "ag", type="AGENT", config={
                         "endpoint": "https://a.example/x", "headers": {"X-T": SecretRef("file", "/run/t")}}))
    plan = plan_sending(("Integration/a", "/config/api_key", "env:OTHER"),  # another variable
                        ("Integration/a", "/config/endpoint", "env:A_KEY"),  # a field that holds no secret
                        ("Integration/a", "/config/nothing", "env:A_KEY"),  # a field not declared
                        ("Integration/ag", "/config/headers/X-T", "env:T"))  # another source
    with pytest.raises(PlanError) as err:
        declared_secrets(plan, tree, "plan.json")
    assert str(err.value).splitlines() == [
        "plan.json: refused before any request: secret references the manifests do not declare (the plan file was "
        "edited, or the manifests changed since: make the plan again):",
        "  Integration/a: config.api_key: env:OTHER is not declared there by the manifests",
        "  Integration/a: config.endpoint: env:A_KEY is not declared there by the manifests",
        "  Integration/a: config.nothing: env:A_KEY is not declared there by the manifests",
        "  Integration/ag: config.headers.X-T: env:T is not declared there by the manifests",
    ]


def test_a_reference_of_a_resource_the_manifests_do_not_declare_is_refused() -> None:
    data = plan_sending(("Integration/a", "/config/api_key", "env:A_KEY")).to_json()
    data["operations"][0]["address"] = "Integration/nowhere"
    with pytest.raises(PlanError) as err:
        declared_secrets(Plan.from_json(data), TREE, "plan.json")
    assert str(err.value).splitlines()[1:] == [
        "  Integration/nowhere: config.api_key: env:A_KEY is not declared there by the manifests"]


def test_twenty_one_problems_show_twenty_and_one_more(tmp_path: Path) -> None:
    data = saved()
    data["operations"] = ["x"] * 21
    assert problems(tmp_path, data)[-2:] == ["operations[19]: expected an object", "... and 1 more"]


def test_a_planned_path_with_a_query_string_is_refused(tmp_path: Path) -> None:
    data = saved()
    data["operations"][0]["path"] = "/v2/integrations?x=1"
    assert problems(tmp_path, data) == [
        "operation 'Integration/LLM/a#create': path '/v2/integrations?x=1' has a query string"]


def test_a_secret_at_a_top_level_placeholder_is_read(tmp_path: Path) -> None:
    data = saved()
    data["operations"][0]["body"]["Xtra"] = "(sensitive)"
    data["operations"][0]["secrets"] = {"/Xtra": "env:A_KEY"}
    assert read_plan_file(write(tmp_path, data)).operations[0].secrets == {"/Xtra": "env:A_KEY"}


def test_a_file_reference_whose_path_holds_a_colon_is_the_one_declared() -> None:
    tree = manifests(res("Integration", "ag", type="AGENT", config={
        "endpoint": "https://a.example/x", "headers": {"X-T": SecretRef("file", "/run/keys:v2/t")}}))
    plan = plan_sending(("Integration/ag", "/config/headers/X-T", "file:/run/keys:v2/t"))
    fixed = declared_secrets(plan, tree, "plan.json")
    assert [op.secrets for op in fixed] == [{}, {"/config/headers/X-T": "file:/run/keys:v2/t"}]


def test_operations_sending_no_secret_are_kept_as_they_are() -> None:
    plan = plan_sending(("Integration/a", "/config/api_key", "env:A_KEY"))
    fixed = declared_secrets(plan, TREE, "plan.json")
    assert fixed.operations[1] is plan.operations[1]
    assert [op.secrets for op in fixed] == [{"/config/api_key": "env:A_KEY"}, {}]


def test_a_reference_at_a_top_level_field_is_named_by_its_field() -> None:
    plan = plan_sending(("Integration/a", "/Xtra", "env:A_KEY"))
    with pytest.raises(PlanError) as err:
        declared_secrets(plan, TREE, "plan.json")
    assert str(err.value).splitlines()[1:] == [
        "  Integration/a: Xtra: env:A_KEY is not declared there by the manifests"]


def test_a_plan_file_is_read_as_utf8_in_a_latin1_locale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job whose locale encoding is not UTF-8 (here Latin-1: what Python would read a file in when no
    encoding is given) still reads a plan that holds non-ASCII text made elsewhere."""
    import io

    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda encoding, *a: "latin-1" if encoding is None else real(encoding))
    data = {**saved(), "warnings": ["prompt « triage » renamed"]}
    path = write(tmp_path, json.dumps(data, ensure_ascii=False))
    assert read_plan_file(path).warnings == ("prompt « triage » renamed",)


# ---------------------------------------------------------------------- the file's limits and shapes


def test_a_plan_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused_unread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planfile, "MAX_PLAN_BYTES", 10)
    path = tmp_path / "plan.json"
    path.write_bytes(b"x" * 10)
    assert planfile.read_plan_bytes(str(path)) == b"x" * 10
    path.write_bytes(b"x" * 11)
    with pytest.raises(PlanError) as err:
        planfile.read_plan_bytes(str(path))
    assert str(err.value) == f"{path}: refused: the plan file is over the 10-byte limit of a plan file"


def test_a_plan_already_read_is_not_read_again_from_its_path(tmp_path: Path) -> None:
    raw = json.dumps(saved()).encode()
    plan = read_plan_file(str(tmp_path / "not-there.json"), raw=raw)
    assert plan.operations


def test_an_integer_too_long_to_convert_is_refused_in_the_words_of_its_first_clause(tmp_path: Path) -> None:
    data = json.dumps(saved()).replace('"operations"', '"n": ' + "9" * 5000 + ', "operations"', 1)
    assert error(tmp_path, data) == ("plan.json: not a valid plan file: Exceeds the limit (4300 digits) for integer "
                                     "string conversion: value has 5000 digits")


@pytest.mark.parametrize(("sources", "problem"), [(["a"], "sources: expected a JSON object"),
                                                  ({"manifests/a.yaml": 1}, "sources: expected an object of paths to digests")])
def test_sources_that_are_not_paths_to_digests_are_refused(tmp_path: Path, sources: Any, problem: str) -> None:
    data = saved()
    data["sources"] = sources
    assert problems(tmp_path, data) == [problem]


def test_a_mislabelled_call_names_what_it_does_with_a_or_an(tmp_path: Path) -> None:
    data = saved()
    op = data["operations"][0]
    op.update(method="POST", action="delete", path="/v2/resource-restrictions")
    assert problems(tmp_path, data) == [
        f"operation {op['id']!r}: labelled delete Integration ({op['address']}), but POST /v2/resource-restrictions "
        "is the create or update of a Prompt or a ResourceRestriction"]


def test_an_experiment_s_delete_is_labelled_with_its_dataset_s_address() -> None:
    def delete(address: str) -> Operation:
        return Operation(id="x", action="delete", kind="Experiment", address=address, name="e", method="DELETE",
                         path="/v2/experiments/RXhwOjE")

    assert planfile.label_problem(delete("Dataset/research/golden")) is None
    assert planfile.label_problem(delete("Experiment/research/e")) == (
        "labelled delete Experiment (Experiment/research/e), but DELETE /v2/experiments/RXhwOjE is the delete of "
        "an Experiment")
