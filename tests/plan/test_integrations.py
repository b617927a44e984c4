"""Integrations at their edges (reconciler/plan/integrations.py), seen in the plan a user reads:
scopings that name no space (each at its index, the closest names first), a replacement's
warning and calls, write-only secrets and headers (sent, or listed as unverifiable, and why),
CLOUD_D auth whole, AGENT presets, and the changes each PATCH shows."""

from __future__ import annotations

import json
from typing import Any

from reconciler.model import DesiredResource, Source
from reconciler.plan.model import SENSITIVE, Plan, PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render_json, render_text
from tests.plan.helpers import DEFAULT, RESEARCH, key, live_llm, llm, manifests, res, state
from tests.plan.test_lifecycle import plan_error

ORG = "T3JnOjE"
SYNCED = {"is_function_calling_enabled": True, "has_api_key": True}


def scoped(name: str, scopings: list[dict[str, Any]], **config: Any) -> DesiredResource:
    return res("Integration", name, type="LLM", scopings=scopings, config={"provider": "VENDOR_A", **config})


def changes(plan: Plan) -> list[tuple[str, Any, Any]]:
    """What each call changes (a part of auth null on both sides, listed today, left out)."""
    return [(c.path, c.before, c.after) for op in plan.operations for c in op.changes
            if (c.before, c.after) != (None, None)]


def only(plan: Plan) -> Any:
    (op,) = plan.operations
    return op


# ---------------------------------------------------------------------- scopings


BAD_SCOPINGS = [{"space": "default"}, {"space": "reserch"}, {"space_id": "research"}, {"space_id": "reserch-id"},
                {"space": "RESEARCH"}]


def test_scopings_that_name_no_space_are_each_an_error_at_their_index() -> None:
    expected = ("cannot plan:\n"
                "  Integration/a: scopings.1.space: no space named 'reserch'; the spaces are: research, default\n"
                "  Integration/a: scopings.2.space_id: 'research' is a space's name, not its id: write "
                "{space: research}\n"
                "  Integration/a: scopings.3.space_id: no space has the id 'reserch-id'; the spaces are: research, "
                "default\n"
                "  Integration/a: scopings.4.space: no space named 'RESEARCH'; the spaces are: research, default")
    assert plan_error(manifests(scoped("a", BAD_SCOPINGS)), state()) == expected
    assert plan_error(manifests(scoped("a", BAD_SCOPINGS)), state(live_llm("a", **SYNCED))) == expected


def test_a_space_scoping_with_no_space_at_all_says_none() -> None:
    live = state()
    live.spaces = []
    assert plan_error(manifests(scoped("a", [{"space": "x"}])), live) == (
        "cannot plan:\n  Integration/a: scopings.0.space: no space named 'x'; the spaces are: (none)")


def test_resolved_scopings_are_sent_as_ids_on_create_and_update() -> None:
    want = [{"space": "default"}, {"organization_id": ORG}, {"space_id": RESEARCH, "organization_id": ORG}]
    sent = [{"organization_id": ORG, "space_id": DEFAULT}, {"organization_id": ORG, "space_id": None},
            {"organization_id": ORG, "space_id": RESEARCH}]
    assert only(make_plan(manifests(scoped("a", want)), state())).body == {
        "type": "LLM", "name": "a", "scopings": sent, "config": {"provider": "VENDOR_A"}}
    op = only(make_plan(manifests(scoped("a", want)), state(live_llm("a", **SYNCED))))
    assert op.body == {"type": "LLM", "scopings": sent}
    assert changes(make_plan(manifests(scoped("a", want)), state(live_llm("a", **SYNCED)))) == [
        ("scopings", [], sent)]


def test_a_scoping_by_an_id_is_kept_as_written_when_no_space_is_listed() -> None:
    live = state()
    live.spaces = []
    assert only(make_plan(manifests(scoped("a", [{"space_id": "U3BhY2U6OQ"}])), live)).body["scopings"] == [
        {"organization_id": None, "space_id": "U3BhY2U6OQ"}]


