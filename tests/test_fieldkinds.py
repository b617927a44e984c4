"""Each provider field kind behaves one way (``reconciler/fieldkinds.py``, registered once in
``providers.BEHAVIOURS``): how it compares, what a PATCH sends and a plan shows, what pull writes or
notes, what export writes, and how the emulator stores and reads it. No module outside the table
tells the kinds apart but those listed, with their reason."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.fieldkinds import ABSENT, OMIT, Field, Pulled, Verdict
from reconciler.model import SecretRef
from reconciler.providers import AGENT_FIELDS, AUTH_MODES, BEHAVIOURS, PROVIDERS, ConfigField, FieldKind

PACKAGE = Path(__file__).resolve().parents[1] / "reconciler"
#: Modules that still name a kind outside the table (``path: how many names``), each with its reason.
ALLOWED = {
    # the table itself, and the kind of each field it declares
    "providers.py": None,
    # the pydantic type of each kind (_FIELD_TYPES): the manifest models are above the providers
    # layer, so the table cannot hold them (providers would import manifests)
    "manifests/fields.py": 7,
}

CUSTOM = PROVIDERS["CUSTOM"].fields
AUTH = PROVIDERS["CLOUD_D"].fields["auth"]
KEY = SecretRef("env", "K1")
MASK = "(masked)"


def kind(f: ConfigField) -> Any:
    return f.behaviour


# ------------------------------------------------------------------ the table


def test_every_field_kind_has_one_behaviour_and_a_field_finds_its_own() -> None:
    assert set(BEHAVIOURS) == set(FieldKind)
    for f in [*CUSTOM.values(), *AGENT_FIELDS.values(), *(m for mode in AUTH_MODES.values() for m in mode.fields.values())]:
        assert f.behaviour is BEHAVIOURS[f.kind]
        assert f.write_only == (f.kind in (FieldKind.SECRET, FieldKind.HEADERS))
    assert all(b.docs for b in BEHAVIOURS.values())


def test_no_module_tells_the_field_kinds_apart_outside_the_table() -> None:
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        count = len(re.findall(r"FieldKind\.[A-Z]", path.read_text()))
        if count:
            found[path.relative_to(PACKAGE).as_posix()] = count
    assert {p: (None if ALLOWED.get(p, 0) is None else n) for p, n in found.items()} == ALLOWED


# ------------------------------------------------------------------ compare


def test_plain_values_compare_by_equality_and_a_missing_one_as_null() -> None:
    f = CUSTOM["base_url"]
    assert kind(f).compare(f, "https://a", {"base_url": "https://a"}) is Verdict.SAME
    assert kind(f).compare(f, "https://a", {"base_url": "https://b"}) is Verdict.DIFFERS
    assert kind(f).compare(f, None, {}) is Verdict.SAME


def test_a_list_of_names_compares_as_a_set() -> None:
    f = CUSTOM["model_names"]
    assert kind(f).compare(f, ["b", "a"], {"model_names": ["a", "b"]}) is Verdict.SAME
    assert kind(f).compare(f, ["a"], {"model_names": ["a", "b"]}) is Verdict.DIFFERS


def test_a_secret_compares_by_presence_and_is_hidden_when_declared_and_present() -> None:
    f = CUSTOM["api_key"]
    assert kind(f).compare(f, KEY, {"has_api_key": True}) is Verdict.HIDDEN
    assert kind(f).compare(f, KEY, {"has_api_key": False}) is Verdict.DIFFERS
    assert kind(f).compare(f, None, {"has_api_key": True}) is Verdict.DIFFERS
    assert kind(f).compare(f, None, {"has_api_key": False}) is Verdict.SAME
    assert kind(f).hidden(f) == ""


def test_headers_compare_by_name_and_an_agents_by_presence() -> None:
    f, agent = CUSTOM["headers"], AGENT_FIELDS["headers"]
    assert kind(f).compare(f, {"X-A": KEY}, {"header_names": ["X-A"]}) is Verdict.HIDDEN
    assert kind(f).compare(f, {"X-A": KEY}, {"header_names": ["X-B"]}) is Verdict.DIFFERS
    assert kind(f).compare(f, {}, {"header_names": []}) is Verdict.SAME
    assert kind(f).hidden(f) == "values"
    assert kind(agent).compare(agent, {"X-A": KEY}, {"has_headers": True}) is Verdict.HIDDEN
    assert kind(agent).compare(agent, None, {"has_headers": True}) is Verdict.DIFFERS
    assert kind(agent).compare(agent, {"X-A": KEY}, {"has_headers": False}) is Verdict.DIFFERS
    assert kind(agent).hidden(agent) == "values; only presence is visible"


def test_an_auth_differs_when_its_type_or_a_member_does_and_is_hidden_by_its_secrets() -> None:
    bearer = {"auth": {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None}}
    assert kind(AUTH).compare(AUTH, {"auth_type": "BEARER_TOKEN", "api_key": KEY}, bearer) is Verdict.HIDDEN
    assert kind(AUTH).compare(AUTH, {"auth_type": "BEARER_TOKEN", "api_key": KEY, "base_url": "https://b"},
                              bearer) is Verdict.DIFFERS
    assert kind(AUTH).compare(AUTH, {"auth_type": "DEFAULT", "role_arn": "r"}, bearer) is Verdict.DIFFERS
    default = {"auth": {"auth_type": "DEFAULT", "role_arn": "r", "external_id": None, "base_url": None}}
    assert kind(AUTH).compare(AUTH, {"auth_type": "DEFAULT", "role_arn": "r"}, default) is Verdict.SAME
    assert kind(AUTH).hidden(AUTH) == "secret values"


def test_presets_compare_by_name_and_an_omitted_description_is_sent_back_as_live_has_it() -> None:
    f = AGENT_FIELDS["request_presets"]
    live = {"request_presets": [{"id": "1", "name": "cold", "description": "d", "config": {"t": 0}}]}
    assert kind(f).compare(f, [{"name": "cold", "config": {"t": 0}}], live) is Verdict.SAME
    want = [{"name": "cold", "config": {"t": 1}}, {"name": "warm", "config": {}}]
    assert kind(f).compare(f, want, live) is Verdict.DIFFERS
    assert kind(f).body(f, want, live) == [{"name": "cold", "description": "d", "config": {"t": 1}},
                                           {"name": "warm", "config": {}}]


# ------------------------------------------------------------------ what a plan sends and shows


def test_headers_declared_empty_are_sent_as_null() -> None:
    f = CUSTOM["headers"]
    assert kind(f).body(f, {}, {"header_names": ["X-A"]}) is None


def test_the_live_value_a_plan_shows_masks_what_cannot_be_read() -> None:
    live = {"has_api_key": True, "header_names": ["X-B", "X-A"], "base_url": "https://a"}
    assert kind(CUSTOM["api_key"]).before(CUSTOM["api_key"], live, MASK) == MASK
    assert kind(CUSTOM["headers"]).before(CUSTOM["headers"], live, MASK) == {"X-A": MASK, "X-B": MASK}
    assert kind(CUSTOM["headers"]).before(CUSTOM["headers"], {"header_names": []}, MASK) is None
    assert kind(CUSTOM["base_url"]).before(CUSTOM["base_url"], live, MASK) == "https://a"
    auth = {"auth": {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://p", "header_names": []}}
    assert kind(AUTH).before(AUTH, auth, MASK) == {"auth_type": "PROXY_WITH_HEADERS", "base_url": "https://p",
                                                   "headers": {}}


def test_presets_are_shown_by_name() -> None:
    f = AGENT_FIELDS["request_presets"]
    assert kind(f).view([{"name": "cold", "config": {"t": 0}}]) == {"cold": {"description": None, "config": {"t": 0}}}
    assert kind(f).indexes([{"name": "cold"}, {"name": "warm"}]) == {"cold": 0, "warm": 1}


# ------------------------------------------------------------------ pull


def test_pull_writes_the_live_value_and_removes_one_live_lacks() -> None:
    f = CUSTOM["base_url"]
    assert kind(f).pulled(f, "https://a", {"base_url": "https://b"}) == Pulled(edits=(("", "https://a", "https://b"),))
    assert kind(f).pulled(f, "https://a", {}) == Pulled(edits=(("", "https://a", ABSENT),))
    assert kind(f).pulled(f, "https://a", {"base_url": "https://a"}) == Pulled()


def test_pull_notes_a_write_only_difference_and_writes_nothing() -> None:
    key, headers = CUSTOM["api_key"], CUSTOM["headers"]
    assert kind(key).pulled(key, KEY, {"has_api_key": False}) == Pulled(
        notes=(" is write-only: live has none (not written; plan sends it)",))
    assert kind(key).pulled(key, None, {"has_api_key": True}) == Pulled(notes=(" is write-only: live has one (not written)",))
    assert kind(headers).pulled(headers, {"X-A": KEY}, {"header_names": ["X-B"]}) == Pulled(
        notes=(" is write-only: the live header names are ['X-B'] (values cannot be read; not written)",))
    agent = AGENT_FIELDS["headers"]
    assert kind(agent).pulled(agent, None, {"has_headers": True}) == Pulled(
        notes=(" is write-only: live has headers (not written)",))


def test_pull_writes_an_auths_readable_members_and_a_member_live_lacks_as_null() -> None:
    want = {"auth_type": "DEFAULT", "role_arn": "arn:declared", "base_url": "https://d"}
    live = {"auth": {"auth_type": "DEFAULT", "role_arn": "arn:live", "external_id": "ext"}}
    assert kind(AUTH).pulled(AUTH, want, live) == Pulled(edits=(
        (".role_arn", "arn:declared", "arn:live"), (".external_id", ABSENT, "ext"), (".base_url", "https://d", None)))


def test_pull_does_not_write_an_auth_of_another_type() -> None:
    live = {"auth": {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None}}
    assert kind(AUTH).pulled(AUTH, {"auth_type": "DEFAULT", "role_arn": "r"}, live) == Pulled(notes=(
        ".auth_type is BEARER_TOKEN live; its secrets cannot be read, so the auth is not written",))


def test_pull_keeps_the_declared_order_of_presets_and_appends_those_only_live_has() -> None:
    f = AGENT_FIELDS["request_presets"]
    live = {"request_presets": [{"name": "warm", "description": None, "config": {"t": 1}},
                                {"name": "cold", "description": "c", "config": {"t": 0}}]}
    pulled = kind(f).pulled(f, [{"name": "cold", "config": {"t": 5}}], live)
    assert pulled.edits[0][2] == [{"name": "cold", "config": {"t": 0}}, {"name": "warm", "config": {"t": 1}}]


# ------------------------------------------------------------------ export


class Names:
    """Export's side, recorded: which secrets and headers it was asked to name."""

    def __init__(self, prefix: tuple[str, ...] = (), asked: list[str] | None = None) -> None:
        self.prefix, self.asked = prefix, asked if asked is not None else []

    def secret(self, present: bool, f: Field) -> Any:
        self.asked.append(".".join((*self.prefix, f.name)))
        return {"env": f.name.upper()} if present else None

    def headers(self, names: list[str], f: Field) -> dict[str, Any]:
        return {n: {"env": n} for n in names}

    def unreadable(self, f: Field) -> None:
        self.asked.append(f"unreadable {f.name}")

    def inside(self, f: Field) -> Names:
        return Names((*self.prefix, f.name), self.asked)


