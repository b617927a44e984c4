"""A page of examples is cut from the stored JSON text (``core._member_text``), never decoded: the
cut must give the example exactly, whatever its fields hold, in the compact form stored now and in
the spaced form older stores hold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reconciler.emulator.core import _member_text, _stored

TRICKY: list[dict[str, Any]] = [
    {"id": "ex1", "input": {"q": "a"}},
    {"id": "ex2", "example": {"example": 1}, "note": ',"example":{"x":1}'},  # the key and its marker as data
    {"id": "ex3", "text": 'say ", "example": " twice, "example": ', "n": [1, {"example": None}]},
    {"id": "ex4", "unicode": "café ☕", "nested": {"a": [{"b": "}"}]}},
]


@pytest.mark.parametrize("example", TRICKY)
@pytest.mark.parametrize("form", ["compact", "spaced"])
def test_the_examples_text_is_cut_out_exactly(example: dict[str, Any], form: str) -> None:
    doc = {"id": "DatasetVersion:1/" + example["id"], "example": example}
    text = _stored(doc) if form == "compact" else json.dumps(doc)
    assert json.loads(_member_text(text, "example")) == example


def test_a_document_of_another_shape_is_decoded() -> None:
    text = json.dumps({"example": {"id": "ex9"}, "id": "v/ex9"})  # id not first: not cut
    assert json.loads(_member_text(text, "example")) == {"id": "ex9"}


def test_stored_documents_are_compact() -> None:
    assert _stored({"id": "a", "example": {"b": [1, 2]}}) == '{"id":"a","example":{"b":[1,2]}}'
