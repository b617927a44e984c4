"""The building blocks of the manifest models (``models``): the strict base model, field
declarations (``Doc``: omitted is ``MISSING``; ``Required``), the value types (secret references,
header maps, numbers), tagged unions, and the product-rule errors (``rule_error``) that ``messages``
turns into ``FILE:LINE:COL: PATH: message`` lines. No message repeats a value that may be a secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, ClassVar, Union

from pydantic import (
    MISSING,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    StringConstraints,
    Tag,
    ValidationInfo,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from reconciler.model import SecretRef
from reconciler.providers import HEADER_MAP_MAX_BYTES, serialized_header_bytes

SubPath = tuple[str | int, ...]
#: One problem a rule found: (sub-path below the validated value, message, at the key's position?)
RuleProblem = tuple[SubPath, str, bool]

RULE = "reconciler"
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
CREATE_REQUIRED = " (needed to create the integration when it does not exist yet)"
EVALUATOR_REQUIRED = " (needed to create the evaluator when it does not exist yet)"

MESSAGE_ROLES = ("system", "user", "assistant", "tool")


def rule_error(problems: Iterable[RuleProblem]) -> PydanticCustomError:
    """The error a product rule raises: every problem it found, each at its own sub-path."""
    return PydanticCustomError(RULE, "the manifest breaks a product rule", {"problems": list(problems)})


def problem(message: str, *sub: str | int, key: bool = False) -> PydanticCustomError:
    return rule_error([(sub, message, key)])


def a_kind_of(value: Any) -> str:
    """How a message names what was written, never the value itself."""
    if value is None:
        return "null"
    for t, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
                    (list, "a list"), (dict, "a mapping")):
        if isinstance(value, t):
            return name
    return type(value).__name__


# ------------------------------------------------------------------ base


class Strict(BaseModel):
    """Every manifest mapping: unknown keys refused, immutable, no coercion, inputs never in errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, hide_input_in_errors=True,
                              protected_namespaces=(), arbitrary_types_allowed=True, defer_build=True)

    #: keys refused here that mean something elsewhere: why, in the product's words
    refused: ClassVar[Mapping[str, str]] = {}
    #: what to add to "missing required field 'X'"
    required_reasons: ClassVar[Mapping[str, str]] = {}


def Doc(text: str, **kw: Any) -> Any:  # noqa: N802 - reads as a field declaration
    """A field that may be omitted (then it is MISSING: unmanaged), with its description."""
    return Field(MISSING, description=text, **kw)


def Required(text: str, **kw: Any) -> Any:  # noqa: N802
    return Field(description=text, **kw)


# ------------------------------------------------------------------ value types

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
JsonObject = dict[str, Any]


def _not_blank(value: str) -> str:
    if value and not value.strip():
        raise problem("must not be blank")
    return value


def _https(value: str) -> str:
    if not value.lower().startswith("https://"):
        raise problem("must be an https:// URL")
    return value


HTTPS_SCHEMA = {"pattern": "^[Hh][Tt][Tt][Pp][Ss]://", "format": "uri"}


def _number(value: Any) -> int | float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise problem(f"expected a number, got {a_kind_of(value)}")


Number = Annotated[int | float, PlainValidator(_number), WithJsonSchema({"type": "number"})]


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    found: list[RuleProblem] = []
    for i, x in enumerate(items):
        if x in seen:
            found.append(((i,), f"repeats item {seen[x]}; items must be unique", False))
        else:
            seen[x] = i
    if found:
        raise rule_error(found)
    return items


def _secret(value: Any, info: ValidationInfo) -> SecretRef:
    """``{env: NAME}`` or ``{file: PATH}`` (relative to the manifest's directory) -> ``SecretRef``.
    A literal is refused, and its value is never repeated."""
    if value is None:
        raise problem("must be a secret reference {env: NAME} or {file: PATH}, not null")
    if not isinstance(value, dict):
        raise problem(secret_literal(value))
    keys = list(value)
    if len(keys) != 1 or keys[0] not in ("env", "file"):
        odd = [k for k in keys if k not in ("env", "file")]
        if odd:
            from reconciler.manifests.messages import suggest

            hint = suggest(odd[0], ("env", "file"))
            raise problem(f"unknown field '{odd[0]}' in a secret reference"
                          + (f"; did you mean '{hint}'?" if hint else "; use {env: NAME} or {file: PATH}"),
                          odd[0], key=True)
        raise problem("a secret reference has exactly one of env or file")
    source = keys[0]
    ref = value[source]
    if not isinstance(ref, str) or not ref:
        raise problem(f"expected a non-empty string, got {a_kind_of(ref)}", source)
    if source == "env":
        if not ENV_NAME.match(ref):
            raise problem("is not an environment variable name (letters, digits and _, not starting with a "
                          "digit); write the variable's name, never the secret (the value is not repeated here "
                          "in case it is one)", source)
        return SecretRef("env", ref)
    resolve: Callable[[str], str] = (info.context or {}).get("resolve_path", lambda p: p)
    outside: Callable[[str], str | None] = (info.context or {}).get("outside_tree", lambda p: None)
    if (why := outside(resolve(ref))) is not None:
        raise problem(f"the secret file {why}", source)
    return SecretRef("file", resolve(ref))


