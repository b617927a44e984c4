"""The one table of provider capabilities (docs/api.md, "Integrations").

The emulator enforces it, the manifest validator checks manifests against it, and the planner
uses it to know which fields are secrets, which are collections that replace, and how a write
field reads back. Add a provider by adding one ``Provider`` entry to ``PROVIDERS``.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reconciler import fieldkinds


class FieldKind(StrEnum):
    BOOL = "bool"
    STRING = "string"
    STRING_LIST = "string_list"
    SECRET = "secret"  # write-only string, reads back as a has_* flag
    HEADERS = "headers"  # write-only string map, reads back as header names
    AUTH = "auth"  # CLOUD_D CreateAwsBedrockAuth, replaced wholesale
    OBJECT = "object"  # free-form JSON object
    PRESETS = "presets"  # AGENT request presets, matched by name


@dataclass(frozen=True)
class ConfigField:
    """One writable config field of one provider (or of an AGENT, or of a CLOUD_D auth mode)."""

    name: str
    kind: FieldKind
    nullable: bool = False  # an explicit null on PATCH clears it
    required_on_create: bool = False
    default: Any = None  # the value read back when omitted on create
    read_as: str | None = None  # the read-side field; None: same name
    https: bool = False  # a URL that must be https

    @property
    def behaviour(self) -> fieldkinds.FieldBehaviour:
        """How a field of this kind compares, is sent, shown, pulled, exported and stored."""
        return BEHAVIOURS[self.kind]

    @property
    def write_only(self) -> bool:
        return self.behaviour.write_only

    @property
    def read_name(self) -> str:
        return self.read_as or self.name


HEADER_MAP_MAX_BYTES = 8175
AGENT_ENDPOINT_MAX_CHARS = 2048
PRESET_NAME_MAX = 255
PRESET_DESCRIPTION_MAX = 1024


def serialized_header_bytes(headers: Mapping[str, str]) -> int:
    """How the header-map limit is measured: the UTF-8 length of the compact JSON object
    (``json.dumps(headers, separators=(",", ":"), ensure_ascii=False)``)."""
    import json

    return len(json.dumps(dict(headers), separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _api_key(required: bool) -> ConfigField:
    return ConfigField("api_key", FieldKind.SECRET, nullable=True, required_on_create=required,
                       read_as="has_api_key")


_FUNCTION_CALLING = ConfigField("is_function_calling_enabled", FieldKind.BOOL, default=True)
_HEADERS = ConfigField("headers", FieldKind.HEADERS, nullable=True, read_as="header_names")
_DEFAULT_MODELS = ConfigField("is_default_models_enabled", FieldKind.BOOL, default=False)
_MODEL_NAMES = ConfigField("model_names", FieldKind.STRING_LIST, default=())


@dataclass(frozen=True)
class AuthMode:
    """One ``auth_type`` of CLOUD_D's CreateAwsBedrockAuth (write) / AwsBedrockAuth (read)."""

    auth_type: str
    fields: Mapping[str, ConfigField]


AUTH_MODES: Mapping[str, AuthMode] = {
    m.auth_type: m
    for m in (
        AuthMode("DEFAULT", {
            "role_arn": ConfigField("role_arn", FieldKind.STRING, required_on_create=True),
            "external_id": ConfigField("external_id", FieldKind.STRING),
            "base_url": ConfigField("base_url", FieldKind.STRING),
        }),
        AuthMode("BEARER_TOKEN", {
            "api_key": ConfigField("api_key", FieldKind.SECRET, required_on_create=True, read_as="has_api_key"),
            "base_url": ConfigField("base_url", FieldKind.STRING),
        }),
        AuthMode("PROXY_WITH_HEADERS", {
            "base_url": ConfigField("base_url", FieldKind.STRING, required_on_create=True, https=True),
            "headers": ConfigField("headers", FieldKind.HEADERS, read_as="header_names"),
        }),
    )
}

