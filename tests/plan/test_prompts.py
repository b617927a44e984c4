"""Prompts at their edges (reconciler/plan/prompts.py), seen in the plan a user reads: every call of
a create and of an update (description, version, labels, restriction) with its body, changes and
order, labels kept when only one is missing, and parameters left null live compared as empty."""

from __future__ import annotations

import json
from typing import Any

from reconciler.model import DesiredResource, LiveState, RestrictionObject, Source
from reconciler.plan.model import Plan, PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json
from tests.plan.helpers import RESEARCH, manifests, res, state
from tests.plan.test_kinds_plan import VERSION, live_prompt
from tests.plan.test_lifecycle import plan_error

COMPARE = PlanOptions(restrictions="compare")
BASE = {"address": "Prompt/research/p", "kind": "Prompt", "name": "p", "space": "research"}

#: What an unknown space's error adds: the spaces there are, and how to make one.
SPACES = ("; the spaces are: default, research (create it in the platform first; the emulator: "
          "`reconciler emulator --space NAME`)")


def ops(plan: Plan) -> list[dict[str, Any]]:
    return [{k: v for k, v in op.items() if k not in BASE} for op in json.loads(render_json(plan))["operations"]]


def live_state(restricted: bool = False, **version: Any) -> LiveState:
    live = state()
    live.prompts[(RESEARCH, "p")] = live_prompt(**version)
    if restricted:
        live.restrictions = {("PROMPT", "UHI6MQ"): RestrictionObject.read({"id": "R1", "resource_id": "UHI6MQ",
                                                                          "resource_type": "PROMPT"})}
    return live


def test_a_new_prompt_is_created_then_labelled_then_restricted() -> None:
    p = res("Prompt", "p", "research", description="d", restricted=True,
            version={**VERSION, "labels": ["production", "staging"]})
    assert ops(make_plan(manifests(p), state())) == [
        {"id": "Prompt/research/p#create", "action": "create", "method": "POST", "path": "/v2/prompts",
         "body": {"space_id": RESEARCH, "name": "p", "description": "d", "version": {
             "commit_message": "v1", "provider": "VENDOR_A", "model": "m",
             "messages": [{"role": "user", "content": "{q}"}]}},
         "changes": [{"path": "description", "before": None, "after": "d", "source": None},
                     {"path": "version.commit_message", "before": None, "after": "v1", "source": None},
                     {"path": "version.provider", "before": None, "after": "VENDOR_A", "source": None},
                     {"path": "version.model", "before": None, "after": "m", "source": None},
                     {"path": "version.messages.0.role", "before": None, "after": "user", "source": None},
                     {"path": "version.messages.0.content", "before": None, "after": "{q}", "source": None}],
         "depends_on": []},
        {"id": "Prompt/research/p#labels", "action": "create", "method": "PUT",
         "path": "/v2/prompt-versions/${Prompt/research/p#create:version.id}/labels",
         "body": {"labels": ["production", "staging"]},
         "changes": [{"path": "version.labels", "before": None, "after": ["production", "staging"], "source": None}],
         "depends_on": ["Prompt/research/p#create"]},
        {"id": "Prompt/research/p#restrict", "action": "create", "method": "POST", "path": "/v2/resource-restrictions",
         "body": {"resource_id": "${Prompt/research/p#create:id}"},
         "changes": [{"path": "restricted", "before": None, "after": True, "source": None}],
         "depends_on": ["Prompt/research/p#create"]}]


def test_every_new_prompt_is_created() -> None:
    plan = make_plan(manifests(res("Prompt", "a", "research", version=VERSION),
                               res("Prompt", "b", "research", version=VERSION)), state())
    assert [(op.method, op.name) for op in plan.operations] == [("POST", "a"), ("POST", "b")]