# ---------------------------------------------------------------------- rename, replace, type


def test_a_renamed_integration_shows_the_name_change() -> None:
    r = llm("new", is_function_calling_enabled=True)
    r = DesiredResource(kind=r.kind, name=r.name, spec=r.spec, aliases=("old",))
    assert changes(make_plan(manifests(r), state(live_llm("old", **SYNCED)))) == [("name", "old", "new")]


def test_a_provider_change_is_a_replacement_with_a_warning_without_allow_replace() -> None:
    plan = make_plan(manifests(llm("a", "VENDOR_B", api_key=key())), state(live_llm("a", id="I1", **SYNCED)))
    assert plan.warnings == ("Integration/a: provider VENDOR_A -> VENDOR_B cannot be patched; the replacement "
                             "(delete, then create) runs only with --allow-replace",)
    ops = json.loads(render_json(plan))["operations"]
    assert [(o["id"], o["action"], o["name"], o["method"], o["path"], o["depends_on"]) for o in ops] == [
        ("Integration/LLM/a#delete", "replace", "a", "DELETE", "/v2/integrations/I1", []),
        ("Integration/LLM/a#create", "replace", "a", "POST", "/v2/integrations", ["Integration/LLM/a#delete"])]
    assert ops[0]["changes"] == [{"path": "", "before": "LLM a", "after": None, "source": None}]
    assert ops[0]["note"] == "replace: provider VENDOR_A -> VENDOR_B"
    assert make_plan(manifests(llm("a", "VENDOR_B", api_key=key())), state(live_llm("a", **SYNCED)),
                     PlanOptions(allow_replace=True)).warnings == ()


def test_a_type_change_replaces_the_live_integration_of_the_other_type() -> None:
    agent = res("Integration", "a", type="AGENT", config={"endpoint": "https://agent.example/run",
                                                          "input_schema": {"type": "object"}})
    plan = make_plan(manifests(agent), state(live_llm("a", id="I1", **SYNCED)), PlanOptions(allow_replace=True))
    assert [(op.method, op.path, op.note) for op in plan.operations] == [
        ("DELETE", "/v2/integrations/I1", "replace: type LLM -> AGENT"), ("POST", "/v2/integrations", None)]


def test_both_types_declared_under_one_name_keep_the_live_one_and_create_the_other() -> None:
    agent = res("Integration", "a", type="AGENT", config={"endpoint": "https://agent.example/run",
                                                          "input_schema": {"type": "object"}})
    plan = make_plan(manifests(agent, llm("a", is_function_calling_enabled=True)), state(live_llm("a", **SYNCED)))
    assert [(op.method, op.body["type"]) for op in plan.operations] == [("POST", "AGENT")]
    assert plan.warnings == ()


# ---------------------------------------------------------------------- write-only secrets


def test_a_rotated_key_shows_it_was_there_and_why_it_is_sent() -> None:
    live = state(live_llm("a", **SYNCED))
    plan = make_plan(manifests(llm("a", api_key=key(), is_function_calling_enabled=True)), live,
                     PlanOptions(rotate=("Integration/a",)))
    assert changes(plan) == [("config.api_key", SENSITIVE, "(sensitive, env:KEY)")]
    assert only(plan).note == "secrets sent: --rotate"
    plan = make_plan(manifests(llm("a", api_key=key(), is_function_calling_enabled=True)), live,
                     PlanOptions(since="main", resend=("Integration/a config.api_key",)))
    assert only(plan).note == "write-only config.api_key: declaration changed since main"
    plan = make_plan(manifests(llm("a", api_key=key(), is_function_calling_enabled=True)), live,
                     PlanOptions(rotate_secrets=True))
    assert only(plan).note is None


def test_a_key_missing_live_is_sent_as_new() -> None:
    live = state(live_llm("a", is_function_calling_enabled=True, has_api_key=False))
    plan = make_plan(manifests(llm("a", api_key=key(), is_function_calling_enabled=True)), live)
    assert changes(plan) == [("config.api_key", None, "(sensitive, env:KEY)")]
    assert only(plan).note is None


