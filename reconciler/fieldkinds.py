"""How each kind of provider-table field behaves: one class per kind, each instance registered
once, in ``reconciler.providers.BEHAVIOURS`` (``ConfigField.behaviour`` looks it up).

A behaviour answers, for one field, every question a layer asks of its kind: how a declared value
compares with the live config (``compare``: the planner's diff and pull's "value that makes the
plan empty" both call it), what a PATCH sends, what a plan shows as before, what pull writes or
notes, what export writes, and how the emulator stores and reads it. Pure: plain JSON values in and
out (a declared secret is whatever the caller's manifest holds: it is passed through, never read),
no I/O. ``live`` is always the integration's config in the API's read shape (``has_api_key``,
``header_names``...), or, for the members of an auth, the auth in its read shape.

This module imports nothing of the reconciler: the fields it is given (``Field``) and the auth
modes (``Mode``) are ``reconciler.providers``' own, seen through protocols.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol


class Verdict(Enum):
    """How a declared value compares with live. ``HIDDEN``: write-only, present live and declared,
    so it cannot be compared; the planner sends it only when told to (rotate, resend)."""

    SAME = "same"
    DIFFERS = "differs"
    HIDDEN = "hidden"


class _Absent(Enum):
    """A field not there: live has no such field (pull's edit removes it from the manifest, which
    then leaves it unmanaged), or a member of an auth the manifest omits."""

    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"

    __str__ = __repr__  # as a plain object's str: its repr


ABSENT: Any = _Absent.ABSENT
#: What ``exported`` gives for a field export leaves out of the manifest.
OMIT: Any = object()


class Field(Protocol):
    """What a behaviour reads of a field (``reconciler.providers.ConfigField``)."""

    @property
    def name(self) -> str: ...
    @property
    def read_name(self) -> str: ...
    @property
    def default(self) -> Any: ...
    @property
    def required_on_create(self) -> bool: ...
    @property
    def https(self) -> bool: ...
    @property
    def behaviour(self) -> FieldBehaviour: ...


class Mode(Protocol):
    """One auth mode (``reconciler.providers.AuthMode``)."""

    @property
    def auth_type(self) -> str: ...
    @property
    def fields(self) -> Mapping[str, Field]: ...


class Exporting(Protocol):
    """What export makes of the write-only values it cannot read (``reconciler.export``)."""

    def secret(self, present: bool, f: Field) -> Any:
        """A reference to a variable for the secret of ``f`` (None when ``present`` is false)."""

    def headers(self, names: list[str], f: Field) -> dict[str, Any]:
        """A reference per header name of ``f``."""

    def unreadable(self, f: Field) -> None:
        """Live has values of ``f`` whose names cannot be read: left unmanaged, and said so."""

    def inside(self, f: Field) -> Exporting:
        """The export of the members of ``f`` (an auth)."""


@dataclass(frozen=True)
class Pulled:
    """What pull does with one declared field. ``edits``: (the path below the field, ``""`` for
    the field itself; the declared value; the live value to write, ``ABSENT`` to remove it);
    ``notes``: why a difference is not written, each continuing ``ADDRESS: config.FIELD``."""

    edits: tuple[tuple[str, Any, Any], ...] = ()
    notes: tuple[str, ...] = ()

    def below(self, name: str) -> Pulled:
        """The same, for a member ``name`` of the field."""
        return Pulled(tuple((f".{name}{p}", old, new) for p, old, new in self.edits),
                      tuple(f".{name}{n}" for n in self.notes))


#: A named schema of the API's OpenAPI document, as a reference (``emulator.openapi.ref``).
Ref = Callable[[str], dict[str, str]]
_STRING = {"type": "string"}


def _declared(want: Any) -> Any:
    return None if want is ABSENT else want


def nullable(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"anyOf": [dict(schema), {"type": "null"}]}


class FieldBehaviour:
    """A plain value (bool, string, JSON object): compared by equality, sent and pulled as it is."""

    #: The manifest schema's description of the kind (``reconciler.manifests.fields``).
    docs = ""
    #: Live never shows the value: a difference is noted, never pulled; a plan shows it whole.
    write_only = False
    #: The members of each ``auth_type``, for a kind made of modes (an auth); None for the others.
    modes: Mapping[str, Mode] | None = None

    def compare(self, f: Field, want: Any, live: Mapping[str, Any]) -> Verdict:
        return Verdict.SAME if want == live.get(f.read_name) else Verdict.DIFFERS

    def hidden(self, f: Field) -> str:
        """What cannot be compared when ``compare`` says HIDDEN ("" when the value as a whole)."""
        return ""

    def body(self, f: Field, want: Any, live: Mapping[str, Any]) -> Any:
        """What a PATCH sends for a declared value that differs (secrets as declared: the caller
        resolves them)."""
        return want

    def view(self, value: Any) -> Any:
        """A value (as sent or as live holds it) in the shape a plan compares leaf by leaf."""
        return value

    def indexes(self, want: Any) -> Mapping[Any, int]:
        """For a view keyed by name: each name's index in the declared list."""
        return {}

    def before(self, f: Field, live: Mapping[str, Any], mask: str) -> Any:
        """The live value as a plan shows it (in ``view``'s shape; ``mask`` where a secret is)."""
        return live.get(f.read_name)

    def masked(self, read: Any, mask: str) -> Any:
        """A read value as a plan shows it: as it is, unless write-only."""
        return read

    def pulled(self, f: Field, want: Any, live: Mapping[str, Any]) -> Pulled:
        """The live value to write so that ``compare`` finds no difference (``want``: ``ABSENT``
        for an omitted member of an auth, which compares as null)."""
        if self.compare(f, _declared(want), live) is not Verdict.DIFFERS:
            return Pulled()
        return Pulled(edits=(("", want, live.get(f.read_name, ABSENT)),))

    def exported(self, f: Field, live: Mapping[str, Any], out: Exporting) -> Any:
        """The manifest's value of a live field (``OMIT``: not written)."""
        return live.get(f.read_name, OMIT)

    def stored(self, f: Field, read: Mapping[str, Any], placeholder: str, placeholder_header: str) -> Any:
        """The write-side value the emulator stores for a field given in its read shape (secrets,
        which a read never shows, as ``placeholder``; headers seen only as present as one header
        ``placeholder_header``)."""
        return copy.deepcopy(read.get(f.read_name))

    def read(self, f: Field, stored: Any) -> Any:
        """How a stored write-side value reads back."""
        if stored is None and isinstance(f.default, tuple):
            return list(f.default)
        return stored

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        """The JSON Schema of the value a create or update sends (the API's 400 shape check)."""
        raise NotImplementedError

    def read_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        """The JSON Schema of the value a read shows: null unless required or defaulted."""
        schema = self.write_schema(f, ref)
        schema.pop("pattern", None)
        schema.pop("format", None)
        return schema if f.required_on_create or f.default is not None else nullable(schema)

    def problem(self, f: Field, value: Any) -> str | None:
        """What the API refuses (422) in one given value of the right shape, or None."""
        return None