def test_export_writes_a_reference_per_secret_and_header_and_leaves_an_agents_headers_unmanaged() -> None:
    names = Names()
    assert kind(CUSTOM["api_key"]).exported(CUSTOM["api_key"], {"has_api_key": True}, names) == {"env": "API_KEY"}
    assert kind(CUSTOM["api_key"]).exported(CUSTOM["api_key"], {"has_api_key": False}, names) is None
    assert kind(CUSTOM["headers"]).exported(CUSTOM["headers"], {"header_names": ["X-A"]}, names) == {"X-A": {"env": "X-A"}}
    assert kind(AGENT_FIELDS["headers"]).exported(AGENT_FIELDS["headers"], {"has_headers": True}, names) is OMIT
    assert names.asked == ["api_key", "api_key", "unreadable headers"]


def test_export_writes_only_the_members_of_an_auth_live_has() -> None:
    names = Names()
    live = {"auth": {"auth_type": "BEARER_TOKEN", "has_api_key": True, "base_url": None}}
    assert kind(AUTH).exported(AUTH, live, names) == {"auth_type": "BEARER_TOKEN", "api_key": {"env": "API_KEY"}}
    assert names.asked == ["auth.api_key"]


def test_export_leaves_out_a_field_live_does_not_show() -> None:
    assert kind(CUSTOM["base_url"]).exported(CUSTOM["base_url"], {}, Names()) is OMIT