def test_a_rotate_of_another_change_than_a_secret_says_nothing() -> None:
    live = state(live_llm("a", **SYNCED))
    plan = make_plan(manifests(llm("a", is_function_calling_enabled=False)), live, PlanOptions(rotate=("Integration/a",)))
    assert only(plan).note is None


def custom(header_names: list[str] | None = None, **config: Any) -> dict[str, Any]:
    return live_llm("c", "CUSTOM", **{"base_url": "https://c.example", "has_api_key": False,
                                      "header_names": header_names, "is_default_models_enabled": True,
                                      "model_names": [], "is_function_calling_enabled": True, **config})


def test_headers_with_the_same_names_are_unverifiable_until_rotated_or_redeclared() -> None:
    live = state(custom(["X-A"]))
    desired = llm("c", "CUSTOM", headers={"X-A": key("H")})
    plan = make_plan(manifests(desired), live)
    assert plan.empty and plan.unverified_secrets == ("Integration/c: config.headers (values)",)
    for options in (PlanOptions(rotate=("Integration/c",)),
                    PlanOptions(since="v1", resend=("Integration/c config.headers",))):
        plan = make_plan(manifests(desired), live, options)
        assert changes(plan) == [("config.headers", {"X-A": SENSITIVE}, {"X-A": "(sensitive, env:H)"})]
        assert plan.unverified_secrets == ()
    assert only(make_plan(manifests(desired), live, PlanOptions(rotate=("Integration/c",)))).note == (
        "secrets sent: --rotate")


def test_a_renamed_header_is_sent_and_removed_headers_are_cleared() -> None:
    live = state(custom(["X-A"]))
    plan = make_plan(manifests(llm("c", "CUSTOM", headers={"X-B": key("H")})), live)
    assert changes(plan) == [("config.headers", {"X-A": SENSITIVE}, {"X-B": "(sensitive, env:H)"})]
    plan = make_plan(manifests(llm("c", "CUSTOM", headers=None)), live)
    assert only(plan).body["config"] == {"headers": None}
    assert changes(plan) == [("config.headers", {"X-A": SENSITIVE}, None)]
    assert "header X-A removed" not in render_text(plan) and "config.headers = " in render_text(plan)
    assert make_plan(manifests(llm("c", "CUSTOM", headers=None)), state(custom([]))).empty


AGENT_CONFIG = {"endpoint": "https://agent.example/run", "input_schema": {"type": "object"}}


def agent(**config: Any) -> DesiredResource:
    return res("Integration", "g", type="AGENT", config={**AGENT_CONFIG, **config})


def live_agent(**config: Any) -> Any:
    return state({"id": "G1", "type": "AGENT", "name": "g", "scopings": [], "description": None,
                  "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                  "created_by_user_id": "VXNlcjox", "config": {**AGENT_CONFIG, "request_presets": [], **config}})


def test_agent_headers_compare_by_presence_only() -> None:
    plan = make_plan(manifests(agent(headers={"X": key("H")})), live_agent(has_headers=True))
    assert plan.empty and plan.unverified_secrets == ("Integration/g: config.headers (values; only presence is visible)",)
    for options in (PlanOptions(rotate=("Integration/g",)), PlanOptions(resend=("Integration/g config.headers",))):
        plan = make_plan(manifests(agent(headers={"X": key("H")})), live_agent(has_headers=True), options)
        assert changes(plan) == [("config.headers", SENSITIVE, {"X": "(sensitive, env:H)"})]
    plan = make_plan(manifests(agent(headers={"X": key("H")})), live_agent(has_headers=False))
    assert changes(plan) == [("config.headers", None, {"X": "(sensitive, env:H)"})]
    plan = make_plan(manifests(agent(headers=None)), live_agent(has_headers=True))
    assert changes(plan) == [("config.headers", SENSITIVE, None)]


# ---------------------------------------------------------------------- CLOUD_D auth


def cloud_d(auth: dict[str, Any]) -> Any:
    return state(live_llm("d", "CLOUD_D", is_default_models_enabled=True, model_names=[], auth=auth))


BEARER_LIVE = {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None}
BEARER = {"auth_type": "BEARER_TOKEN", "api_key": key("T")}


def test_a_bearer_token_is_unverifiable_until_rotated_or_redeclared() -> None:
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth=BEARER)), cloud_d(BEARER_LIVE))
    assert plan.empty and plan.unverified_secrets == ("Integration/d: config.auth (secret values)",)
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth=BEARER)), cloud_d(BEARER_LIVE),
                     PlanOptions(rotate=("Integration/d",)))
    assert changes(plan) == [("config.auth.api_key", SENSITIVE, "(sensitive, env:T)")]
    assert plan.unverified_secrets == ()
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth=BEARER)), cloud_d(BEARER_LIVE),
                     PlanOptions(since="main", resend=("Integration/d config.auth",)))
    assert only(plan).body["config"] == {"auth": {"auth_type": "BEARER_TOKEN", "api_key": SENSITIVE}}
    assert only(plan).note == "write-only config.auth: declaration changed since main"