class Bool(FieldBehaviour):
    docs = "A boolean."

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "boolean"}


class String(FieldBehaviour):
    docs = "A string."

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "string", **({"format": "uri", "pattern": "^https://"} if f.https else {})}

    def problem(self, f: Field, value: Any) -> str | None:
        return "must not be empty" if f.required_on_create and not value.strip() else None


class JsonObject(FieldBehaviour):
    docs = "A JSON object."

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "object"}


class StringList(FieldBehaviour):
    """A set of names: an order the service returns is no change."""

    docs = "A list of names; replaces the stored list."

    def compare(self, f: Field, want: Any, live: Mapping[str, Any]) -> Verdict:
        have = live.get(f.read_name)
        if isinstance(want, list) and isinstance(have, list) and sorted(map(str, want)) == sorted(map(str, have)):
            return Verdict.SAME
        return super().compare(f, want, live)

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "array", "items": _STRING}


class Secret(FieldBehaviour):
    """A write-only string; reads back as a ``has_*`` flag, so only its presence compares."""

    docs = "A secret reference ({env: NAME} or {file: PATH}); write-only."
    write_only = True

    def compare(self, f: Field, want: Any, live: Mapping[str, Any]) -> Verdict:
        has = bool(live.get(f.read_name))
        if want is None:
            return Verdict.DIFFERS if has else Verdict.SAME
        return Verdict.HIDDEN if has else Verdict.DIFFERS

    def before(self, f: Field, live: Mapping[str, Any], mask: str) -> Any:
        return self.masked(live.get(f.read_name), mask)

    def masked(self, read: Any, mask: str) -> Any:
        return mask if read else None

    def pulled(self, f: Field, want: Any, live: Mapping[str, Any]) -> Pulled:
        want = _declared(want)
        if self.compare(f, want, live) is not Verdict.DIFFERS:
            return Pulled()
        return Pulled(notes=(" is write-only: live has none (not written; plan sends it)" if want is not None
                             else " is write-only: live has one (not written)",))

    def exported(self, f: Field, live: Mapping[str, Any], out: Exporting) -> Any:
        return out.secret(bool(live.get(f.read_name)), f)

    def stored(self, f: Field, read: Mapping[str, Any], placeholder: str, placeholder_header: str) -> Any:
        return placeholder if read.get(f.read_name) else None

    def read(self, f: Field, stored: Any) -> Any:
        return stored is not None  # a key was given, even an empty one

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "string", "writeOnly": True}

    def read_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "boolean"}