def test_a_changed_prompt_is_a_description_patch_a_version_its_labels_and_a_restriction() -> None:
    p = res("Prompt", "p", "research", description="e", restricted=True,
            version={**VERSION, "commit_message": "v2", "messages": [{"role": "user", "content": "{q}!"}],
                     "labels": ["production", "staging"]})
    assert ops(make_plan(manifests(p), live_state(), COMPARE)) == [
        {"id": "Prompt/research/p#description", "action": "update", "method": "PATCH", "path": "/v2/prompts/UHI6MQ",
         "body": {"description": "e"},
         "changes": [{"path": "description", "before": "d", "after": "e", "source": None}], "depends_on": []},
        {"id": "Prompt/research/p#version", "action": "update", "method": "POST", "path": "/v2/prompts/UHI6MQ/versions",
         "body": {"commit_message": "v2", "provider": "VENDOR_A", "model": "m", "input_variable_format": "f_string",
                  "messages": [{"role": "user", "content": "{q}!"}], "invocation_params": {}, "provider_params": {}},
         "changes": [{"path": "version.messages.0.content", "before": "{q}", "after": "{q}!", "source": None},
                     {"path": "version.commit_message", "before": None, "after": "v2", "source": None}],
         "depends_on": [], "note": "new version"},
        {"id": "Prompt/research/p#labels", "action": "update", "method": "PUT",
         "path": "/v2/prompt-versions/${Prompt/research/p#version:id}/labels",
         "body": {"labels": ["production", "staging"]},
         "changes": [{"path": "version.labels", "before": [], "after": ["production", "staging"], "source": None}],
         "depends_on": ["Prompt/research/p#version"]},
        {"id": "Prompt/research/p#restrict", "action": "update", "method": "POST", "path": "/v2/resource-restrictions",
         "body": {"resource_id": "UHI6MQ"},
         "changes": [{"path": "restricted", "before": False, "after": True, "source": None}], "depends_on": []}]


def test_a_missing_label_is_added_beside_the_others_and_a_restriction_lifted() -> None:
    p = res("Prompt", "p", "research", restricted=False, version={**VERSION, "labels": ["production", "staging"]})
    assert ops(make_plan(manifests(p), live_state(restricted=True))) == [
        {"id": "Prompt/research/p#labels", "action": "update", "method": "PUT", "path": "/v2/prompt-versions/UHY6MQ/labels",
         "body": {"labels": ["production", "staging"]},
         "changes": [{"path": "version.labels", "before": ["production"], "after": ["production", "staging"],
                      "source": None}], "depends_on": []},
        {"id": "Prompt/research/p#unrestrict", "action": "update", "method": "DELETE",
         "path": "/v2/resource-restrictions/UHI6MQ", "body": None,
         "changes": [{"path": "restricted", "before": True, "after": False, "source": None}], "depends_on": []}]


def test_a_version_reusing_the_live_commit_message_says_so() -> None:
    p = res("Prompt", "p", "research", version={**VERSION, "model": "m2"})
    (op,) = make_plan(manifests(p), live_state()).operations
    assert op.note == ("new version; its commit_message is the live version's (reused): write a new one to tell the "
                       "versions apart")


def test_a_version_change_points_at_its_line() -> None:
    p = res("Prompt", "p", "research", version={**VERSION, "commit_message": "v2", "model": "m2"})
    p = DesiredResource(kind=p.kind, name=p.name, space=p.space, spec=p.spec,
                        sources={"": Source("p.yaml", 1), "version.model": Source("p.yaml", 7)})
    (op,) = make_plan(manifests(p), live_state()).operations
    assert [(c.path, c.source) for c in op.changes] == [("version.model", "p.yaml:7"),
                                                        ("version.commit_message", "p.yaml:1")]


def test_parameters_null_live_equal_empty_ones_and_a_changed_one_is_a_new_version() -> None:
    live = live_state(invocation_params=None, provider_params=None)
    p = res("Prompt", "p", "research", version={**VERSION, "invocation_params": {}, "provider_params": {}})
    assert make_plan(manifests(p), live).empty
    live = live_state(invocation_params={"temperature": 1}, provider_params={"x": 1})
    for params in ({"invocation_params": {"temperature": 0}}, {"provider_params": {"x": 2}}):
        p = res("Prompt", "p", "research", version={**VERSION, "commit_message": "v2", **params})
        assert [op.path for op in make_plan(manifests(p), live).operations] == ["/v2/prompts/UHI6MQ/versions"]


def test_every_prompt_in_a_space_that_does_not_exist_is_named() -> None:
    message = plan_error(manifests(res("Prompt", "a", "nowhere", version=VERSION),
                                   res("Prompt", "b", "elsewhere", version=VERSION)), state())
    assert message == ("cannot plan:\n"
                       "  Prompt/nowhere/a: space: no space named (or with the id) 'nowhere' exists" + SPACES + "\n"
                       "  Prompt/elsewhere/b: space: no space named (or with the id) 'elsewhere' exists" + SPACES)