# ------------------------------------------------------------------ the emulator's checks, stored and read shapes


def test_the_api_refuses_a_blank_required_string_and_a_header_map_over_its_size() -> None:
    endpoint, headers = AGENT_FIELDS["endpoint"], CUSTOM["headers"]
    assert kind(endpoint).problem(endpoint, "  ") == "must not be empty"
    assert kind(CUSTOM["base_url"]).problem(CUSTOM["base_url"], "https://a") is None
    assert kind(headers).problem(headers, {"X-A": "v"}) is None
    assert kind(headers).problem(headers, {"X-A": "v" * 9000}) == "serializes to 9010 bytes; at most 8175 are allowed"


def test_a_field_reads_back_nullable_unless_required_or_defaulted() -> None:
    def ref(name: str) -> dict[str, str]:
        return {"$ref": name}

    assert kind(CUSTOM["base_url"]).read_schema(CUSTOM["base_url"], ref) == {"type": "string"}
    assert kind(PROVIDERS["VENDOR_B"].fields["base_url"]).read_schema(PROVIDERS["VENDOR_B"].fields["base_url"], ref) \
        == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert kind(CUSTOM["api_key"]).read_schema(CUSTOM["api_key"], ref) == {"type": "boolean"}
    assert kind(AUTH).write_schema(AUTH, ref) == {"$ref": "CreateAwsBedrockAuth"}


