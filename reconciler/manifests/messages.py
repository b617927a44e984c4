"""From a pydantic ``ValidationError`` to problem lines in the product's words.

Each error entry becomes ``FILE:LINE:COL: PATH: message``: the location comes from the YAML marks
(a missing or unknown field points at its key), the path drops the union tags pydantic puts in
``loc``, and the message is ours: "missing required field", "unknown field ...; did you mean",
"expected a boolean (true or false), got a string". No pydantic text reaches the user, and no
message repeats a value except an enum-like name (letters and underscores only): a value in the
wrong place may be a secret.
"""

from __future__ import annotations

import os
import re
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic import ValidationError as PydanticError

from reconciler.manifests.fields import CREATE_REQUIRED, RULE, TaggedUnion, a_kind_of
from reconciler.manifests.hints import suggest as suggest  # models and policy rules use it too
from reconciler.manifests.models import field_type, unwrap
from reconciler.manifests.yamlload import Mark, Problem, display_path
from reconciler.model import Source

Path = tuple[str | int, ...]

#: Fields the service sets: written by hand (or pasted from a GET), they are refused with a hint.
READ_ONLY_FIELDS = frozenset({"id", "created_at", "updated_at", "created_by_user_id"})
#: A wrong enum value is repeated only when it looks like a name, never like a token or key.
_NAME_LIKE = re.compile(r"[A-Za-z][A-Za-z_]{0,39}\Z")

_EXPECTED = {
    "string_type": "a string", "bool_type": "a boolean (true or false)", "int_type": "an integer",
    "float_type": "a number", "dict_type": "a mapping", "model_type": "a mapping",
    "model_attributes_type": "a mapping", "list_type": "a list",
}


class Ctx:
    """The validation context of one document: where its values were written, the problem list,
    and the directory that relative paths (``{file: PATH}``, ``examples_file``) are resolved against."""

    def __init__(self, file: str, marks: Mapping[str, Mark], problems: list[Problem], base_dir: str,
                 label: str | Callable[[], str], refused: Iterable[str] = (),
                 roots: tuple[str, ...] | None = None) -> None:
        self.file = file
        self.roots = roots  # the tree files named by the document must stay in (None: anywhere)
        self.refused = tuple(refused)
        self.marks = marks
        self.problems = problems
        self.base_dir = base_dir
        self._label = label  # how the document is named where a problem has no path (made on demand)
        #: sources that do not come from this document's marks (examples read from examples_file)
        self.extra_sources: dict[str, Source] = {}
        #: (file, line of each example) when the examples came from an examples_file
        self.example_lines: tuple[str, list[int]] | None = None

    @property
    def label(self) -> str:
        if callable(self._label):
            self._label = self._label()
        return self._label

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
            self.problem_at(moved.file, moved.line, moved.column, path, message)
        else:
            self.problem_at(self.file, *self.mark(path, key=key), path, message)

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

    def outside_tree(self, path: str) -> str | None:
        """Why the document may not name the file at ``path`` (None: it may): see ``confine``."""
        from reconciler.manifests.confine import outside_tree

        return outside_tree(path, self.roots)


def show(path: Path) -> str:
    return display_path(".".join(str(p) for p in path))


def _not_one_of(value: Any, names: Iterable[str]) -> str:
    names = list(names)
    if not isinstance(value, str):
        return f"expected one of {', '.join(names)}, got {a_kind_of(value)}"
    hint = suggest(value, names)
    shown = f"'{value}'" if _NAME_LIKE.match(value) else "the value written"
    return f"{shown} is not one of {', '.join(names)}" + (f"; did you mean '{hint}'?" if hint else "")


# ------------------------------------------------------------------ walking the model along a loc