def test_a_bearer_token_missing_live_is_sent() -> None:
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth=BEARER)), cloud_d({**BEARER_LIVE, "has_api_key": False}))
    assert changes(plan) == [("config.auth.api_key", None, "(sensitive, env:T)")]


def test_proxy_headers_compare_by_name() -> None:
    live = {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://p.example", "header_names": ["X-A"]}
    want = {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://p.example", "headers": {"X-A": key("H")}}
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth=want)), cloud_d(live))
    assert plan.empty and plan.unverified_secrets == ("Integration/d: config.auth (secret values)",)
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth={**want, "headers": {"X-B": key("H")}})), cloud_d(live))
    assert changes(plan) == [("config.auth.headers.X-A", SENSITIVE, None),
                             ("config.auth.headers.X-B", None, "(sensitive, env:H)")]
    assert "header X-A removed" in render_text(plan)
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth={**want, "headers": None})),
                     cloud_d({**live, "header_names": []}))
    assert plan.empty and plan.unverified_secrets == ()


def test_an_auth_mode_change_shows_every_part() -> None:
    plan = make_plan(manifests(llm("d", "CLOUD_D", auth=BEARER)),
                     cloud_d({"auth_type": "DEFAULT", "role_arn": "arn:1", "external_id": None, "base_url": None}))
    assert changes(plan) == [("config.auth.api_key", None, "(sensitive, env:T)"),
                             ("config.auth.auth_type", "DEFAULT", "BEARER_TOKEN"),
                             ("config.auth.role_arn", "arn:1", None)]


# ---------------------------------------------------------------------- presets, model names, sources


def test_a_preset_without_a_description_keeps_the_live_one_and_a_new_description_is_sent() -> None:
    live = live_agent(request_presets=[{"name": "cold", "description": "d", "config": {"t": 0}}])
    assert make_plan(manifests(agent(request_presets=[{"name": "cold", "config": {"t": 0}}])), live).empty
    plan = make_plan(manifests(agent(request_presets=[{"name": "cold", "description": "e", "config": {"t": 0}}])),
                     live)
    assert only(plan).body["config"] == {"request_presets": [{"name": "cold", "description": "e", "config": {"t": 0}}]}
    assert changes(plan) == [("config.request_presets.cold.description", "d", "e")]


def test_a_preset_change_points_at_the_line_of_that_preset() -> None:
    live = live_agent(request_presets=[{"name": "warm", "description": None, "config": {"t": 1}},
                                       {"name": "cold", "description": None, "config": {"t": 0}}])
    r = agent(request_presets=[{"name": "warm", "config": {"t": 1}}, {"name": "cold", "config": {"t": 2}}])
    r = DesiredResource(kind=r.kind, name=r.name, spec=r.spec, sources={
        "": Source("g.yaml", 1), "config.request_presets": Source("g.yaml", 5),
        "config.request_presets.1": Source("g.yaml", 8), "config.request_presets.1.config": Source("g.yaml", 9)})
    plan = make_plan(manifests(r), live)
    assert [(c.path, c.source) for op in plan.operations for c in op.changes] == [
        ("config.request_presets.cold.config.t", "g.yaml:9")]


