"""Nested differences as a user reads them in the plan (reconciler/plan/changes.py): a type change
inside an object, an object added with a list of objects, a removed preset, a scalar field of a
prompt version and a dataset example's field, each with the ``file:line`` that asks for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.manifests import load_manifests
from reconciler.model import DatasetObject, LiveDataset
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json, render_text
from tests.plan.helpers import RESEARCH, manifests, res, state
from tests.plan.test_kinds_plan import VERSION, live_prompt
from tests.plan.test_plan_language import AGENT_LIVE

AGENT = """\
kind: Integration
name: agent
type: AGENT
config:
  endpoint: https://a.example/run
  input_schema:
    type: object
    properties:
      q: {type: string}
      n: {type: number}
      tags: {type: array, anyOf: [{type: string}, {type: "null"}]}
    default: 5
  request_presets:
    - name: warm
      config: {}
"""
PROMPT = """\
kind: Prompt
space: research
name: p
version:
  commit_message: v2
  provider: VENDOR_A
  model: m2
  messages: [{role: user, content: "{q}"}]
"""
DATASET = """\
kind: Dataset
space: research
name: d
key: k
examples:
  - {k: "1", text: new, meta: {a: 1}}
"""


@pytest.fixture
def text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    for name, body in (("agent.yaml", AGENT), ("p.yaml", PROMPT), ("d.yaml", DATASET)):
        (tmp_path / name).write_text(body)
    agent = {**AGENT_LIVE, "config": {**AGENT_LIVE["config"], "input_schema": {  # type: ignore[dict-item]
        "type": "object", "properties": {"q": {"type": "string"}, "n": 3}, "default": {"x": 1}}}}
    live = state(agent)
    live.prompts[(RESEARCH, "p")] = live_prompt()
    live.datasets[(RESEARCH, "d")] = LiveDataset(dataset=DatasetObject.read({"id": "RDox", "name": "d", "space_id": RESEARCH}),
                                                 examples=[{"id": "E1", "k": "1", "text": "old", "meta": {"a": 2}}],
                                                 experiments=[])
    return render_text(make_plan(load_manifests(["agent.yaml", "p.yaml", "d.yaml"]), live))


def test_nested_type_changes_added_objects_and_a_removed_preset_read_as_written(text: str) -> None:
    assert """\
    PATCH /v2/integrations/QUc6MQ
      config.input_schema.default: {"x": 1} -> 5   # agent.yaml:12
      config.input_schema.properties.n: 3 -> {"type": "number"}   # agent.yaml:10
      config.input_schema.properties.tags.anyOf.0.type = "string"   # agent.yaml:11
      config.input_schema.properties.tags.anyOf.1.type = "null"   # agent.yaml:11
      config.input_schema.properties.tags.type = "array"   # agent.yaml:11
      preset cold removed   # agent.yaml:13
""" in text


def test_a_scalar_version_field_and_an_example_field_name_their_lines(text: str) -> None:
    assert '      version.model: "m" -> "m2"   # p.yaml:7\n' in text
    assert ("      examples[k=1].meta.a: 2 -> 1   # d.yaml:6\n"
            '      examples[k=1].text: "old" -> "new"   # d.yaml:6\n') in text


def test_a_change_with_no_recorded_line_has_no_source() -> None:
    p = res("Prompt", "p", "research", version={**VERSION, "model": "m2"})
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt()
    (op,) = json.loads(render_json(make_plan(manifests(p), live)))["operations"]
    assert op["changes"][0] == {"path": "version.model", "before": "m", "after": "m2", "source": None}
