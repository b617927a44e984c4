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