def _presence_only(f: Field) -> bool:
    """Headers that read back as ``has_headers``: only whether there are any (an AGENT's)."""
    return f.read_name.startswith("has_")


class Headers(FieldBehaviour):
    """A write-only map of header name to secret; reads back as the names (or, for an AGENT, as
    whether there are any), so names, or presence, compare and values never do."""

    docs = "Header name -> secret reference; write-only, replaces the stored headers."
    write_only = True

    def __init__(self, max_bytes: int, size: Callable[[Mapping[str, str]], int]) -> None:
        """``size``: how the API measures a header map against ``max_bytes``."""
        self.max_bytes, self.size = max_bytes, size

    def compare(self, f: Field, want: Any, live: Mapping[str, Any]) -> Verdict:
        if _presence_only(f):
            have_any = bool(live.get(f.read_name))
            if not want:
                return Verdict.DIFFERS if have_any else Verdict.SAME
            return Verdict.HIDDEN if have_any else Verdict.DIFFERS
        want_names = sorted((want or {}).keys())
        if want_names != sorted(live.get(f.read_name) or []):
            return Verdict.DIFFERS
        return Verdict.HIDDEN if want_names else Verdict.SAME

    def hidden(self, f: Field) -> str:
        return "values; only presence is visible" if _presence_only(f) else "values"

    def body(self, f: Field, want: Any, live: Mapping[str, Any]) -> Any:
        return want if want else None

    def before(self, f: Field, live: Mapping[str, Any], mask: str) -> Any:
        if _presence_only(f):
            return mask if live.get(f.read_name) else None
        return {n: mask for n in sorted(live.get(f.read_name) or [])} or None

    def masked(self, read: Any, mask: str) -> Any:
        return {n: mask for n in read or []}  # as a member of an auth: live's order, {} for none

    def pulled(self, f: Field, want: Any, live: Mapping[str, Any]) -> Pulled:
        if self.compare(f, _declared(want), live) is not Verdict.DIFFERS:
            return Pulled()
        have = live.get(f.read_name)
        if _presence_only(f):
            return Pulled(notes=(" is write-only: live " + ("has headers" if have else "has none") + " (not written)",))
        return Pulled(notes=(f" is write-only: the live header names are {sorted(have or [])} "
                             "(values cannot be read; not written)",))

    def exported(self, f: Field, live: Mapping[str, Any], out: Exporting) -> Any:
        if _presence_only(f):
            if live.get(f.read_name):
                out.unreadable(f)
            return OMIT
        return out.headers(list(live.get(f.read_name) or []), f)

    def stored(self, f: Field, read: Mapping[str, Any], placeholder: str, placeholder_header: str) -> Any:
        value = read.get(f.read_name)
        if _presence_only(f):
            return {placeholder_header: placeholder} if value else None
        return {name: placeholder for name in value} if value else None

    def read(self, f: Field, stored: Any) -> Any:
        return bool(stored) if _presence_only(f) else sorted(stored or {})

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": _STRING, "writeOnly": True,
                "description": f"Serialized size at most {self.max_bytes} bytes."}

    def read_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "boolean"} if _presence_only(f) else {"type": "array", "items": _STRING}

    def problem(self, f: Field, value: Any) -> str | None:
        size = self.size(value) if value else 0
        return f"serializes to {size} bytes; at most {self.max_bytes} are allowed" if size > self.max_bytes else None


