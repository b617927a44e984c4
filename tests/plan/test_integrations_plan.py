from __future__ import annotations

import json

import pytest

from reconciler.errors import PlanError
from reconciler.plan.model import SENSITIVE, PlanOptions
from reconciler.plan.planner import make_plan
from tests.plan.helpers import RESEARCH, key, live_llm, llm, manifests, res, state


def only(plan):  # type: ignore[no-untyped-def]
    assert len(plan.operations) == 1, [op.id for op in plan.operations]
    return plan.operations[0]


def test_missing_integration_is_created_with_secrets_masked_and_referenced() -> None:
    plan = make_plan(manifests(llm("a", api_key=key("A_KEY"), is_function_calling_enabled=True)), state())
    op = only(plan)
    assert (op.action, op.method, op.path) == ("create", "POST", "/v2/integrations")
    assert op.body == {"type": "LLM", "name": "a",
                       "config": {"provider": "VENDOR_A", "api_key": SENSITIVE, "is_function_calling_enabled": True}}
    assert op.secrets == {"/config/api_key": "env:A_KEY"}


def test_patch_sends_only_changed_scalars() -> None:
    live = live_llm("a", is_function_calling_enabled=True, has_api_key=True)
    desired = llm("a", "VENDOR_B", base_url="https://b.example/v1", is_function_calling_enabled=True)
    live["config"]["provider"] = "VENDOR_B"
    live["config"]["base_url"] = None
    op = only(make_plan(manifests(desired), state(live)))
    assert op.method == "PATCH" and op.body == {"type": "LLM", "config": {"base_url": "https://b.example/v1"}}
    assert [(c.path, c.before, c.after) for c in op.changes] == [("config.base_url", None, "https://b.example/v1")]


def test_in_sync_integration_plans_nothing_and_lists_the_unverifiable_key() -> None:
    live = live_llm("a", is_function_calling_enabled=False, has_api_key=True)
    plan = make_plan(manifests(llm("a", api_key=key(), is_function_calling_enabled=False)), state(live))
    assert plan.empty
    assert plan.unverified_secrets == ("Integration/a: config.api_key",)


@pytest.mark.parametrize(("live_has", "want", "rotate", "sent"), [
    (False, "ref", False, True), (True, "ref", False, False), (True, "ref", True, True),
    (True, None, False, True), (False, None, False, False),
])
def test_api_key_is_sent_only_when_missing_cleared_or_rotated(live_has: bool, want: str | None, rotate: bool,
                                                               sent: bool) -> None:
    live = live_llm("a", is_function_calling_enabled=True, has_api_key=live_has)
    desired = llm("a", api_key=key() if want else None)
    plan = make_plan(manifests(desired), state(live), PlanOptions(rotate_secrets=rotate))
    assert (not plan.empty) == sent
    if sent:
        assert "api_key" in plan.operations[0].body["config"]


def test_scopings_compare_as_a_set() -> None:
    scopes = [{"organization_id": "O1", "space_id": None}, {"organization_id": "O1", "space_id": RESEARCH}]
    live = live_llm("a", is_function_calling_enabled=True, has_api_key=True)
    live["scopings"] = list(reversed(scopes))
    plan = make_plan(manifests(res("Integration", "a", type="LLM", scopings=scopes,
                                   config={"provider": "VENDOR_A"})), state(live))
    assert plan.empty


def test_collections_are_sent_whole_when_they_differ() -> None:
    live = live_llm("c", "CUSTOM", base_url="https://c.example", has_api_key=False, header_names=["X-A"],
                    is_default_models_enabled=False, model_names=["m1", "m2"], is_function_calling_enabled=True)
    desired = llm("c", "CUSTOM", model_names=["m1", "m3"], headers={"X-A": key("H1"), "X-B": key("H2")})
    op = only(make_plan(manifests(desired), state(live)))
    assert op.body["config"] == {"model_names": ["m1", "m3"], "headers": {"X-A": SENSITIVE, "X-B": SENSITIVE}}
    assert op.secrets == {"/config/headers/X-A": "env:H1", "/config/headers/X-B": "env:H2"}


