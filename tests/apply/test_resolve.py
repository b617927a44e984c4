"""An operation turned into its request (reconciler/apply/resolve.py): a reference is filled from
the answers of the operation's own prerequisites, and nothing else of its shape is a reference."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.apply.resolve import request_for
from reconciler.errors import ApplyError
from reconciler.plan.model import APPLY_TIME, Operation

CREATED = "Integration/LLM/a#create"
ANSWERS = {CREATED: {"id": "I1"}, "Prompt/s/p#create": {"id": "P1"}}


def op(body: Any, path: str = "/v2/evaluators", depends_on: tuple[str, ...] = (CREATED,)) -> Operation:
    return Operation(id="Evaluator/s/e#create", action="create", kind="Evaluator", name="e", method="POST",
                     path=path, body=body, depends_on=depends_on, address="Evaluator/s/e")


def test_a_reference_to_a_prerequisite_is_filled_from_its_answer() -> None:
    path, body = request_for(op({"ai_integration_id": "${" + CREATED + ":id}"}), ANSWERS, "T")
    assert (path, body) == ("/v2/evaluators", {"ai_integration_id": "I1"})


@pytest.mark.parametrize("text", [
    "${Prompt/s/p#create:id}",  # an operation of the plan this call does not depend on
    "see ${Prompt/s/p#create:id} and ${" + CREATED + "x:id}",
    "${name} and ${var.x}",  # a template's placeholders
    "at ${apply_time}",  # the apply's time is a whole value only
])
def test_text_shaped_like_a_reference_to_anything_else_is_sent_as_written(text: str) -> None:
    """A manifest's text or a live value (a preset read back) naming an operation is not an instruction."""
    _, body = request_for(op({"template": text, "nested": [{"t": text}]}), ANSWERS, "T")
    assert body == {"template": text, "nested": [{"t": text}]}


def test_the_apply_time_is_a_value_that_is_the_marker_whole() -> None:
    _, body = request_for(op({"new_version": APPLY_TIME, "note": APPLY_TIME + " "}, depends_on=()), {}, "T")
    assert body == {"new_version": "T", "note": APPLY_TIME + " "}


def test_a_prerequisite_whose_answer_lacks_the_field_fails_naming_the_reference() -> None:
    with pytest.raises(ApplyError, match=r"the response of Integration/LLM/a#create has no version\.id"):
        request_for(op({"x": "${" + CREATED + ":version.id}"}), ANSWERS, "T")


def test_a_reference_in_the_path_is_filled_as_one_escaped_segment() -> None:
    path, _ = request_for(op({}, path="/v2/integrations/${" + CREATED + ":id}/x",), {CREATED: {"id": "a/../b c"}}, "T")
    assert path == "/v2/integrations/a%2F..%2Fb%20c/x"
    _, body = request_for(op({"id": "${" + CREATED + ":id}"}), {CREATED: {"id": "a/b"}}, "T")
    assert body == {"id": "a/b"}  # a body's value is sent as it is


def test_a_reference_reaches_into_lists_and_stops_at_what_is_not_there() -> None:
    answer = {"versions": [{"id": "V0"}, {"id": "V1"}], "n": 5}
    _, body = request_for(op({"a": "${" + CREATED + ":versions.1.id}", "b": "${" + CREATED + ":n}"}),
                          {CREATED: answer}, "T")
    assert body == {"a": "V1", "b": "5"}
    _, whole = request_for(op({"a": "${" + CREATED + "}"}), {CREATED: "I9"}, "T")
    assert whole == {"a": "I9"}  # a reference without a path is the answer itself
    for missing in ("versions.2.id", "versions.x", "n.id", "versions.-1.id"):
        ref = "${" + CREATED + ":" + missing + "}"
        with pytest.raises(ApplyError) as failed:
            request_for(op({"a": ref}), {CREATED: answer}, "T")
        assert str(failed.value) == f"reference {ref}: the response of {CREATED} has no {missing}"


def test_a_body_without_references_is_sent_as_it_is_and_the_planned_body_never_changes() -> None:
    examples = [{"q": i, "tags": ["a", {"b": 1}]} for i in range(3)]
    planned = {"examples": examples, "n": 3, "flag": None}
    _, body = request_for(op(planned, depends_on=()), {}, "T")
    assert body is planned  # not copied
    holding = {"examples": examples, "ref": {"to": ["x", "${" + CREATED + ":id}"]}, "time": APPLY_TIME}
    _, body = request_for(op(holding), ANSWERS, "T")
    assert body == {"examples": examples, "ref": {"to": ["x", "I1"]}, "time": "T"}
    assert body["examples"] is examples  # what holds no reference is not copied
    assert holding["ref"] == {"to": ["x", "${" + CREATED + ":id}"]} and holding["time"] == APPLY_TIME


class Text(str):
    pass


class Fields(dict[str, Any]):
    pass


def test_references_are_found_in_subclasses_of_text_and_containers() -> None:
    ref = "${" + CREATED + ":id}"
    for planned in ({"a": Text(ref)}, {"a": Fields(b=ref)}, {"a": [Fields(b=[ref])]}, [Text("x"), ref]):
        _, body = request_for(op(planned), ANSWERS, "T")
        assert "I1" in repr(body) and ref not in repr(body), planned
    _, body = request_for(op({"a": Text("plain"), "b": Fields(c=1), "c": 1}), ANSWERS, "T")
    assert body == {"a": "plain", "b": {"c": 1}, "c": 1}


def test_secrets_are_read_into_a_copy_at_their_pointers_and_handed_to_be_hidden(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEY_A", "canary-a-11")
    monkeypatch.setenv("KEY_B", "canary-b-22")
    planned = {"config": {"api_key": "(sensitive)", "headers": {"X/Y": "(sensitive)", "a~b": "(sensitive)"},
                          "list": ["(sensitive)", "keep"]}}
    secrets = {"/config/api_key": "env:KEY_A", "/config/headers/X~1Y": "env:KEY_B",
               "/config/headers/a~0b": "env:KEY_A", "/config/list/0": "env:KEY_B"}
    hidden: list[str] = []
    operation = Operation(id="Integration/a#create", action="create", kind="Integration", name="a", method="POST",
                          path="/v2/integrations", body=planned, secrets=secrets, address="Integration/a")
    _, body = request_for(operation, {}, "T", hide=lambda *values: hidden.extend(values))
    assert body == {"config": {"api_key": "canary-a-11", "headers": {"X/Y": "canary-b-22", "a~b": "canary-a-11"},
                               "list": ["canary-b-22", "keep"]}}
    assert sorted(hidden) == ["canary-a-11", "canary-a-11", "canary-b-22", "canary-b-22"]
    assert "canary" not in repr(planned)  # the plan itself never holds a value


def test_a_secret_at_the_top_of_a_list_body_is_placed_in_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEY_A", "canary-a-11")
    planned = ["(sensitive)", {"k": "(sensitive)"}]
    operation = Operation(id="X/a#create", action="create", kind="X", name="a", method="POST", path="/v2/x",
                          body=planned, secrets={"/0": "env:KEY_A", "/1/k": "env:KEY_A"}, address="X/a")
    assert request_for(operation, {}, "T") == ("/v2/x", ["canary-a-11", {"k": "canary-a-11"}])
    assert planned == ["(sensitive)", {"k": "(sensitive)"}]