class Located:
    """Where an error entry points: the path a user reads, the model that holds the last field,
    and the declared type at the end (None inside free-form values)."""

    def __init__(self, root: Any, loc: tuple[str | int, ...]) -> None:
        self.path: list[str | int] = []
        self.model: type[BaseModel] | None = None
        self.union: TaggedUnion | None = None
        tp: Any = root
        for part in loc:
            tp = unwrap(tp) if tp is not None else None
            if isinstance(tp, TaggedUnion):
                self.union = tp
                tp = tp.members.get(str(part))
                continue  # the tag is not part of the user's path
            self.path.append(part)
            self.union = None
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                self.model = tp
                tp = field_type(tp, str(part))
            elif get_origin(tp) is list and isinstance(part, int):
                tp = get_args(tp)[0]
            elif get_origin(tp) is dict:
                tp = get_args(tp)[1]
            else:
                tp = None
        self.field_type: Any = tp
        end = unwrap(tp) if tp is not None else None
        if isinstance(end, TaggedUnion):
            self.union = end

    def nullable(self) -> bool:
        tp = self.field_type
        while get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)

    def literal(self) -> tuple[str, ...]:
        end = unwrap(self.field_type)
        return tuple(get_args(end)) if get_origin(end) is Literal else ()


def _required(model: Any) -> set[str]:
    return {n for n, f in model.model_fields.items() if f.is_required()}


def _common_required(union: TaggedUnion, value: Any) -> set[str]:
    sets = [_required(m) if isinstance(m, type) else set() for m in union.members.values()]
    common = set.intersection(*sets) - {union.key} if sets else set()
    return common - set(value) if isinstance(value, dict) else set()


# ------------------------------------------------------------------ the messages


def report(exc: PydanticError, root: Any, ctx: Ctx) -> None:
    """Every entry of ``exc`` as problems of ``ctx``; a misspelt required field is one problem (the
    unknown field with its suggestion), not also "missing"."""
    errors = exc.errors(include_url=False, include_context=True, include_input=True)
    misspelt = set()
    unknown: dict[tuple[Any, ...], list[str]] = {}  # by mapping: unknown keys with no close field name
    missing: dict[tuple[Any, ...], list[str]] = {}  # by mapping: required fields not written
    for err in errors:
        at = Located(root, tuple(err["loc"]))
        if err["type"] == "extra_forbidden":
            fields = list(at.model.model_fields) if at.model is not None else []
            hint = suggest(str(at.path[-1]), fields)
            misspelt.add((tuple(at.path[:-1]), hint))
            if hint is None and str(at.path[-1]) not in getattr(at.model, "refused", {}):
                unknown.setdefault(tuple(at.path[:-1]), []).append(str(at.path[-1]))
        elif err["type"] == "missing":
            missing.setdefault(tuple(at.path[:-1]), []).append(str(at.path[-1]))
    # a key written next to a missing required field is most likely that field, misspelt beyond what
    # suggest() calls close: say so (one problem, not two)
    paired = {(where, names[0]): missing[where][0] for where, names in unknown.items()
              if len(names) == 1 and len(missing.get(where, ())) == 1}
    for err in errors:
        for path, message, key in _translate(err, root):
            if err["type"] == "missing" and (tuple(path), str(err["loc"][-1])) in misspelt | {
                    (where, field) for (where, _), field in paired.items()}:
                continue
            if err["type"] == "extra_forbidden" and (tuple(path[:-1]), str(path[-1])) in paired:
                field = paired[tuple(path[:-1]), str(path[-1])]
                message = (f"unknown field '{path[-1]}'; did you mean '{field}'? (a required field, not written "
                           "here)")
            ctx.problem(path, message, key=key)