#: Each field kind's behaviour (``reconciler.fieldkinds``): the one place a kind is told apart.
BEHAVIOURS: Mapping[FieldKind, fieldkinds.FieldBehaviour] = {
    FieldKind.BOOL: fieldkinds.Bool(),
    FieldKind.STRING: fieldkinds.String(),
    FieldKind.STRING_LIST: fieldkinds.StringList(),
    FieldKind.SECRET: fieldkinds.Secret(),
    FieldKind.HEADERS: fieldkinds.Headers(HEADER_MAP_MAX_BYTES, serialized_header_bytes),
    FieldKind.AUTH: fieldkinds.Auth(AUTH_MODES),
    FieldKind.OBJECT: fieldkinds.JsonObject(),
    FieldKind.PRESETS: fieldkinds.Presets(),
}


@dataclass(frozen=True)
class Provider:
    name: str
    kind: str
    fields: Mapping[str, ConfigField] = field(default_factory=dict)
    needs_model_source: bool = False  # effective config keeps is_default_models_enabled or model_names

    def applies(self, field_name: str) -> bool:
        return field_name in self.fields


def _provider(name: str, kind: str, *fields: ConfigField, model_source: bool = False) -> Provider:
    return Provider(name, kind, {f.name: f for f in fields}, model_source)


PROVIDERS: Mapping[str, Provider] = {
    p.name: p
    for p in (
        _provider("VENDOR_A", "hosted model vendor", _api_key(True), _FUNCTION_CALLING),
        _provider("VENDOR_B", "hosted model vendor", _api_key(True), _FUNCTION_CALLING,
                  ConfigField("base_url", FieldKind.STRING, nullable=True)),
        _provider("VENDOR_C", "hosted model vendor", _api_key(True), _FUNCTION_CALLING),
        _provider("CLOUD_D", "cloud model hosting",
                  ConfigField("auth", FieldKind.AUTH, required_on_create=True),
                  _DEFAULT_MODELS, _MODEL_NAMES, model_source=True),
        _provider("CUSTOM", "chat-completions endpoint",
                  ConfigField("base_url", FieldKind.STRING, required_on_create=True, https=True),
                  _api_key(False), _FUNCTION_CALLING, _HEADERS, _DEFAULT_MODELS, _MODEL_NAMES,
                  model_source=True),
        _provider("CLOUD_E", "cloud ML platform",
                  ConfigField("project_id", FieldKind.STRING, required_on_create=True),
                  ConfigField("location", FieldKind.STRING, required_on_create=True),
                  ConfigField("project_access_label", FieldKind.STRING, required_on_create=True)),
        _provider("NIM_F", "self-hosted inference microservice",
                  ConfigField("base_url", FieldKind.STRING, nullable=True),
                  _api_key(False), _FUNCTION_CALLING, _HEADERS, _DEFAULT_MODELS, _MODEL_NAMES,
                  model_source=True),
    )
}

#: Every field UpdateLlmConfig knows (a field outside this set is an unknown property: 400;
#: a known field sent for a provider it does not apply to: 422).
LLM_CONFIG_FIELDS: frozenset[str] = frozenset(
    {"provider"} | {name for p in PROVIDERS.values() for name in p.fields}
)

#: AGENT config, write side.
AGENT_FIELDS: Mapping[str, ConfigField] = {
    "endpoint": ConfigField("endpoint", FieldKind.STRING, required_on_create=True, https=True),
    "headers": ConfigField("headers", FieldKind.HEADERS, nullable=True, read_as="has_headers"),
    "input_schema": ConfigField("input_schema", FieldKind.OBJECT, required_on_create=True),
    "request_presets": ConfigField("request_presets", FieldKind.PRESETS, default=()),
}

INTEGRATION_TYPES = ("LLM", "AGENT")


def visible_from(scopings: Any, space_id: str, organization_id: str | None) -> bool:
    """Whether an integration with these scopings may be used from a space (docs/api.md, "Integrations":
    an evaluator's ``ai_integration_id`` must be visible from its space, else 404): account-wide
    (no scopings, or a scoping with neither id), scoped to the space's organization, or to the
    space itself. Shared by the emulator and the planner's warning."""
    if not scopings:
        return True
    for s in scopings:
        org, sp = s.get("organization_id"), s.get("space_id")
        if sp == space_id or (sp is None and org in (None, organization_id)):
            return True
    return False