class Auth(FieldBehaviour):
    """CLOUD_D's auth: one of ``modes`` by ``auth_type``, replaced wholesale, so it differs when
    any member does (each compared by its own kind; an omitted member compares as null, the API
    clears it)."""

    docs = "CLOUD_D authentication (CreateAwsBedrockAuth); replaces the stored auth wholesale."

    def __init__(self, modes: Mapping[str, Mode]) -> None:
        self.modes: Mapping[str, Mode] = modes
        #: the members that read back under another name (``has_api_key``: ``api_key``)
        self._read_as = {m.read_name: m for mode in modes.values() for m in mode.fields.values()
                         if m.read_name != m.name}

    def _mode(self, want: Mapping[str, Any], have: Mapping[str, Any]) -> Mode | None:
        """The declared mode, when live has the same one (else the auth differs as a whole)."""
        mode = self.modes.get(str(want.get("auth_type")))
        return mode if mode is not None and have.get("auth_type") == want.get("auth_type") else None

    def compare(self, f: Field, want: Any, live: Mapping[str, Any]) -> Verdict:
        have = live.get(f.read_name) or {}
        mode = self._mode(want, have)
        if mode is None:
            return Verdict.DIFFERS
        verdicts = {m.behaviour.compare(m, want.get(name), have) for name, m in mode.fields.items()}
        return next((v for v in (Verdict.DIFFERS, Verdict.HIDDEN) if v in verdicts), Verdict.SAME)

    def hidden(self, f: Field) -> str:
        return "secret values"

    def before(self, f: Field, live: Mapping[str, Any], mask: str) -> Any:
        """Live's auth under the write-side names, secrets masked."""
        out: dict[str, Any] = {}
        for k, v in (live.get(f.read_name) or {}).items():
            m = self._read_as.get(k)
            if m is None:
                out[k] = v
            else:
                out[m.name] = m.behaviour.masked(v, mask)
        return out

    def pulled(self, f: Field, want: Any, live: Mapping[str, Any]) -> Pulled:
        have = live.get(f.read_name) or {}
        mode = self._mode(want, have)
        if mode is None:
            return Pulled(notes=(f".auth_type is {have.get('auth_type')} live; its secrets cannot be read, "
                                 "so the auth is not written",))
        have = {**{m.read_name: None for m in mode.fields.values()}, **have}  # a member live lacks is unset
        parts = [m.behaviour.pulled(m, want.get(name, ABSENT), have).below(name) for name, m in mode.fields.items()]
        return Pulled(tuple(e for p in parts for e in p.edits), tuple(n for p in parts for n in p.notes))

    def exported(self, f: Field, live: Mapping[str, Any], out: Exporting) -> Any:
        """Only the members live has: an auth is replaced whole, and the API unsets what it omits."""
        auth = live.get(f.read_name) or {}
        mode = self.modes.get(str(auth.get("auth_type")))
        members = out.inside(f)
        written: dict[str, Any] = {"auth_type": auth.get("auth_type")}
        for m in (mode.fields.values() if mode else []):
            value = m.behaviour.exported(m, auth, members)
            if value not in (OMIT, None, {}):
                written[m.name] = value
        return written

    def stored(self, f: Field, read: Mapping[str, Any], placeholder: str, placeholder_header: str) -> Any:
        value = read.get(f.read_name)
        if not isinstance(value, Mapping):
            return value
        mode = self.modes.get(str(value.get("auth_type")))
        if mode is None:
            return dict(value)
        members = {m.name: m.behaviour.stored(m, value, placeholder, placeholder_header)
                   for m in mode.fields.values()}
        return {"auth_type": mode.auth_type, **{k: v for k, v in members.items() if v is not None}}

    def read(self, f: Field, stored: Any) -> Any:
        mode = self.modes[stored["auth_type"]]
        return {"auth_type": mode.auth_type,
                **{m.read_name: m.behaviour.read(m, stored.get(m.name)) for m in mode.fields.values()}}

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return ref("CreateAwsBedrockAuth")

    def read_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return ref("AwsBedrockAuth")