def test_cloud_d_auth_is_sent_whole_when_any_part_differs() -> None:
    live = live_llm("d", "CLOUD_D", is_default_models_enabled=True, model_names=[],
                    auth={"auth_type": "DEFAULT", "role_arn": "arn:1", "external_id": None, "base_url": None})
    desired = llm("d", "CLOUD_D", auth={"auth_type": "DEFAULT", "role_arn": "arn:1", "external_id": "x"})
    op = only(make_plan(manifests(desired), state(live)))
    assert op.body["config"] == {"auth": {"auth_type": "DEFAULT", "role_arn": "arn:1", "external_id": "x"}}
    same = llm("d", "CLOUD_D", auth={"auth_type": "DEFAULT", "role_arn": "arn:1"})
    assert make_plan(manifests(same), state(live)).empty


def test_provider_change_plans_a_replacement_that_needs_allow_replace() -> None:
    live = live_llm("a", is_function_calling_enabled=True, has_api_key=True)
    plan = make_plan(manifests(llm("a", "VENDOR_C", api_key=key())), state(live))
    assert [(op.action, op.method) for op in plan.operations] == [("replace", "DELETE"), ("replace", "POST")]
    assert plan.summary()["replace"] == 1
    assert any("--allow-replace" in w for w in plan.warnings)
    assert plan.operations[1].depends_on == (plan.operations[0].id,)


def test_presets_compare_by_name_and_keep_unmanaged_descriptions() -> None:
    schema = {"type": "object", "properties": {"t": {"type": "number"}}}
    live = {"id": "QWc6MQ", "type": "AGENT", "name": "ag", "description": None, "scopings": [],
            "config": {"endpoint": "https://a.example/run", "has_headers": False, "input_schema": schema,
                       "request_presets": [
                           {"id": "p2", "name": "warm", "description": "kept", "config": {"t": 1}},
                           {"id": "p1", "name": "cold", "description": None, "config": {"t": 0}}]}}
    presets = [{"name": "cold", "config": {"t": 0}}, {"name": "warm", "config": {"t": 1}}]
    desired = res("Integration", "ag", type="AGENT", config={"request_presets": presets})
    assert make_plan(manifests(desired), state(live)).empty
    changed = res("Integration", "ag", type="AGENT",
                  config={"request_presets": [{"name": "cold", "config": {"t": 0.5}}, presets[1]]})
    op = only(make_plan(manifests(changed), state(live)))
    assert op.body["config"]["request_presets"] == [
        {"name": "cold", "config": {"t": 0.5}}, {"name": "warm", "description": "kept", "config": {"t": 1}}]


def test_plan_json_is_deterministic_and_round_trips() -> None:
    from reconciler.plan.model import Plan

    desired = manifests(llm("a", api_key=key()), llm("b", "VENDOR_C", api_key=key("B")))
    one = make_plan(desired, state()).dumps()
    two = make_plan(desired, state()).dumps()
    assert one == two
    assert Plan.from_json(json.loads(one)).dumps() == one


def test_unknown_target_is_an_error() -> None:
    with pytest.raises(PlanError, match="Integration/zzz"):
        make_plan(manifests(llm("a", api_key=key())), state(), PlanOptions(targets=("Integration/zzz",)))


def test_model_names_are_a_set_an_order_the_service_returns_is_no_change() -> None:
    live = live_llm("n", "NIM_F", model_names=["b", "a"], is_default_models_enabled=False, header_names=[],
                    base_url=None, has_api_key=False, is_function_calling_enabled=True)
    assert make_plan(manifests(llm("n", "NIM_F", model_names=["a", "b"])), state(live)).empty
    op = only(make_plan(manifests(llm("n", "NIM_F", model_names=["a", "c"])), state(live)))
    assert op.body["config"] == {"model_names": ["a", "c"]}