def has_model_source(config: Mapping[str, Any]) -> bool:
    """The model-source rule on an effective (read-shape or merged) config."""
    return bool(config.get("is_default_models_enabled")) or bool(config.get("model_names"))


# ---------------------------------------------------------------- AGENT rules shared by the validator and emulator

_SCHEMA_VALUE_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def without_required(schema: Any) -> Any:
    """A JSON Schema with every ``required`` keyword dropped, at any depth: a preset config is a
    partial request body (docs/api.md, "Integrations": present fields are validated, missing ones ignored)."""
    if isinstance(schema, dict):
        return {k: (v if k in _SCHEMA_VALUE_KEYWORDS else without_required(v))
                for k, v in schema.items() if not (k == "required" and isinstance(v, list))}
    if isinstance(schema, list):
        return [without_required(v) for v in schema]
    return schema


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP a host names literally, including the shorthand IPv4 forms (``127.1``,
    ``0x7f.0.0.1``, ``2130706433``) that resolvers accept; None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


#: Special-use domains whose names resolve only to loopback or inside a private network (RFC 6761's
#: ``localhost``, RFC 6762's ``local``, RFC 8375's ``home.arpa``, ICANN's ``internal``, and the
#: conventional ``localdomain``). Names that merely do not resolve (``.example``, ``.test``,
#: ``.invalid``) are left to the service's resolver, like any other name.
SPECIAL_USE_DOMAINS = ("localhost", "local", "internal", "home.arpa", "localdomain")
#: Public wildcard-DNS zones that answer with the address written in the name (``10-0-0-1.sslip.io``,
#: ``127.0.0.1.nip.io``), and zones that always answer with loopback: the classic ways to aim a
#: server-side request at an internal address through a name.
ADDRESS_IN_NAME_ZONES = ("nip.io", "sslip.io", "xip.io", "traefik.me")
LOOPBACK_ZONES = ("localtest.me", "lvh.me", "vcap.me")
_ADDRESS_IN_NAME = re.compile(r"(?:^|[.-])(\d{1,3})[.-](\d{1,3})[.-](\d{1,3})[.-](\d{1,3})$")


def non_public_host(host: str) -> str | None:
    """Why an AGENT endpoint's host cannot be a public address (``"a loopback address"``, ``"a
    special-use name (.internal)"``...), or None. The service resolves names; this is what can be
    told without resolving: literal addresses (every form resolvers accept), special-use domains,
    single-label names (they resolve only through a private search domain), and names whose
    address is written in them. Shared by the validator and the emulator."""
    name = host.lower().rstrip(".")
    ip = literal_address(name)
    if ip is None and "." not in name and name != "localhost":
        return "a single-label name (it resolves only inside a private network)"
    if ip is None:
        for zone in SPECIAL_USE_DOMAINS:
            if name == zone or name.endswith("." + zone):
                return "a loopback name" if zone == "localhost" else f"a special-use name (.{zone} is never public)"
        for zone in LOOPBACK_ZONES:
            if name == zone or name.endswith("." + zone):
                return f"a name that resolves to loopback ({zone})"
        for zone in ADDRESS_IN_NAME_ZONES:
            if name.endswith("." + zone):
                found = _ADDRESS_IN_NAME.search(name[: -len(zone) - 1])
                embedded = literal_address(".".join(found.groups())) if found else None
                if embedded is not None and not embedded.is_global:
                    return f"a name that resolves to {embedded} ({zone}), {_address_kind(embedded)}"
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_global and not ip.is_multicast:
        return None
    return _address_kind(ip)


def _address_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return ("a loopback address" if ip.is_loopback else "a link-local address" if ip.is_link_local
            else "a private address" if ip.is_private else "a multicast address" if ip.is_multicast
            else "not a public address")