def _translate(err: Mapping[str, Any], root: Any) -> Iterator[tuple[Path, str, bool]]:
    kind = err["type"]
    at = Located(root, tuple(err["loc"]))
    path = tuple(at.path)
    value = err.get("input")
    ctx = err.get("ctx") or {}
    if kind == RULE:
        for sub, message, key in ctx["problems"]:
            yield (*path, *sub), message, key
    elif kind == "missing":
        model = at.model
        reason = model.required_reasons.get(str(path[-1]), "") if model is not None else ""  # type: ignore[attr-defined]
        yield path[:-1], f"missing required field '{path[-1]}'{reason}", True
    elif kind == "extra_forbidden":
        yield path, _unknown(str(path[-1]), at.model), True
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        yield from _bad_tag(path, at.union, value)
    elif kind == "literal_error":
        yield path, _not_one_of(value, at.literal()), False
    elif kind in _EXPECTED:
        yield path, _wrong_type(kind, at, value), False
    elif kind == "string_too_short":
        n = ctx.get("min_length", 1)
        yield path, "must not be empty" if n == 1 else f"must be at least {n} characters", False
    elif kind == "string_too_long":
        length = len(value) if isinstance(value, str) else "too many"
        yield path, f"is {length} characters, over the maximum of {ctx.get('max_length')}", False
    elif kind == "too_short":
        n = ctx.get("min_length", 1)
        if ctx.get("field_type") == "Dictionary":
            yield path, f"needs at least {n} entr{'y' if n == 1 else 'ies'}", False
        else:
            yield path, "must not be empty" if n == 1 else f"needs at least {n} items", False
    elif kind == "greater_than_equal":
        yield path, f"must be at least {ctx.get('ge')}", False
    else:  # pragma: no cover - every constraint the models use is translated above
        yield path, f"is not valid ({kind.replace('_', ' ')})", False


def _unknown(name: str, model: Any) -> str:
    refused: Mapping[str, str] = getattr(model, "refused", {})
    if name in refused:
        return refused[name]
    if name in READ_ONLY_FIELDS:
        return f"'{name}' is read-only (the service sets it); remove it"
    fields = list(model.model_fields) if model is not None else []
    hint = suggest(name, fields)
    return f"unknown field '{name}'" + (f"; did you mean '{hint}'?" if hint else f" (expected one of: {', '.join(fields)})")


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _bad_tag(path: Path, union: TaggedUnion | None, value: Any) -> Iterator[tuple[Path, str, bool]]:
    if union is None:  # pragma: no cover - every union of the models is tagged
        yield path, "is not valid", False
        return
    tags = list(union.members)
    if not isinstance(value, dict):
        yield path, f"expected a mapping, got {a_kind_of(value)}", False
        return
    misspelt = next((k for k in value if isinstance(k, str) and suggest(k, [union.key]) == union.key), None)
    if union.key not in value and misspelt is not None:  # provder: VENDOR_A
        yield (*path, misspelt), (f"unknown field '{misspelt}'; did you mean '{union.key}'? (it chooses the fields "
                                  f"that apply: one of {', '.join(tags)})"), True
    elif union.key not in value:
        if not path and union.key == "kind" and "name" not in value and value \
                and all(isinstance(k, str) and _VARIABLE_NAME.match(k) for k in value):
            yield path, ("missing required field 'kind': this looks like a var file (a mapping of variables), "
                         "given as a PATH; pass it with --var-file FILE"), True
            return
        yield path, f"missing required field '{union.key}' (one of {', '.join(tags)})", True
    else:
        yield (*path, union.key), _not_one_of(value[union.key], tags), False
    for name in sorted(_common_required(union, value)):
        yield path, f"missing required field '{name}'", True


def _wrong_type(kind: str, at: Located, value: Any) -> str:
    model = at.model
    name = str(at.path[-1]) if at.path else ""
    if value is None and kind == "string_type" and model is not None and name in _required(model) \
            and getattr(model, "required_reasons", {}).get(name) == CREATE_REQUIRED:
        return f"cannot be null: {name} is required on the resource (the API answers 422)"
    expected = _EXPECTED[kind] + (" or null" if at.nullable() else "")
    hint = " (quote it if it is meant as text)" if kind == "string_type" and isinstance(value, (int, float, bool)) else ""
    return f"expected {expected}, got {a_kind_of(value)}{hint}"

