"""A small type system for manifest fields: each type checks a value (recording every problem, never
stopping at the first) and describes itself as JSON Schema, so the validator and ``reconciler
schema`` are one definition and cannot disagree.

Messages never echo a value except enum-like names (kinds, types, providers): a value in the wrong
place may be a secret.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.manifests.yamlload import Mark, Problem, display_path
from reconciler.model import SecretRef, Source
from reconciler.providers import HEADER_MAP_MAX_BYTES, serialized_header_bytes

Path = tuple[str | int, ...]
JsonSchema = dict[str, Any]

SECRET_LITERAL = ("a secret must be a reference: {env: NAME} or {file: PATH}; "
                  "literal values would end up in git")
#: ``${NAME}`` or ``$NAME`` written where a secret goes: shell-style interpolation that reconciler does
#: not do (``${var.NAME}`` is a manifest variable, not this).
SHELL_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?\Z")


def secret_literal(value: Any) -> str:
    """The message for a literal where a secret reference goes; ``${VAR}`` gets the reference to write."""
    if isinstance(value, str) and not value.startswith("${var.") and (m := SHELL_VARIABLE.fullmatch(value.strip())):
        return (f"'{value.strip()}' is not expanded: reconciler reads no shell variables in values; "
                f"write {{env: {m.group(1)}}} to read the secret from the environment variable {m.group(1)}")
    return SECRET_LITERAL


HEADER_SIZE_MEASURE = ("measured as the UTF-8 length of the compact JSON object "
                       '{"name":"value",...}')
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")

#: Fields the service sets: written by hand (or pasted from a GET), they are refused with a hint.
READ_ONLY_FIELDS = frozenset({"id", "created_at", "updated_at", "created_by_user_id"})


class Ctx:
    """The validation context of one document: where its values were written, the problem list,
    and the directory that relative paths (``{file: PATH}``, ``examples_file``) are resolved against."""

    def __init__(self, file: str, marks: Mapping[str, Mark], problems: list[Problem], base_dir: str,
                 label: str, refused: Iterable[str] = ()) -> None:
        self.file = file
        self.refused = tuple(refused)
        self.marks = marks
        self.problems = problems
        self.base_dir = base_dir
        self.label = label
        #: sources that do not come from this document's marks (examples read from examples_file)
        self.extra_sources: dict[str, Source] = {}
        #: (file, line of each example) when the examples came from an examples_file
        self.example_lines: tuple[str, list[int]] | None = None

    def mark(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The nearest recorded position of ``path`` (its key, or its value)."""
        parts = [str(p) for p in path]
        while True:
            m = self.marks.get(".".join(parts))
            if m is not None:
                return (m[0], m[1]) if key else (m[2], m[3])
            if not parts:
                return (1, 1)
            parts.pop()

    def problem(self, path: Path, message: str, *, key: bool = False) -> None:
        if self.refused and self._refused(path):
            return
        moved = self._moved(path) if self.extra_sources else None
        if moved is not None:  # written by a Patch: said at the patch's line
            self.problems.append(Problem(moved.file, moved.line, moved.column, show(path) or self.label, message))
            return
        line, col = self.mark(path, key=key)
        self.problems.append(Problem(self.file, line, col, show(path) or self.label, message))

    def _moved(self, path: Path) -> Source | None:
        parts = [str(p) for p in path]
        while parts:
            dotted = ".".join(parts)
            if dotted in self.marks:
                return None
            found = self.extra_sources.get(dotted)
            if found is not None:
                return found if found.file != self.file else None
            parts.pop()
        return None

    def _refused(self, path: Path) -> bool:
        dotted = ".".join(str(p) for p in path)
        return any(dotted == r or dotted.startswith(r + ".") for r in self.refused)

    def problem_at(self, file: str, line: int, column: int, path: Path, message: str) -> None:
        self.problems.append(Problem(file, line, column, show(path) or self.label, message))

    def resolve_path(self, written: str) -> str:
        return os.path.normpath(os.path.join(self.base_dir, os.path.expanduser(written)))