#: What a preset reads back as (the emulator stores these keys).
PRESET_READ_KEYS = ("id", "name", "description", "config", "created_at", "updated_at")


class Presets(FieldBehaviour):
    """An AGENT's request presets, matched by name: the list is sent whole, a description the
    manifest omits is unmanaged (the live one is sent back unchanged)."""

    docs = "Request presets; replace the stored presets, matched by name."

    def compare(self, f: Field, want: Any, live: Mapping[str, Any]) -> Verdict:
        return Verdict.SAME if _presets_patch(want or [], live.get(f.read_name) or []) is None else Verdict.DIFFERS

    def body(self, f: Field, want: Any, live: Mapping[str, Any]) -> Any:
        return _presets_patch(want or [], live.get(f.read_name) or [])

    def view(self, value: Any) -> Any:
        return {p.get("name"): {"description": p.get("description"), "config": p.get("config")} for p in value or []}

    def indexes(self, want: Any) -> Mapping[Any, int]:
        return {p.get("name"): i for i, p in enumerate(want or []) if isinstance(p, dict)}

    def before(self, f: Field, live: Mapping[str, Any], mask: str) -> Any:
        return self.view(live.get(f.read_name))

    def pulled(self, f: Field, want: Any, live: Mapping[str, Any]) -> Pulled:
        if self.compare(f, want, live) is not Verdict.DIFFERS:
            return Pulled()
        return Pulled(edits=(("", want, _presets_as_live(want or [], live.get(f.read_name) or [])),))

    def exported(self, f: Field, live: Mapping[str, Any], out: Exporting) -> Any:
        return [{"name": p["name"], "description": p.get("description"), "config": p.get("config") or {}}
                for p in live.get(f.read_name) or []]

    def read(self, f: Field, stored: Any) -> Any:
        return [{k: p.get(k) for k in PRESET_READ_KEYS} for p in stored or []]

    def write_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "array", "items": ref("AgentRequestPresetInput")}

    def read_schema(self, f: Field, ref: Ref) -> dict[str, Any]:
        return {"type": "array", "items": ref("AgentRequestPreset")}


def _presets_patch(want: list[Mapping[str, Any]], have: list[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The full preset list to send, or None when live already matches."""
    live_by_name = {p.get("name"): p for p in have}
    out: list[dict[str, Any]] = []
    differs = {p.get("name") for p in want} != set(live_by_name)
    for p in want:
        live = live_by_name.get(p["name"])
        item: dict[str, Any] = {"name": p["name"]}
        if "description" in p:
            item["description"] = p["description"]
        elif live is not None and live.get("description") is not None:
            item["description"] = live.get("description")
        item["config"] = p.get("config", {})
        if live is None or item.get("description") != live.get("description") or item["config"] != live.get("config"):
            differs = True
        out.append(item)
    return out if differs else None


def _presets_as_live(want: list[Mapping[str, Any]], have: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The declared presets as live has them: declared order kept, those live lacks dropped, those
    only live has appended; an omitted description stays omitted."""
    by_name = {p.get("name"): p for p in have}
    out: list[dict[str, Any]] = []
    for p in want:
        lp = by_name.get(p["name"])
        if lp is None:
            continue
        item = {**p, "config": lp.get("config")}
        if "description" in p:
            item["description"] = lp.get("description")
        out.append(item)
    declared = {p.get("name") for p in want}
    for lp in have:
        if lp.get("name") not in declared:
            item = {"name": lp.get("name")}
            if lp.get("description") is not None:
                item["description"] = lp.get("description")
            item["config"] = lp.get("config")
            out.append(item)
    return out
