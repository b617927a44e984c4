"""What live state says about each declared field (reconciler/plan/liveview.py), as the two users of it
show it: ``plan`` under ``ignore_changes`` leaves the field as live and lists it (``Plan.ignored``: path,
live value, declared value), and ``pull`` writes the live value back into the manifest or, for what it
cannot read (write-only secrets and headers, a replacement), prints a line of not written. Each edit is
(path, declared, live); ``ABSENT``: live has no such field (pull removes it from the manifest)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from reconciler.fieldkinds import ABSENT
from reconciler.model import (
    DatasetObject,
    DesiredResource,
    EvaluatorObject,
    EvaluatorVersionObject,
    LiveDataset,
    LiveEvaluator,
    LivePrompt,
    LiveState,
    PromptObject,
    PromptVersionObject,
    SecretRef,
)
from reconciler.plan.liveview import ExamplesEdit
from reconciler.plan.planner import make_plan
from reconciler.plan.registry import resource_diff
from reconciler.plan.render import render_json
from tests.plan.helpers import DEFAULT, RESEARCH, key, live_llm, llm, manifests, res, state
from tests.plan.test_kinds_plan import LIVE_VERSION, VERSION

ORG = "T3JnOjE"
Edit = tuple[str, Any, Any]


def edits(r: DesiredResource, live: LiveState) -> list[Edit]:
    diff = resource_diff(r, live)
    assert not diff.notes, diff.notes
    return [(e.path, e.old, e.new) for e in diff.edits]


def notes(r: DesiredResource, live: LiveState) -> list[str]:
    return resource_diff(r, live).notes


def ignored(r: DesiredResource, live: LiveState) -> list[tuple[str, Any, Any]]:
    """What plan lists as left live when every field is ignored: (path, live, declared); it sends nothing."""
    plan = make_plan(manifests(replace(r, ignore_changes=("*",))), live)
    assert plan.operations == ()
    return [(i["path"], i["before"], i["after"]) for i in json.loads(render_json(plan))["ignored"]]


# ---------------------------------------------------------------------- presence


def test_a_resource_not_live_is_missing_and_one_live_under_an_alias_is_renamed() -> None:
    a = replace(llm("a", api_key=key()), aliases=("old-a",))
    assert (resource_diff(a, state()).missing, resource_diff(a, state()).renamed) == (True, False)
    live = state(live_llm("old-a", has_api_key=True))
    assert (resource_diff(a, live).missing, resource_diff(a, live).renamed) == (False, True)
    assert not resource_diff(a, live)
    assert resource_diff(a, state())  # missing is a difference
    p = replace(res("Prompt", "p", "research", version=VERSION), aliases=("old",))
    live = state()
    assert (resource_diff(p, live).missing, resource_diff(p, live).renamed) == (True, False)
    live.prompts[(RESEARCH, "old")] = LivePrompt(prompt=PromptObject.read({"id": "P", "name": "old", "space_id": RESEARCH}))
    assert (resource_diff(p, live).missing, resource_diff(p, live).renamed) == (False, True)
    live.prompts[(DEFAULT, "p")] = LivePrompt(prompt=PromptObject.read({"id": "Q", "name": "p", "space_id": DEFAULT}))
    assert resource_diff(replace(p, aliases=()), live).missing  # the same name in another space is not it


def test_a_space_that_does_not_exist_live_is_a_note_not_a_missing_resource() -> None:
    d = res("Dataset", "d", "nowhere", examples=[{"q": 1}])
    diff = resource_diff(d, state())
    assert (diff.missing, diff.renamed, diff.notes) == (
        False, False, ["Dataset/nowhere/d: space 'nowhere' does not exist live"])
    assert diff


def test_a_restriction_is_missing_until_one_for_its_resource_exists_live() -> None:
    from tests.plan.test_pins import restriction

    r = res("ResourceRestriction", "dash", resource_type="DASHBOARD", resource_id="RGFzaDox")
    live = state()
    live.restrictions[("PROJECT", "UHJvajo5")] = restriction("PROJECT", "UHJvajo5")
    assert resource_diff(r, live).missing
    live.restrictions[("DASHBOARD", "RGFzaDox")] = restriction("DASHBOARD", "RGFzaDox")
    diff = resource_diff(r, live)
    assert not diff.missing and not diff


# ---------------------------------------------------------------------- integrations


AGENT = {"id": "QUc6MQ", "type": "AGENT", "name": "agent", "description": "live words", "scopings": [],
         "config": {"endpoint": "https://live.example/run", "has_headers": False, "input_schema": {"type": "object"},
                    "request_presets": []}}


def agent(**config: Any) -> DesiredResource:
    top = {k: config.pop(k) for k in ("description", "scopings") if k in config}
    return res("Integration", "agent", type="AGENT", **top, config={"endpoint": "https://live.example/run", **config})


def test_an_agent_description_and_endpoint_edited_live_are_pulled_and_ignored() -> None:
    r = agent(description="declared", endpoint="https://declared.example/run")
    assert edits(r, state(AGENT)) == [("description", "declared", "live words"),
                                      ("config.endpoint", "https://declared.example/run", "https://live.example/run")]
    assert ignored(r, state(AGENT)) == [
        ("description", "live words", "declared"),
        ("config.endpoint", "https://live.example/run", "https://declared.example/run")]
    assert edits(agent(description="live words"), state(AGENT)) == []
    assert edits(agent(), state(AGENT)) == []  # no description declared: not compared


def test_a_field_live_does_not_have_is_absent_and_an_object_is_compared_whole() -> None:
    live = state({**AGENT, "config": {"has_headers": False}})
    assert edits(agent(input_schema={"type": "object"}), live) == [
        ("config.endpoint", "https://live.example/run", ABSENT), ("config.input_schema", {"type": "object"}, ABSENT)]
    assert edits(agent(input_schema={"type": "array"}), state(AGENT)) == [
        ("config.input_schema", {"type": "array"}, {"type": "object"})]


def test_agent_headers_are_write_only_only_their_presence_is_told() -> None:
    assert notes(agent(headers={"X": key("T")}), state(AGENT)) == [
        "Integration/agent: config.headers is write-only: live has none (not written)"]
    with_headers = state({**AGENT, "config": {**AGENT["config"], "has_headers": True}})
    assert notes(agent(), with_headers) == []  # not declared: not compared
    assert notes(agent(headers={}), with_headers) == [
        "Integration/agent: config.headers is write-only: live has headers (not written)"]
    assert notes(agent(headers={"X": key("T")}), with_headers) == []
    assert notes(agent(headers={}), state(AGENT)) == []


def test_presets_come_back_in_declared_order_with_live_ones_appended() -> None:
    live = state({**AGENT, "config": {**AGENT["config"], "request_presets": [
        {"name": "hot", "description": "h", "config": {"t": 9}},
        {"name": "cold", "description": "live", "config": {"t": 2}},
        {"name": "warm", "description": None, "config": {"t": 1}}]}})
    declared = [{"name": "warm", "config": {"t": 1}}, {"name": "cold", "description": "c", "config": {"t": 1}},
                {"name": "gone", "config": {}}]
    assert edits(agent(request_presets=declared), live) == [("config.request_presets", declared, [
        {"name": "warm", "config": {"t": 1}},
        {"name": "cold", "description": "live", "config": {"t": 2}},
        {"name": "hot", "description": "h", "config": {"t": 9}}])]


def test_presets_equal_live_are_no_edit_and_each_kind_of_difference_is_one() -> None:
    live = state({**AGENT, "config": {**AGENT["config"], "request_presets": [
        {"name": "cold", "description": "d", "config": {"t": 1}}]}})
    same = [{"name": "cold", "description": "d", "config": {"t": 1}}]
    assert edits(agent(request_presets=same), live) == []
    assert edits(agent(request_presets=[{"name": "cold", "config": {"t": 1}}]), live) == []  # no description declared
    assert edits(agent(request_presets=[{"name": "cold", "description": "x", "config": {"t": 1}}]), live) == [
        ("config.request_presets", [{"name": "cold", "description": "x", "config": {"t": 1}}], same)]
    assert edits(agent(request_presets=[{"name": "cold", "description": "d", "config": {"t": 2}}]), live) == [
        ("config.request_presets", [{"name": "cold", "description": "d", "config": {"t": 2}}], same)]
    assert edits(agent(request_presets=[{"name": "cold", "description": "d"}]), live) == [
        ("config.request_presets", [{"name": "cold", "description": "d"}], same)]
    assert edits(agent(request_presets=[]), live) == [("config.request_presets", [], same)]
    assert edits(agent(request_presets=same + [{"name": "new", "config": {}}]), live) == [
        ("config.request_presets", same + [{"name": "new", "config": {}}], same)]
    no_description = state({**AGENT, "config": {**AGENT["config"], "request_presets": [
        {"name": "cold", "description": None, "config": {"t": 1}}]}})
    assert edits(agent(request_presets=[]), no_description) == [
        ("config.request_presets", [], [{"name": "cold", "config": {"t": 1}}])]
    assert edits(agent(request_presets=[]), state({**AGENT, "config": {"endpoint": "https://live.example/run"}})) == []


def test_scopings_by_space_name_come_back_by_name_and_by_id_by_id() -> None:
    def with_scopings(*scopings: dict[str, Any]) -> LiveState:
        return state({**AGENT, "scopings": list(scopings)})

    research = {"organization_id": ORG, "space_id": RESEARCH}
    default = {"organization_id": ORG, "space_id": DEFAULT}
    assert edits(agent(scopings=[{"space": "research"}]), with_scopings(research)) == []
    assert edits(agent(scopings=[research]), with_scopings(research)) == []
    assert edits(agent(scopings=[{"space": "research"}]), with_scopings(default, research)) == [
        ("scopings", [{"space": "research"}], [{"space": "default"}, {"space": "research"}])]
    assert edits(agent(scopings=[research]), with_scopings(default)) == [("scopings", [research], [default])]
    assert edits(agent(scopings=[]), with_scopings(default)) == [("scopings", [], [{"space": "default"}])]
    assert edits(agent(scopings=[{"space": "research"}]), with_scopings()) == [("scopings", [{"space": "research"}],
                                                                               [])]
    stranger = {"organization_id": ORG, "space_id": "U3BhY2U6OQ"}  # a space the key cannot see
    other_org = {"organization_id": "T3JnOjI", "space_id": DEFAULT}
    assert edits(agent(scopings=[{"space": "research"}]), with_scopings(stranger, other_org)) == [
        ("scopings", [{"space": "research"}], [stranger, other_org])]
    assert edits(agent(scopings=[research, {"space": "default"}]), with_scopings(default)) == [
        ("scopings", [research, {"space": "default"}], [default])]  # written by id too: comes back by id
    assert edits(agent(scopings=[{"space": "nowhere"}]), with_scopings(default)) == []  # the planner reports it
    assert edits(agent(), with_scopings(default)) == []  # not declared: not compared
    org_only = {"organization_id": ORG}
    assert edits(agent(scopings=[org_only]), with_scopings(org_only)) == []
    assert edits(agent(scopings=[org_only]), with_scopings(default)) == [("scopings", [org_only], [default])]


def test_an_llm_whose_provider_changed_live_is_a_replacement_nothing_is_pulled() -> None:
    r = llm("a", api_key=key(), is_function_calling_enabled=True)
    live = state(live_llm("a", provider="VENDOR_C", has_api_key=True, is_function_calling_enabled=False))
    assert notes(r, live) == ["Integration/a: config.provider is VENDOR_C live (a replacement; not pulled)"]
    assert resource_diff(r, live).edits == []
    assert edits(r, state(live_llm("a", has_api_key=True, is_function_calling_enabled=False))) == [
        ("config.is_function_calling_enabled", True, False)]


def test_an_api_key_is_write_only_only_its_presence_is_told() -> None:
    assert notes(llm("a", api_key=key()), state(live_llm("a", has_api_key=False))) == [
        "Integration/a: config.api_key is write-only: live has none (not written; plan sends it)"]
    assert notes(llm("a", api_key=key()), state(live_llm("a"))) == [
        "Integration/a: config.api_key is write-only: live has none (not written; plan sends it)"]
    assert notes(llm("a", api_key=None), state(live_llm("a", has_api_key=True))) == [
        "Integration/a: config.api_key is write-only: live has one (not written)"]
    assert notes(llm("a", api_key=key()), state(live_llm("a", has_api_key=True))) == []
    assert notes(llm("a", api_key=None), state(live_llm("a", has_api_key=False))) == []


def custom(**config: Any) -> DesiredResource:
    return llm("c", provider="CUSTOM", **{"base_url": "https://c.example", **config})


def live_custom(**config: Any) -> LiveState:
    return state(live_llm("c", provider="CUSTOM", base_url="https://c.example", **config))


def test_custom_header_names_are_compared_values_cannot_be() -> None:
    headers = {"B": key("B"), "A": SecretRef("file", "/a")}
    assert notes(custom(headers=headers), live_custom(header_names=["A", "B"])) == []
    assert notes(custom(headers=headers), live_custom(header_names=["C", "A"])) == [
        "Integration/c: config.headers is write-only: the live header names are ['A', 'C'] (values cannot be "
        "read; not written)"]
    assert notes(custom(headers=headers), live_custom()) == [
        "Integration/c: config.headers is write-only: the live header names are [] (values cannot be read; not "
        "written)"]
    assert notes(custom(headers=None), live_custom(header_names=["A"])) == [
        "Integration/c: config.headers is write-only: the live header names are ['A'] (values cannot be read; not "
        "written)"]
    assert notes(custom(headers=None), live_custom(header_names=None)) == []


def test_model_names_are_a_set_and_other_fields_compare_by_value() -> None:
    assert edits(custom(model_names=["b", "a"]), live_custom(model_names=["a", "b"])) == []
    assert edits(custom(model_names=["a", "c"]), live_custom(model_names=["a", "b"])) == [
        ("config.model_names", ["a", "c"], ["a", "b"])]
    assert edits(custom(model_names=["a"]), live_custom(model_names=["a", "a"])) == [
        ("config.model_names", ["a"], ["a", "a"])]
    assert edits(custom(model_names=["a"]), live_custom()) == [("config.model_names", ["a"], ABSENT)]
    assert edits(custom(model_names=["a"]), live_custom(model_names="a")) == [("config.model_names", ["a"], "a")]
    assert edits(custom(base_url="https://x.example"), live_custom()) == [
        ("config.base_url", "https://x.example", "https://c.example")]
    assert edits(custom(is_default_models_enabled=False), live_custom(is_default_models_enabled=True)) == [
        ("config.is_default_models_enabled", False, True)]


def cloud(**auth: Any) -> DesiredResource:
    return llm("d", provider="CLOUD_D", auth=auth)


def live_cloud(**auth: Any) -> LiveState:
    return state(live_llm("d", provider="CLOUD_D", auth=auth))


def test_auth_fields_that_can_be_read_are_pulled_a_changed_auth_type_is_not() -> None:
    r = cloud(auth_type="DEFAULT", role_arn="arn:declared", base_url="https://d.example")
    assert edits(r, live_cloud(auth_type="DEFAULT", role_arn="arn:live", external_id="ext")) == [
        ("config.auth.role_arn", "arn:declared", "arn:live"), ("config.auth.external_id", ABSENT, "ext"),
        ("config.auth.base_url", "https://d.example", None)]
    assert edits(r, live_cloud(auth_type="DEFAULT", role_arn="arn:declared", base_url="https://d.example")) == []
    assert edits(cloud(auth_type="DEFAULT"), live_cloud(auth_type="DEFAULT", role_arn=None)) == []
    assert notes(r, live_cloud(auth_type="BEARER_TOKEN", base_url="https://d.example")) == [
        "Integration/d: config.auth.auth_type is BEARER_TOKEN live; its secrets cannot be read, so the auth is not "
        "written"]
    assert notes(cloud(auth_type="NOPE"), live_cloud(auth_type="NOPE")) == [
        "Integration/d: config.auth.auth_type is NOPE live; its secrets cannot be read, so the auth is not written"]
    assert notes(r, state(live_llm("d", provider="CLOUD_D"))) == [
        "Integration/d: config.auth.auth_type is None live; its secrets cannot be read, so the auth is not written"]


def test_write_only_auth_fields_are_never_written_and_a_difference_the_plan_sees_is_a_note() -> None:
    r = cloud(auth_type="BEARER_TOKEN", api_key=key("T"), base_url="https://d.example")
    assert edits(r, live_cloud(auth_type="BEARER_TOKEN", base_url="https://d.example", has_api_key=True)) == []
    assert edits(r, live_cloud(auth_type="BEARER_TOKEN", base_url="https://e.example", has_api_key=True)) == [
        ("config.auth.base_url", "https://d.example", "https://e.example")]
    assert notes(r, live_cloud(auth_type="BEARER_TOKEN", base_url="https://d.example")) == [
        "Integration/d: config.auth.api_key is write-only: live has none (not written; plan sends it)"]
    proxy = cloud(auth_type="PROXY_WITH_HEADERS", base_url="https://d.example")
    assert notes(proxy, live_cloud(auth_type="PROXY_WITH_HEADERS", base_url="https://d.example",
                                   header_names=["X-A"])) == [
        "Integration/d: config.auth.headers is write-only: the live header names are ['X-A'] (values cannot be "
        "read; not written)"]
    named = cloud(auth_type="PROXY_WITH_HEADERS", base_url="https://d.example", headers={"X-A": key("H")})
    assert notes(named, live_cloud(auth_type="PROXY_WITH_HEADERS", base_url="https://d.example",
                                   header_names=["X-A"])) == []  # the names live has are the declared ones


# ---------------------------------------------------------------------- prompts


def prompt_live(restricted: bool = False, latest: bool = True, **version: Any) -> LiveState:
    live = state()
    v = {**LIVE_VERSION, **version}
    live.prompts[(RESEARCH, "p")] = LivePrompt(
        prompt=PromptObject.read({"id": "UHI6MQ", "name": "p", "description": "live words", "space_id": RESEARCH}),
        latest=PromptVersionObject.read(v) if latest else None, labels={lab: v["id"] for lab in v["labels"]})
    if restricted:
        from tests.plan.test_pins import restriction

        live.restrictions[("PROMPT", "UHI6MQ")] = restriction("PROMPT", "UHI6MQ")
    return live


def prompt(**spec: Any) -> DesiredResource:
    version = {**VERSION, **spec.pop("version", {})}
    return res("Prompt", "p", "research", version=version, **spec)


def test_a_prompt_in_sync_has_no_edit() -> None:
    assert edits(prompt(description="live words", restricted=False, version={"labels": ["production"]}),
                 prompt_live()) == []
    assert edits(prompt(restricted=True), prompt_live(restricted=True)) == []


def test_a_prompts_description_and_restriction_edited_live() -> None:
    assert edits(prompt(description="declared", restricted=True), prompt_live()) == [
        ("description", "declared", "live words"), ("restricted", True, False)]
    assert edits(prompt(restricted=False), prompt_live(restricted=True)) == [("restricted", False, True)]
    assert edits(prompt(), prompt_live(restricted=True)) == []  # not declared: not compared


def test_version_fields_are_compared_with_the_latest_version() -> None:
    assert edits(prompt(version={"model": "m2", "commit_message": "v2"}), prompt_live()) == [
        ("version.model", "m2", "m"), ("version.commit_message", "v2", "v1")]
    assert edits(prompt(version={"messages": [{"role": "user", "content": "x"}]}), prompt_live()) == [
        ("version.messages", [{"role": "user", "content": "x"}], [{"role": "user", "content": "{q}"}])]
    assert edits(prompt(version={"invocation_params": {"t": 1}}), prompt_live(invocation_params=None)) == [
        ("version.invocation_params", {"t": 1}, {})]
    assert edits(prompt(version={"provider_params": {"t": 1}}), prompt_live(provider_params=None)) == [
        ("version.provider_params", {"t": 1}, {})]
    assert edits(prompt(version={"invocation_params": {}}), prompt_live(invocation_params=None)) == []
    assert edits(prompt(version={"input_variable_format": "mustache"}), prompt_live(input_variable_format=None)) == [
        ("version.input_variable_format", "mustache", ABSENT)]
    assert edits(prompt(version={"provider": "VENDOR_B"}), prompt_live()) == [
        ("version.provider", "VENDOR_B", "VENDOR_A")]


def test_a_version_message_follows_only_a_changed_version_and_a_live_message() -> None:
    assert edits(prompt(version={"commit_message": "v2"}), prompt_live()) == []
    assert edits(prompt(version={"model": "m2", "commit_message": "v2"}), prompt_live(commit_message=None)) == [
        ("version.model", "m2", "m")]
    assert edits(prompt(version={"model": "m2", "commit_message": "v1"}), prompt_live()) == [
        ("version.model", "m2", "m")]
    no_message = {k: v for k, v in VERSION.items() if k != "commit_message"}
    r = res("Prompt", "p", "research", version={**no_message, "model": "m2"})
    assert edits(r, prompt_live()) == [("version.model", "m2", "m")]


def test_labels_declared_must_be_on_the_latest_version() -> None:
    assert edits(prompt(version={"labels": ["production", "staging"]}), prompt_live()) == [
        ("version.labels", ["production", "staging"], ["production"])]
    assert edits(prompt(version={"labels": []}), prompt_live()) == []
    assert edits(prompt(version={"labels": ["production"]}), prompt_live(labels=["production", "x"])) == []


def test_a_prompt_with_no_version_live_compares_only_its_own_fields() -> None:
    assert edits(prompt(description="declared", version={"model": "m2", "labels": ["x"]}), prompt_live(latest=False)) \
        == [("description", "declared", "live words")]


# ---------------------------------------------------------------------- datasets


def dataset_live(examples: list[dict[str, Any]] | None, matched: set[Any] | None = None) -> LiveState:
    live = state()
    live.datasets[(RESEARCH, "d")] = LiveDataset(dataset=DatasetObject.read({"id": "RDox", "name": "d", "space_id": RESEARCH}),
                                                 examples=examples, matched=matched)
    return live


def examples_edit(r: DesiredResource, live: LiveState) -> ExamplesEdit | None:
    return resource_diff(r, live).examples


def stamped(i: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"E{i}", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z", **fields}


def test_keyed_examples_edited_removed_and_added_live() -> None:
    declared = [{"k": 1, "q": "a"}, {"k": 2, "q": "b"}, {"k": 3, "q": "c"}, {"k": 5, "q": "e"}]
    r = res("Dataset", "d", "research", key="k", examples=declared)
    live = dataset_live([stamped(1, k=1, q="a"), stamped(2, k=2, q="B"), stamped(4, k=4, q="d")], matched={5})
    edit = examples_edit(r, live)
    assert edit is not None
    assert (edit.replace, edit.delete, edit.append) == ({1: {"k": 2, "q": "B"}}, [2], [{"k": 4, "q": "d"}])
    assert edit.count() == 3 and bool(edit)
    assert edit.applied(declared) == [{"k": 1, "q": "a"}, {"k": 2, "q": "B"}, {"k": 5, "q": "e"}, {"k": 4, "q": "d"}]
    assert ignored(r, live) == [("examples", "3 examples differ", None)]


def test_keyed_examples_in_sync_or_not_read_are_no_edit() -> None:
    r = res("Dataset", "d", "research", key="k", examples=[{"k": 1, "q": "a"}])
    assert examples_edit(r, dataset_live([stamped(1, k=1, q="a")])) is None
    assert examples_edit(r, dataset_live([], matched={1})) is None
    assert examples_edit(r, dataset_live(None)) is None
    assert examples_edit(res("Dataset", "d", "research", key="k"), dataset_live([stamped(1, k=1)])) is None
    assert examples_edit(r, dataset_live([stamped(1, q="a")])).applied([{"k": 1, "q": "a"}]) == [{"q": "a"}]


def test_examples_without_a_key_are_matched_by_content() -> None:
    declared = [{"q": 1}, {"q": 2}, {"q": 2}, {"q": 3}]
    r = res("Dataset", "d", "research", examples=declared)
    edit = examples_edit(r, dataset_live([stamped(1, q=2), stamped(2, q=1), stamped(3, q=4), stamped(4, q=4)]))
    assert edit is not None
    assert (edit.replace, sorted(edit.delete), edit.append) == ({}, [2, 3], [{"q": 4}, {"q": 4}])
    assert edit.count() == 4
    assert edit.applied(declared) == [{"q": 1}, {"q": 2}, {"q": 4}, {"q": 4}]
    assert examples_edit(r, dataset_live([stamped(i, q=q) for i, q in enumerate([3, 2, 1, 2])])) is None


def test_an_empty_examples_edit_is_no_difference() -> None:
    edit = ExamplesEdit()
    assert not edit and edit.count() == 0 and edit.applied([{"q": 1}]) == [{"q": 1}]
    assert ExamplesEdit(delete=[0]) and ExamplesEdit(append=[{}]) and ExamplesEdit(replace={0: {}})
    assert ExamplesEdit(replace={0: {"q": 9}}, delete=[1]).applied([{"q": 1}, {"q": 2}, {"q": 3}]) == [
        {"q": 9}, {"q": 3}]


# ---------------------------------------------------------------------- evaluators


TC = {"name": "f", "template": "t", "llm_config": {"integration": "judge", "model_name": "m"}}


def evaluator_live(tc: dict[str, Any] | None, message: str | None = "live message",
                   description: str | None = "live words") -> LiveState:
    live = state(live_llm("judge", id="SW50OjE", has_api_key=True), live_llm("other", id="SW50OjI"),
                 {**AGENT, "id": "SW50OjM"})
    latest = None if tc is None else {"id": "RVY6MQ", "template_config": tc, "commit_message": message}
    live.evaluators[(RESEARCH, "ev")] = LiveEvaluator(
        evaluator=EvaluatorObject.read({"id": "RXY6MQ", "name": "ev", "description": description}),
        latest=None if latest is None else EvaluatorVersionObject.read(latest))
    return live


def live_tc(**llm_config: Any) -> dict[str, Any]:
    return {"name": "f", "template": "t", "llm_config": {"ai_integration_id": "SW50OjE", "model_name": "m",
                                                         **llm_config}}


def evaluator(tc: dict[str, Any] = TC, **spec: Any) -> DesiredResource:
    return res("Evaluator", "ev", "research", **{"commit_message": "declared message", **spec}, template_config=tc)


def test_an_evaluator_in_sync_has_no_edit() -> None:
    assert edits(evaluator(description="live words"), evaluator_live(live_tc())) == []


def test_an_evaluator_description_and_template_edited_live() -> None:
    assert edits(evaluator(description="declared"), evaluator_live(live_tc())) == [
        ("description", "declared", "live words")]
    assert edits(evaluator({**TC, "template": "declared"}), evaluator_live(live_tc())) == [
        ("template_config.template", "declared", "t"), ("commit_message", "declared message", "live message")]
    assert edits(evaluator({**TC, "direction": "maximize"}), evaluator_live(live_tc())) == [
        ("template_config.direction", "maximize", ABSENT), ("commit_message", "declared message", "live message")]


def test_the_model_of_an_evaluator_is_compared_inside_its_llm_config() -> None:
    assert edits(evaluator(), evaluator_live(live_tc(model_name="m2"))) == [
        ("template_config.llm_config.model_name", "m", "m2"), ("commit_message", "declared message", "live message")]
    assert edits(evaluator({**TC, "llm_config": {**TC["llm_config"], "invocation_parameters": {"t": 1}}}),
                 evaluator_live(live_tc())) == [("template_config.llm_config.invocation_parameters", {"t": 1}, ABSENT),
            ("commit_message", "declared message", "live message")]
    no_llm = {"name": "f", "template": "t"}
    assert edits(evaluator(), evaluator_live(no_llm)) == [
        ("template_config.llm_config.model_name", "m", ABSENT), ("commit_message", "declared message", "live message")]


def test_the_integration_an_evaluator_uses_is_pulled_by_name() -> None:
    assert edits(evaluator(), evaluator_live(live_tc(ai_integration_id="SW50OjI"))) == [
        ("template_config.llm_config.integration", "judge", "other"),
        ("commit_message", "declared message", "live message")]
    diff = resource_diff(evaluator(), evaluator_live(live_tc(ai_integration_id="SW50OjM")))  # an AGENT's id
    assert diff.notes == ["Evaluator/research/ev: template_config.llm_config.integration: live names integration id "
                          "SW50OjM, which no LLM integration has (not written)"]
    assert [(e.path, e.old, e.new) for e in diff.edits] == [("commit_message", "declared message", "live message")]
    assert edits(evaluator(), evaluator_live(live_tc(ai_integration_id=None))) == []


def test_an_evaluator_message_follows_only_a_changed_template_and_a_live_message() -> None:
    changed = evaluator({**TC, "template": "declared"})
    assert edits(changed, evaluator_live(live_tc(), message=None)) == [("template_config.template", "declared", "t")]
    assert edits(evaluator({**TC, "template": "declared"}, commit_message="live message"),
                 evaluator_live(live_tc())) == [("template_config.template", "declared", "t")]
    assert edits(evaluator(description="declared"), evaluator_live(live_tc())) == [
        ("description", "declared", "live words")]


def test_an_evaluator_with_no_version_live_has_every_template_field_absent() -> None:
    assert edits(evaluator(), evaluator_live(None)) == [
        ("template_config.name", "f", ABSENT), ("template_config.template", "t", ABSENT),
        ("template_config.llm_config.model_name", "m", ABSENT)]
    assert edits(evaluator(description="live words"), evaluator_live(None, description="live words")) != []
    assert edits(evaluator(), evaluator_live(None, description=None)) == edits(evaluator(), evaluator_live(None))


def test_a_declared_preset_live_lacks_does_not_stop_the_others_being_compared() -> None:
    live = state({**AGENT, "config": {**AGENT["config"], "request_presets": [
        {"name": "cold", "description": None, "config": {"t": 2}}]}})
    declared = [{"name": "gone", "config": {}}, {"name": "cold", "config": {"t": 1}}]
    assert edits(agent(request_presets=declared), live) == [
        ("config.request_presets", declared, [{"name": "cold", "config": {"t": 2}}])]


def test_a_preset_declared_without_config_matches_an_empty_live_config() -> None:
    live = state({**AGENT, "config": {**AGENT["config"], "request_presets": [
        {"name": "cold", "description": None, "config": {}}]}})
    assert edits(agent(request_presets=[{"name": "cold"}]), live) == []


def test_live_messages_come_back_as_role_and_content_only() -> None:
    live = prompt_live(messages=[{"role": "user", "content": "{q}!", "name": "n"}])
    assert edits(prompt(), live) == [
        ("version.messages", [{"role": "user", "content": "{q}"}], [{"role": "user", "content": "{q}!"}])]


def test_classification_choices_are_compared_as_one_field() -> None:
    tc = {**TC, "classification_choices": {"right": 1, "wrong": 0}}
    assert edits(evaluator(tc), evaluator_live({**live_tc(), "classification_choices": {"right": 1, "wrong": 0}})) == []
    assert edits(evaluator(tc), evaluator_live({**live_tc(), "classification_choices": {"right": 1}})) == [
        ("template_config.classification_choices", {"right": 1, "wrong": 0}, {"right": 1}),
        ("commit_message", "declared message", "live message")]