SECRET_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "object", "properties": {"env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$",
                                                   "description": "An environment variable's name."}},
         "required": ["env"], "additionalProperties": False},
        {"type": "object", "properties": {"file": {"type": "string", "minLength": 1,
                                                    "description": "A file path, relative to the manifest."}},
         "required": ["file"], "additionalProperties": False},
    ],
    "description": "A secret reference: {env: NAME} or {file: PATH} (relative to the manifest).",
}

#: A secret reference: a type of its own, never a literal.
Secret = Annotated[SecretRef, PlainValidator(_secret), WithJsonSchema(SECRET_SCHEMA)]


def _headers(value: Any, info: ValidationInfo) -> dict[str, SecretRef]:
    """A header map ``{name: secret reference}``; header values are write-only secrets. The size
    limit is measured on the resolved values (``check_secrets``); here only the names count."""
    if not isinstance(value, dict):
        raise problem(f"expected a mapping of header name to secret reference, got {a_kind_of(value)}")
    found: list[RuleProblem] = []
    out: dict[str, SecretRef] = {}
    lowered: dict[str, str] = {}
    for name, v in value.items():
        if not HEADER_NAME.match(name):
            found.append(((name,), f"'{name}' is not a valid HTTP header name", True))
        elif name.lower() in lowered:
            found.append(((name,), f"header '{name}' repeats '{lowered[name.lower()]}' "
                                   "(header names are case-insensitive)", True))
        lowered.setdefault(name.lower(), name)
        if v is None:
            found.append(((name,), "a header value must be a secret reference {env: NAME} or {file: PATH}, "
                                   "not null (to clear every header, write headers: null)", False))
        elif not isinstance(v, dict):
            message = secret_literal(v)
            found.append(((name,), message + (" (header values are write-only secrets)"
                                              if message == SECRET_LITERAL else ""), False))
        else:
            try:
                out[name] = _secret(v, info)
            except PydanticCustomError as exc:
                found.extend(((name, *sub), m, k) for sub, m, k in (exc.context or {})["problems"])
    size = serialized_header_bytes({k: "" for k in value})
    if size > HEADER_MAP_MAX_BYTES:
        found.append(((), f"the header names alone serialize to {size:,} bytes, over the "
                          f"{HEADER_MAP_MAX_BYTES:,}-byte limit ({HEADER_SIZE_MEASURE})", False))
    if found:
        raise rule_error(found)
    return out


Headers = Annotated[dict[str, SecretRef], PlainValidator(_headers), WithJsonSchema({
    "type": "object", "propertyNames": {"pattern": "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$"},
    "additionalProperties": SECRET_SCHEMA,
    "description": "Header name -> secret reference (values are write-only); replaces the stored headers.",
})]


class TagOf:
    """The discriminator of a tagged union: the value of ``key`` (a model's attribute once built)."""

    def __init__(self, key: str, tags: Iterable[str]) -> None:
        self.key = key
        self.tags = frozenset(tags)
        self.__name__ = key

    def __call__(self, value: Any) -> Any:
        tag = value.get(self.key) if type(value) is dict else getattr(value, self.key, None)
        # an unknown tag is "not found", so pydantic's own message (which repeats it) never holds it
        return tag if isinstance(tag, str) and tag in self.tags else None


def tagged(key: str, members: Mapping[str, Any]) -> Any:
    """``Annotated[Union[...], Discriminator]`` over ``{tag: model}``."""
    choices = tuple(Annotated[m, Tag(t)] for t, m in members.items())
    return Annotated[Union[choices], Discriminator(TagOf(key, members))]  # noqa: UP007 - a runtime union of members

