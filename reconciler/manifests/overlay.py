"""Environments (docs/manifests.md, "Environments and lifecycle"): variables and ``kind: Patch``
overlays, applied to parsed YAML documents before they are validated, so every later check sees
the values a plan will use.

Variables come from ``RECONCILER_VAR_<NAME>`` (lowest), then ``--var-file FILE`` (a YAML mapping;
files in order, later wins), then ``--var NAME=VALUE`` (highest; always a string). A whole value
``{var: NAME}`` keeps the variable's YAML type; inside a string, ``${var.NAME}`` is replaced by its
text (``$${`` writes a literal ``${``). A variable is never a secret: one in a secret position is
refused. A value that came from a variable remembers where the variable was set, so a plan shows
both lines (``prompts.yaml:12 via vars/prod.yaml:3``).

A Patch (``target: KIND/NAME``, ``space:`` for the spaced kinds, ``patch:`` a JSON Merge Patch,
RFC 7396) changes the last document loaded before it with that kind, name (and space); ``null`` in a
patch removes the key (it becomes unmanaged). The values it writes point at the patch's lines.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.kinds import SECRET_KINDS
from reconciler.manifests.yamlload import Problem, YamlDocument, parse_documents, read_file
from reconciler.model import SPACED_KINDS, Source

ENV_PREFIX = "RECONCILER_VAR_"
VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
INTERPOLATION = re.compile(r"\$(\$?)\{var\.([^}]*)\}")
PATCH_KEYS = ("kind", "name", "target", "space", "patch")


@dataclass(frozen=True)
class Variable:
    value: Any
    via: str  # where it was set: "vars/prod.yaml:3", "--var env", "RECONCILER_VAR_env"


@dataclass
class Variables:
    values: dict[str, Variable] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # the --var-file paths (never loaded as manifests)
    from_command_line: tuple[str, ...] = ()  # names given with --var (an unused one is a warning)
    used: set[str] = field(default_factory=set)

    def unused_warnings(self) -> list[str]:
        return [f"--var {name} is not used by any manifest" for name in self.from_command_line
                if name not in self.used]


def collect_variables(assignments: Sequence[str], files: Sequence[str], environ: Mapping[str, str],
                      problems: list[Problem]) -> Variables:
    """Variables from the three sources, in precedence order; a malformed one is a problem."""
    values: dict[str, Variable] = {}
    for key, value in sorted(environ.items()):
        if key.startswith(ENV_PREFIX) and VAR_NAME.match(key[len(ENV_PREFIX):]):
            values[key[len(ENV_PREFIX):]] = Variable(value, key)
    for path in files:
        text = read_file(path, path, problems)
        if text is None:
            continue
        docs = parse_documents(text, path, problems)
        if len(docs) != 1 or not isinstance(docs[0].value, dict):
            problems.append(Problem(path, 1, 1, "--var-file", "a variables file is one YAML mapping of NAME: value"))
            continue
        doc = docs[0]
        for name, value in doc.value.items():
            line, column = doc.marks.get(name, (1, 1, 1, 1))[:2]
            if not VAR_NAME.match(name):
                problems.append(Problem(path, line, column, name, "a variable name is letters, digits and _ "
                                        "(not starting with a digit)"))
                continue
            values[name] = Variable(value, f"{path}:{line}")
    given: list[str] = []
    for item in assignments:
        name, sep, value = item.partition("=")
        if not sep or not VAR_NAME.match(name):
            problems.append(Problem("--var", 1, 1, "--var", "expected NAME=VALUE (NAME: letters, digits and _)"))
            continue
        values[name] = Variable(value, f"--var {name}")
        given.append(name)
    return Variables(values, tuple(os.path.realpath(f) for f in files), tuple(given))


# ---------------------------------------------------------------- variables


def _secret_position(kind: Any, path: str) -> bool:
    """Where a secret goes (an integration's api_key, header values, auth secrets)."""
    if kind not in SECRET_KINDS:
        return False
    return bool(re.match(r"config\.(auth\.)?(api_key|headers)(\.|\Z)", path))


def substitute(doc: YamlDocument, variables: Variables, problems: list[Problem]) -> None:
    """Resolve ``{var: NAME}`` and ``${var.NAME}`` in one document, in place. Every substituted
    path gets a Source with ``via`` in ``doc.extra_sources``. A document the parser saw neither
    a ``var`` key nor a ``${`` in is left as it is (``YamlDocument.may_use_variables``)."""
    if not doc.may_use_variables:
        return
    kind = doc.value.get("kind") if isinstance(doc.value, dict) else None

    def problem(path: str, message: str) -> None:
        mark = doc.marks.get(path)
        line, column = (mark[2], mark[3]) if mark else (doc.line, doc.column)
        problems.append(Problem(doc.file, line, column, path or doc.label(), message))

    def lookup(name: str, path: str) -> Variable | None:
        found = variables.values.get(name)
        if found is None:
            defined = ", ".join(sorted(variables.values)) or "none (give --var NAME=VALUE, --var-file FILE or "\
                      f"{ENV_PREFIX}NAME)"
            problem(path, f"undefined variable '{name}'; the defined ones are: {defined}")
            doc.refused.add(path)
            return None
        if _secret_position(kind, path):
            problem(path, "a variable is never a secret: write {env: NAME} or {file: PATH} here")
            doc.refused.add(path)
            return None
        if path in ("", "kind"):  # what the document is, as the schema and every reader sees it
            problem(path, "a variable is never a document's kind: write the kind itself"
                    + ("" if path else ", and its fields"))
            doc.refused.add(path)
            return None
        variables.used.add(name)
        return found

    def note(path: str, via: str) -> None:
        mark = doc.marks.get(path)
        line, column = (mark[0], mark[1]) if mark else (doc.line, doc.column)
        doc.extra_sources[path] = Source(doc.file, line, column, via=via)

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            if set(value) == {"var"}:
                name = value["var"]
                if not isinstance(name, str):
                    problem(path, "{var: NAME} takes a variable name")
                    doc.refused.add(path)
                    return value
                found = lookup(name, path)
                if found is None:
                    return value
                note(path, found.via)
                return found.value
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(value)]
        if isinstance(value, str) and "${" in value:
            return interpolate(value, path)
        return value

    def interpolate(text: str, path: str) -> Any:
        vias: list[str] = []

        def one(m: re.Match[str]) -> str:
            if m.group(1):  # $${var.x}: a literal ${var.x}
                return m.group(0)[1:]
            found = lookup(m.group(2), path)
            if found is None:
                return m.group(0)
            if isinstance(found.value, dict | list):
                problem(path, f"variable '{m.group(2)}' is a {'mapping' if isinstance(found.value, dict) else 'list'}"
                        f"; a whole value takes it as {{var: {m.group(2)}}}, not inside a string")
                return m.group(0)
            vias.append(found.via)
            return "" if found.value is None else _text(found.value)

        out = INTERPOLATION.sub(one, text)
        if vias:
            note(path, ", ".join(dict.fromkeys(vias)))
        return out

    doc.value = walk(doc.value, "")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------- patches