def test_a_stored_secret_reads_as_present_even_when_empty_and_headers_as_sorted_names() -> None:
    assert kind(CUSTOM["api_key"]).read(CUSTOM["api_key"], "") is True
    assert kind(CUSTOM["headers"]).read(CUSTOM["headers"], {"b": "1", "a": "2"}) == ["a", "b"]
    assert kind(AGENT_FIELDS["headers"]).read(AGENT_FIELDS["headers"], {}) is False
    assert kind(CUSTOM["model_names"]).read(CUSTOM["model_names"], None) == []


@st.composite
def read_config(draw: st.DrawFn, f: ConfigField) -> dict[str, Any]:
    """A live config of one field as the API reads it back."""
    names = st.lists(st.sampled_from(["X-A", "X-B", "X-C"]), unique=True).map(sorted)
    text = st.sampled_from(["a", "b", "https://c"])
    by_kind: dict[FieldKind, st.SearchStrategy[Any]] = {
        FieldKind.BOOL: st.booleans(), FieldKind.STRING: st.none() | text,
        FieldKind.STRING_LIST: st.lists(text), FieldKind.SECRET: st.booleans(),
        FieldKind.HEADERS: st.booleans() if f.read_name.startswith("has_") else names,
        FieldKind.OBJECT: st.dictionaries(text, st.integers(0, 3), max_size=2),
        FieldKind.PRESETS: st.lists(st.fixed_dictionaries({
            "id": text, "name": text, "description": st.none() | text, "config": st.just({}),
            "created_at": st.just("t"), "updated_at": st.just("t")}), unique_by=lambda p: p["name"]),
    }
    if f.kind is FieldKind.AUTH:
        mode = AUTH_MODES[draw(st.sampled_from(sorted(AUTH_MODES)))]
        auth = {"auth_type": mode.auth_type}
        for m in mode.fields.values():
            auth |= draw(read_config(m))
        if mode.auth_type == "BEARER_TOKEN":
            auth["has_api_key"] = True  # required: a stored auth of this type has one
        return {"auth": auth}
    return {f.read_name: draw(by_kind[f.kind])}


EVERY_FIELD = [f for table in [*(p.fields for p in PROVIDERS.values()), AGENT_FIELDS,
                               *(m.fields for m in AUTH_MODES.values())] for f in table.values()]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.data())
def test_the_emulator_reads_back_what_seeding_stores_from_a_read(data: st.DataObject) -> None:
    f = data.draw(st.sampled_from(EVERY_FIELD))
    read = data.draw(read_config(f))
    stored = kind(f).stored(f, read, "(placeholder)", "x-placeholder")
    assert kind(f).read(f, stored) == read[f.read_name]