def show(path: Path) -> str:
    return display_path(".".join(str(p) for p in path))


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The closest name to a misspelling (case differences first), or None."""
    options = list(choices)
    for c in options:
        if c.lower() == word.lower():
            return c
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(word.lower(), [c.lower() for c in options], n=1, cutoff=0.6)
        close = [c for c in options if c.lower() in close][:1]
    return close[0] if close else None


def a_kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class Type:
    """Base: ``check`` returns the value to keep (converted where the type converts, e.g. secrets)."""

    nullable: bool = False
    what: str = "a value"
    doc: str = ""

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        raise NotImplementedError

    def schema(self) -> JsonSchema:
        raise NotImplementedError

    def wrong_type(self, value: Any, path: Path, ctx: Ctx) -> Any:
        expected = self.what + (" or null" if self.nullable else "")
        hint = ""
        if isinstance(value, (int, float, bool)) and self.what == "a string":
            hint = " (quote it if it is meant as text)"
        ctx.problem(path, f"expected {expected}, got {a_kind_of(value)}{hint}")
        return value

    def _with_doc(self, schema: JsonSchema) -> JsonSchema:
        if self.doc:
            schema["description"] = self.doc
        if self.nullable:
            schema = {"anyOf": [schema, {"type": "null"}]}
        return schema


@dataclass
class Str(Type):
    min_len: int = 0
    max_len: int | None = None
    enum: Sequence[str] | None = None
    https: bool = False
    nullable: bool = False
    null_message: str | None = None  # why null is refused, when that needs saying
    doc: str = ""
    what: str = "a string"
    extra: Callable[[str, Path, Ctx], None] | None = None

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if value is None and (self.nullable or self.null_message):
            if not self.nullable:
                ctx.problem(path, str(self.null_message))
            return None
        if not isinstance(value, str):
            return self.wrong_type(value, path, ctx)
        if self.enum is not None and value not in self.enum:
            hint = suggest(value, self.enum)
            ctx.problem(path, f"'{value}' is not one of {', '.join(self.enum)}"
                        + (f"; did you mean '{hint}'?" if hint else ""))
            return value
        n = len(value)
        if n < self.min_len:
            ctx.problem(path, "must not be empty" if self.min_len == 1 else f"must be at least {self.min_len} characters")
        elif self.max_len is not None and n > self.max_len:
            ctx.problem(path, f"is {n} characters, over the maximum of {self.max_len}")
        if self.https and not value.lower().startswith("https://"):
            ctx.problem(path, "must be an https:// URL")
        if self.extra is not None:
            self.extra(value, path, ctx)
        return value

    def schema(self) -> JsonSchema:
        s: JsonSchema = {"type": "string"}
        if self.enum is not None:
            s = {"enum": list(self.enum)} if len(self.enum) > 1 else {"const": self.enum[0]}
        if self.min_len:
            s["minLength"] = self.min_len
        if self.max_len is not None:
            s["maxLength"] = self.max_len
        if self.https:
            s["pattern"] = "^[Hh][Tt][Tt][Pp][Ss]://"
            s["format"] = "uri"
        return self._with_doc(s)


@dataclass
class Bool(Type):
    nullable: bool = False
    doc: str = ""
    what: str = "a boolean (true or false)"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if isinstance(value, bool) or (value is None and self.nullable):
            return value
        return self.wrong_type(value, path, ctx)

    def schema(self) -> JsonSchema:
        return self._with_doc({"type": "boolean"})


@dataclass
class Int(Type):
    minimum: int | None = None
    nullable: bool = False
    doc: str = ""
    what: str = "an integer"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if value is None and self.nullable:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            return self.wrong_type(value, path, ctx)
        if self.minimum is not None and value < self.minimum:
            ctx.problem(path, f"must be at least {self.minimum}")
        return value

    def schema(self) -> JsonSchema:
        s: JsonSchema = {"type": "integer"}
        if self.minimum is not None:
            s["minimum"] = self.minimum
        return self._with_doc(s)


@dataclass
class Num(Type):
    doc: str = ""
    what: str = "a number"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        return self.wrong_type(value, path, ctx)

    def schema(self) -> JsonSchema:
        return self._with_doc({"type": "number"})


@dataclass
class JsonObject(Type):
    """A free-form JSON object (parameters, a JSON Schema, a preset's partial request body)."""

    nullable: bool = False
    doc: str = ""
    what: str = "a mapping"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if isinstance(value, dict) or (value is None and self.nullable):
            return value
        return self.wrong_type(value, path, ctx)

    def schema(self) -> JsonSchema:
        return self._with_doc({"type": "object"})


@dataclass
class ListOf(Type):
    item: Type
    min_items: int = 0
    unique: bool = False
    nullable: bool = False
    doc: str = ""
    what: str = "a list"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if value is None and self.nullable:
            return None
        if not isinstance(value, list):
            return self.wrong_type(value, path, ctx)
        if len(value) < self.min_items:
            ctx.problem(path, "must not be empty" if self.min_items == 1 else f"needs at least {self.min_items} items")
        check = self.item.check
        out = [check(x, (*path, i), ctx) for i, x in enumerate(value)]
        if self.unique:
            seen: dict[Any, int] = {}
            for i, x in enumerate(out):
                if isinstance(x, (str, int, float, bool)) or x is None:
                    if x in seen:
                        ctx.problem((*path, i), f"repeats item {seen[x]}; items must be unique")
                    else:
                        seen[x] = i
        return out

    def schema(self) -> JsonSchema:
        s: JsonSchema = {"type": "array", "items": self.item.schema()}
        if self.min_items:
            s["minItems"] = self.min_items
        if self.unique:
            s["uniqueItems"] = True
        return self._with_doc(s)


@dataclass
class MapOf(Type):
    value: Type
    doc: str = ""
    what: str = "a mapping"
    min_items: int = 0

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if not isinstance(value, dict):
            return self.wrong_type(value, path, ctx)
        if len(value) < self.min_items:
            ctx.problem(path, f"needs at least {self.min_items} entr{'y' if self.min_items == 1 else 'ies'}")
        check = self.value.check
        return {k: check(v, (*path, k), ctx) for k, v in value.items()}

    def schema(self) -> JsonSchema:
        s: JsonSchema = {"type": "object", "additionalProperties": self.value.schema()}
        if self.min_items:
            s["minProperties"] = self.min_items
        return self._with_doc(s)


@dataclass
class Secret(Type):
    """``{env: NAME}`` or ``{file: PATH}`` -> ``SecretRef`` (file paths made absolute against the
    manifest's directory). A literal is refused, and its value is never repeated."""

    nullable: bool = False
    doc: str = ""
    what: str = "a secret reference"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if value is None:
            if self.nullable:
                return None
            ctx.problem(path, "must be a secret reference {env: NAME} or {file: PATH}, not null")
            return None
        if not isinstance(value, dict):
            ctx.problem(path, secret_literal(value))
            return None
        keys = list(value)
        if len(keys) != 1 or keys[0] not in ("env", "file"):
            odd = [k for k in keys if k not in ("env", "file")]
            if odd:
                hint = suggest(odd[0], ("env", "file"))
                ctx.problem((*path, odd[0]), f"unknown field '{odd[0]}' in a secret reference"
                            + (f"; did you mean '{hint}'?" if hint else "; use {env: NAME} or {file: PATH}"),
                            key=True)
            else:
                ctx.problem(path, "a secret reference has exactly one of env or file")
            return None
        source = keys[0]
        ref = value[source]
        if not isinstance(ref, str) or not ref:
            ctx.problem((*path, source), f"expected a non-empty string, got {a_kind_of(ref)}")
            return None
        if source == "env":
            if not ENV_NAME.match(ref):
                ctx.problem((*path, source), "is not an environment variable name (letters, digits and _, "
                            "not starting with a digit); write the variable's name, never the secret (the value "
                            "is not repeated here in case it is one)")
                return None
            return SecretRef("env", ref)
        return SecretRef("file", ctx.resolve_path(ref))

    def schema(self) -> JsonSchema:
        variants: list[JsonSchema] = [
            {"type": "object", "properties": {"env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
             "required": ["env"], "additionalProperties": False},
            {"type": "object", "properties": {"file": {"type": "string", "minLength": 1}},
             "required": ["file"], "additionalProperties": False},
        ]
        if self.nullable:
            variants.append({"type": "null"})
        s: JsonSchema = {"oneOf": variants}
        s["description"] = self.doc or "A secret reference: {env: NAME} or {file: PATH} (relative to the manifest)."
        return s


@dataclass
class Headers(Type):
    """A header map ``{name: secret reference}``. Header values are write-only secrets. The size limit
    is measured on the resolved values (``check_secrets``); here only the names are counted."""

    nullable: bool = False
    doc: str = ""
    what: str = "a mapping of header name to secret reference"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if value is None and self.nullable:
            return None
        if not isinstance(value, dict):
            return self.wrong_type(value, path, ctx)
        secret = Secret()
        out: dict[str, Any] = {}
        lowered: dict[str, str] = {}
        for name, v in value.items():
            hpath = (*path, name)
            if not HEADER_NAME.match(name):
                ctx.problem(hpath, f"'{name}' is not a valid HTTP header name", key=True)
            elif name.lower() in lowered:
                ctx.problem(hpath, f"header '{name}' repeats '{lowered[name.lower()]}' "
                            "(header names are case-insensitive)", key=True)
            lowered.setdefault(name.lower(), name)
            if v is None:
                ctx.problem(hpath, "a header value must be a secret reference {env: NAME} or {file: PATH}, "
                            "not null (to clear every header, write headers: null)")
                continue
            if not isinstance(v, dict):
                message = secret_literal(v)
                ctx.problem(hpath, message + (" (header values are write-only secrets)" if message == SECRET_LITERAL
                                              else ""))
                continue
            out[name] = secret.check(v, hpath, ctx)
        size = serialized_header_bytes({k: "" for k in value})
        if size > HEADER_MAP_MAX_BYTES:
            ctx.problem(path, f"the header names alone serialize to {size:,} bytes, over the "
                        f"{HEADER_MAP_MAX_BYTES:,}-byte limit ({HEADER_SIZE_MEASURE})")
        return out

    def schema(self) -> JsonSchema:
        s: JsonSchema = {"type": "object", "propertyNames": {"pattern": "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$"},
                         "additionalProperties": Secret().schema()}
        return self._with_doc(s)


Rule = Callable[[dict[str, Any], Path, Ctx], None]


@dataclass
class Struct(Type):
    """A mapping with known fields: unknown keys are errors with a "did you mean" suggestion."""

    fields: dict[str, Type]
    required: tuple[str, ...] = ()
    forbidden: Mapping[str, str] = field(default_factory=dict)  # known elsewhere, refused here: why
    rules: tuple[Rule, ...] = ()  # cross-field checks, run after the fields
    one_of_required: tuple[tuple[str, ...], ...] = ()  # exactly one of each group (schema side)
    nullable: bool = False
    doc: str = ""
    what: str = "a mapping"
    required_reason: Mapping[str, str] = field(default_factory=dict)

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if value is None and self.nullable:
            return None
        if not isinstance(value, dict):
            return self.wrong_type(value, path, ctx)
        fields = self.fields
        out: dict[str, Any] = {}
        for k, v in value.items():
            t = fields.get(k)
            if t is not None:
                out[k] = t.check(v, (*path, k), ctx)
            else:
                self._unknown(k, (*path, k), ctx)
        misspelt = {suggest(k, self.fields) for k in value if k not in fields}  # one typo is one problem
        for r in self.required:
            if r not in value and r not in misspelt:
                ctx.problem(path, f"missing required field '{r}'" + self.required_reason.get(r, ""), key=True)
        for rule in self.rules:
            rule(out, path, ctx)
        return out

    def _unknown(self, k: str, path: Path, ctx: Ctx) -> None:
        if k in self.forbidden:
            ctx.problem(path, self.forbidden[k], key=True)
        elif k in READ_ONLY_FIELDS:
            ctx.problem(path, f"'{k}' is read-only (the service sets it); remove it", key=True)
        else:
            hint = suggest(k, self.fields)
            ctx.problem(path, f"unknown field '{k}'" + (f"; did you mean '{hint}'?" if hint
                                                         else f" (expected one of: {', '.join(self.fields)})"),
                        key=True)

    def schema(self) -> JsonSchema:
        s: JsonSchema = {
            "type": "object",
            "properties": {k: t.schema() for k, t in self.fields.items()},
            "additionalProperties": False,
        }
        if self.required:
            s["required"] = list(self.required)
        if self.one_of_required:
            s["allOf"] = [{"oneOf": [{"required": [k]} for k in group]} for group in self.one_of_required]
        return self._with_doc(s)


@dataclass
class Tagged(Type):
    """A mapping whose shape is chosen by one field (``kind``, ``type``, ``provider``, ``auth_type``)."""

    key: str
    variants: Mapping[str, Type]
    doc: str = ""
    what: str = "a mapping"

    def check(self, value: Any, path: Path, ctx: Ctx) -> Any:
        if not isinstance(value, dict):
            return self.wrong_type(value, path, ctx)
        tag = value.get(self.key)
        if self.key not in value:
            ctx.problem(path, f"missing required field '{self.key}' (one of {', '.join(self.variants)})",
                        key=True)
            self._common_required(value, path, ctx)
            return value
        if not isinstance(tag, str) or tag not in self.variants:
            if isinstance(tag, str):
                hint = suggest(tag, self.variants)
                ctx.problem((*path, self.key), f"'{tag}' is not one of {', '.join(self.variants)}"
                            + (f"; did you mean '{hint}'?" if hint else ""))
            else:
                ctx.problem((*path, self.key), f"expected one of {', '.join(self.variants)}, got {a_kind_of(tag)}")
            self._common_required(value, path, ctx)
            return value
        return self.variants[tag].check(value, path, ctx)

    def _common_required(self, value: dict[str, Any], path: Path, ctx: Ctx) -> None:
        """Without a usable tag the shape is unknown, but what every shape requires is still missing:
        say so in the same run rather than one problem per run."""
        sets = [set(getattr(v, "required", ())) for v in self.variants.values()]
        common = set.intersection(*sets) - {self.key} if sets else set()
        for name in sorted(common - set(value)):
            ctx.problem(path, f"missing required field '{name}'", key=True)

    def schema(self) -> JsonSchema:
        s: JsonSchema = {"type": "object", "required": [self.key],
                         "oneOf": [v.schema() for v in self.variants.values()]}
        return self._with_doc(s)