def is_patch(doc: YamlDocument) -> bool:
    return isinstance(doc.value, dict) and doc.value.get("kind") == "Patch"


def apply_patches(docs: Iterable[YamlDocument], problems: list[Problem]) -> list[YamlDocument]:
    """The documents with every Patch applied to the last document before it that it targets; the
    Patch documents themselves are consumed."""
    out: list[YamlDocument] = []
    for doc in docs:
        if not is_patch(doc):
            out.append(doc)
            continue
        target = _patch_target(doc, problems)
        if target is None:
            continue
        kind, name, space = target
        found = next((d for d in reversed(out) if isinstance(d.value, dict) and d.value.get("kind") == kind
                      and d.value.get("name") == name and (space is None or d.value.get("space") == space)), None)
        if found is None:
            where = f" in space {space}" if space else ""
            _problem(doc, "target", f"no {kind} named '{name}'{where} is loaded before this patch (paths load in "
                                    "order: the base first, then the overlays)", problems)
            continue
        patch = doc.value["patch"]
        changed = [k for k in ("kind", "name") if k in patch and patch[k] != found.value.get(k)]
        if changed:
            _problem(doc, f"patch.{changed[0]}", f"a Patch cannot change '{changed[0]}' (it names what it patches)",
                     problems)
            continue
        found.value = _merge(found.value, patch, "", found, doc)
    return out


def _problem(doc: YamlDocument, path: str, message: str, problems: list[Problem]) -> None:
    mark = doc.marks.get(path)
    line, column = (mark[0], mark[1]) if mark else (doc.line, doc.column)
    problems.append(Problem(doc.file, line, column, path or f"Patch ({doc.label()})", message))


def _patch_target(doc: YamlDocument, problems: list[Problem]) -> tuple[str, str, str | None] | None:
    value = doc.value
    ok = True
    for key in value:
        if key not in PATCH_KEYS:
            _problem(doc, key, f"unknown field '{key}' in a Patch (it has target, space and patch)", problems)
            ok = False
    target = value.get("target")
    if not isinstance(target, str) or "/" not in target:
        _problem(doc, "target" if "target" in value else "",
                 "a Patch needs 'target: KIND/NAME' (the document it changes)", problems)
        return None
    kind, _, name = target.partition("/")
    space = value.get("space")
    if kind in SPACED_KINDS and not isinstance(space, str):
        _problem(doc, "target", f"a Patch of a {kind} needs 'space:' (a {kind} is named by space and name)", problems)
        ok = False
    elif kind not in SPACED_KINDS and space is not None:
        _problem(doc, "space", f"'space' does not apply to a {kind}", problems)
        ok = False
    if not isinstance(value.get("patch"), dict):
        _problem(doc, "patch" if "patch" in value else "", "a Patch needs 'patch:', a mapping (JSON Merge Patch)",
                 problems)
        ok = False
    return (kind, name, space if isinstance(space, str) else None) if ok else None


def _merge(target: Any, patch: Any, path: str, doc: YamlDocument, patch_doc: YamlDocument) -> Any:
    """RFC 7396 on ``target`` (document ``doc``), moving the positions of what changes to the patch."""
    if not isinstance(patch, dict):
        _moved(path, doc, patch_doc)
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    if not isinstance(target, dict) and path:
        _moved(path, doc, patch_doc)
    for key, value in patch.items():
        sub = f"{path}.{key}" if path else str(key)
        if value is None:
            out.pop(key, None)
            _forget(sub, doc)
        else:
            out[key] = _merge(out.get(key), value, sub, doc, patch_doc)
    return out


def _forget(path: str, doc: YamlDocument) -> None:
    for store in (doc.marks, doc.extra_sources):
        for k in [k for k in store if k == path or k.startswith(path + ".")]:
            del store[k]


def _moved(path: str, doc: YamlDocument, patch_doc: YamlDocument) -> None:
    """``path`` of ``doc`` now holds a value written in the patch: its sources are the patch's."""
    _forget(path, doc)
    prefix = f"patch.{path}"
    for k, mark in patch_doc.marks.items():
        if k == prefix or k.startswith(prefix + "."):
            doc.extra_sources[path + k[len(prefix):]] = Source(patch_doc.file, mark[0], mark[1])
    for k, src in patch_doc.extra_sources.items():  # a variable inside the patch
        if k == prefix or k.startswith(prefix + "."):
            doc.extra_sources[path + k[len(prefix):]] = src