def test_model_names_in_another_order_are_no_change_and_the_next_field_still_compares() -> None:
    live = state(custom(["X-A"], model_names=["b", "a"]))
    plan = make_plan(manifests(llm("c", "CUSTOM", model_names=["a", "b"], is_default_models_enabled=False)), live)
    assert changes(plan) == [("config.is_default_models_enabled", True, False)]


def test_an_auth_of_another_mode_is_sent_even_when_the_parts_it_shares_are_equal() -> None:
    live = cloud_d({"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": "https://p.example"})
    want = {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://p.example"}
    op = only(make_plan(manifests(llm("d", "CLOUD_D", auth=want)), live))
    assert op.body["config"] == {"auth": want}


def test_an_auth_change_points_at_the_auth_line() -> None:
    r = llm("d", "CLOUD_D", auth=BEARER)
    r = DesiredResource(kind=r.kind, name=r.name, spec=r.spec, sources={"": Source("d.yaml", 1),
                                                                        "config.auth": Source("d.yaml", 4)})
    plan = make_plan(manifests(r), cloud_d({**BEARER_LIVE, "has_api_key": False}))
    assert {c.source for op in plan.operations for c in op.changes} == {"d.yaml:4"}


def test_empty_headers_clear_the_live_ones() -> None:
    plan = make_plan(manifests(llm("c", "CUSTOM", headers={})), state(custom(["X-A"])))
    assert only(plan).body["config"] == {"headers": None}
    assert changes(plan) == [("config.headers", {"X-A": SENSITIVE}, None)]


def test_a_resend_of_an_unchanged_auth_names_no_write_only_field() -> None:
    live = cloud_d({"auth_type": "DEFAULT", "role_arn": "arn:1", "external_id": None, "base_url": None})
    r = llm("d", "CLOUD_D", auth={"auth_type": "DEFAULT", "role_arn": "arn:1"}, is_default_models_enabled=False)
    op = only(make_plan(manifests(r), live, PlanOptions(since="main", resend=("Integration/d config.auth",))))
    assert (op.body["config"], op.note) == ({"is_default_models_enabled": False}, None)


def test_every_write_only_field_redeclared_is_named() -> None:
    live = state(custom(["X-A"], has_api_key=True))
    r = llm("c", "CUSTOM", api_key=key("K"), headers={"X-A": key("H")})
    op = only(make_plan(manifests(r), live, PlanOptions(
        since="main", resend=("Integration/c config.api_key", "Integration/c config.headers"))))
    assert op.note == "write-only config.api_key, config.headers: declaration changed since main"


def test_an_llm_declared_where_an_agent_of_that_name_lives_replaces_it() -> None:
    plan = make_plan(manifests(llm("g", is_function_calling_enabled=True)), live_agent(), PlanOptions(allow_replace=True))
    assert [(op.method, op.path, op.note) for op in plan.operations] == [
        ("DELETE", "/v2/integrations/G1", "replace: type AGENT -> LLM"), ("POST", "/v2/integrations", None)]


def test_every_new_integration_is_created() -> None:
    plan = make_plan(manifests(llm("a", api_key=key()), llm("b", api_key=key()), llm("c", api_key=key())), state())
    assert [(op.method, op.name) for op in plan.operations] == [("POST", "a"), ("POST", "b"), ("POST", "c")]


def test_a_replacement_does_not_stop_the_integrations_after_it() -> None:
    live = state(live_llm("a", id="I1", **SYNCED), live_llm("b", id="I2", **SYNCED))
    plan = make_plan(manifests(llm("a", "VENDOR_B", api_key=key()), llm("b", is_function_calling_enabled=False)),
                     live, PlanOptions(allow_replace=True))
    assert [(op.method, op.name) for op in plan.operations] == [("DELETE", "a"), ("POST", "a"), ("PATCH", "b")]
