"""``reconciler pull``: every difference live has on a declared resource, written back where the
manifests declare the value (docs/manifests.md, "Two writers").

For each declared resource, ``plan.liveview`` says which declared fields differ live (as the
planner compares them) and the value that makes the next plan empty. Each is routed to where it is
written: the manifest's own line; a Patch's line (the value a Patch sets); a var file's line (a
whole value from a variable; a ``${var.X}`` inside a string when the rest of the string still
matches); the line of an ``examples_file`` (an example replaced, removed or appended). A value from
``--var`` or the environment is not written and is named, and so is every write-only field. A
declared resource that no longer exists live has its document removed (and the Patches of it).
With ``--since REF``, a field changed in the tree since REF that live changed to something else is
a conflict: neither side is written.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from reconciler.kinds import PROMPT, RESTRICTION
from reconciler.model import DesiredResource, LiveState, ManifestSet, Source
from reconciler.plan.ignore import path_matches, rules_for
from reconciler.plan.liveview import ABSENT, ExamplesEdit, resource_diff
from reconciler.plan.restrictions import restrictions_unseen
from reconciler.pull.yamledit import Doc, EditError, Node, YamlFile

_VIA_FILE = re.compile(r"(.+):(\d+)\Z")
_ONE_VARIABLE = re.compile(r"\$\{var\.([^}]*)\}")


@dataclass(frozen=True)
class Edit:
    address: str
    path: str
    file: str
    line: int
    action: str  # update | add | remove | remove document
    before: Any
    after: Any


@dataclass(frozen=True)
class NotWritten:
    address: str
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.address}: {self.path}: {self.reason}" if self.path else f"{self.address}: {self.reason}"


@dataclass(frozen=True)
class Conflict:
    address: str
    path: str
    base: Any
    tree: Any
    live: Any
    source: str | None

    def __str__(self) -> str:
        if not self.path:  # an edit the file cannot take without touching something else
            return f"{self.address}: {self.source}"
        where = f" ({self.source})" if self.source else ""
        return (f"{self.address}: {self.path}{where}: changed in the tree and live: base {_show(self.base)}, "
                f"tree {_show(self.tree)}, live {_show(self.live)}; neither written")


@dataclass
class PullResult:
    edits: list[Edit] = field(default_factory=list)
    not_written: list[NotWritten] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    files: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (text before, text after)
    boms: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what was not compared (not a difference)

    def exit_code(self) -> int:
        """1 with a conflict, else 2 with a difference (an edit, or a value not written), else 0."""
        return 1 if self.conflicts else (2 if self.edits or self.not_written else 0)

    def diff(self) -> str:
        out: list[str] = []
        for path, (before, after) in self.files.items():
            lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                         fromfile=f"a/{path}", tofile=f"b/{path}")
            for line in lines:
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def write(self) -> None:
        """Write every edited file (atomically, its mode kept)."""
        for path, (_, after) in self.files.items():
            data = (("\ufeff" if self.boms.get(path) else "") + after).encode("utf-8")
            tmp = f"{path}.pull-{os.getpid()}.tmp"
            mode = os.stat(path).st_mode & 0o7777
            Path(tmp).write_bytes(data)
            os.chmod(tmp, mode)
            os.replace(tmp, path)

    def to_json(self, written: bool, unmanaged_written: list[str]) -> dict[str, Any]:
        return {"edits": [_as_json(e) for e in self.edits],
                "not_written": [_as_json(n) for n in self.not_written],
                "conflicts": [_as_json(c) for c in self.conflicts], "warnings": list(self.warnings),
                "files": list(self.files), "written": written, "diff": self.diff(),
                "unmanaged_written": unmanaged_written}


@dataclass
class _Loc:
    file: YamlFile
    doc: Doc
    node: Node


def _as_json(record: Any) -> dict[str, Any]:
    """An edit, a value not written or a conflict: its fields in order, a value not set as null."""
    return {f.name: _json(getattr(record, f.name)) for f in fields(record)}


def _json(value: Any) -> Any:
    return None if value is ABSENT else value


def _show(value: Any) -> str:
    if value is ABSENT:
        return "(not set)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _get(spec: Mapping[str, Any], path: str) -> Any:
    value: Any = spec
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return ABSENT
        value = value[part]
    return value


class Puller:
    """One pull: the manifests, the live state they were compared with, and where values are written."""

    def __init__(self, manifests: ManifestSet, live: LiveState, files: Sequence[str] = (),
                 base: Mapping[tuple[str, ...], DesiredResource] | None = None) -> None:
        self.manifests = manifests
        self.live = live
        self.manifest_files = list(files)
        self.base = base
        self.result = PullResult()
        self.restrictions_hidden = False
        self._yaml: dict[str, YamlFile] = {}
        self._text: dict[str, tuple[str, str]] = {}  # other files (examples): before, after
        self._written: dict[tuple[str, int], Any] = {}  # (file, node start) -> value written there

    # ------------------------------------------------------------------ files

    def yaml(self, path: str) -> YamlFile:
        found = self._yaml.get(path)
        if found is None:
            found = self._yaml[path] = YamlFile(path, Path(path).read_bytes())
        return found

    # ------------------------------------------------------------------ the run

    def run(self) -> PullResult:
        # a key that cannot see restrictions (a reader key) must not pull "restricted: false" nor
        # remove ResourceRestriction documents: as plan and drift, pull leaves them out, with one warning
        self.restrictions_hidden = restrictions_unseen(self.manifests.resources, self.live)
        left_out: list[str] = []
        for r in self.manifests.resources:
            if self.restrictions_hidden and r.kind == RESTRICTION.name:
                left_out.append(r.address)
                continue
            if self.restrictions_hidden and r.kind == PROMPT.name and "restricted" in r.spec:
                left_out.append(f"{r.address} (restricted)")
            self.pull_resource(r)
        if left_out:
            self.result.warnings.append(
                "restrictions were not compared: the API key sees no resource restriction (a read-only key "
                "manages none), so these are left out: " + ", ".join(left_out))
        for path, f in self._yaml.items():
            if not f.edited:
                continue
            try:
                after = f.render()
            except EditError as exc:
                self.result.conflicts.append(Conflict(path, "", None, None, None, str(exc)))
                continue
            self.result.files[path] = (f.text, after[1:] if f.bom else after)
            self.result.boms[path] = f.bom
        for path, (before, after) in self._text.items():
            if before != after:
                self.result.files[path] = (before, after)
        return self.result

    def pull_resource(self, r: DesiredResource) -> None:
        diff = resource_diff(r, self.live)
        rules = rules_for(r, self.manifests.ownership)

        def ignored(path: str) -> bool:
            return any(path_matches(rule.field, path) for rule in rules)

        if diff.missing:
            if self.base is not None and r.identity not in self.base:
                return  # declared since REF: a create the next apply makes, not a live delete
            self.remove_resource(r)
            return
        self.result.not_written.extend(NotWritten(r.address, "", note.partition(": ")[2] or note)
                                       for note in diff.notes)
        base = self.base.get(r.identity) if self.base is not None else None
        kept = [e for e in diff.edits if not ignored(e.path)
                and not (self.restrictions_hidden and e.path == "restricted")]
        versioned = any(e.path.startswith("template_config.") or (e.path.startswith("version.") and e.path not in (
            "version.labels", "version.commit_message")) for e in kept)
        for edit in kept:
            if edit.path in ("commit_message", "version.commit_message") and not versioned:
                continue  # the message follows a version whose fields are pulled, not an ignored one
            if self.agreed(r, base, edit.path, edit.old, edit.new):
                self.write(r, edit.path, edit.old, edit.new, None)
        if diff.examples and not ignored("examples"):
            old = list(r.spec.get("examples") or [])
            new = diff.examples.applied(old)
            if self.agreed(r, base, "examples", old, new):
                self.write_examples(r, old, new, diff.examples)

    def agreed(self, r: DesiredResource, base: DesiredResource | None, path: str, tree: Any, live: Any) -> bool:
        """With ``--since``: whether to write live's value (the tree did not change the field since
        REF); a conflict is recorded when both changed it."""
        if self.base is None:
            return True
        was = _get(base.spec, path) if base is not None else ABSENT
        if _canon(was) == _canon(tree):
            return True
        if _canon(live) != _canon(was):
            src = r.source(path)
            self.result.conflicts.append(Conflict(r.address, path, was, tree, live, str(src) if src else None))
        return False

    # ------------------------------------------------------------------ where a value is written

    def locate(self, r: DesiredResource, path: str, new: Any = ABSENT) -> _Loc | tuple[_Loc, str] | str | None:
        """Where ``path`` of ``r`` is written (a node), or why it cannot be written (a string), or
        None when only a parent records it; a ``${var.X}`` inside a string that can take ``new``:
        where X is set and its new value."""
        if path not in r.sources:
            return None
        src: Source = r.sources[path]
        if not os.path.isfile(src.file):
            return None
        f = self.yaml(src.file)
        found = f.find(src.line, src.column, [path, f"patch.{path}"])
        if found is None:
            return None
        doc, _, node = found
        if src.via is None:
            return _Loc(f, doc, node)
        if node.kind == "map" and node.keys == ["var"]:
            return self.variable(src.via)
        return self._solve(src.via, node, new) or f"built from variables ({src.via}) inside a string: not written"

    def variable(self, via: str) -> _Loc | str:
        m = _VIA_FILE.match(via)
        if m is None or not os.path.isfile(m.group(1)):
            return f"set by {via}: not written (change it where it is set)"
        f = self.yaml(m.group(1))
        line = int(m.group(2))
        doc = f.docs[0] if f.docs else None
        if doc is None or doc.root is None or doc.root.kind != "map":
            return f"set by {via}: not written"
        node = next((c for c in doc.root.children if c.key_line == line), None)
        return _Loc(f, doc, node) if node is not None else f"set by {via}: not written"

    def _solve(self, via: str, node: Node, new: Any) -> tuple[_Loc, str] | str | None:
        """A ``${var.X}`` inside a string (``node``, written from ``via``): where X is set and its
        new value, when the rest of the string still matches live's."""
        if not isinstance(new, str) or node.kind != "scalar":
            return None
        template = node.text
        refs = list(_ONE_VARIABLE.finditer(template))
        if len(refs) != 1 or "$${" in template or "," in via:
            return None
        head, tail = template[:refs[0].start()], template[refs[0].end():]
        if not (new.startswith(head) and new.endswith(tail)) or len(new) < len(head) + len(tail):
            return f"built from ${{var.{refs[0].group(1)}}} ({via}) and live no longer matches the rest of the " \
                   "string: not written"
        var = self.variable(via)
        return (var, new[len(head):len(new) - len(tail)]) if isinstance(var, _Loc) else var

    # ------------------------------------------------------------------ writing

    def write(self, r: DesiredResource, path: str, old: Any, new: Any, fallback: _Loc | None) -> None:
        loc = self.locate(r, path, new)
        if isinstance(loc, tuple):  # a ${var.X} inside a string: X's new value where X is set
            self._put(r, path, loc[0], loc[1], old)
            return
        if loc is None:
            loc = fallback
        if isinstance(loc, str):
            self.result.not_written.append(NotWritten(r.address, path, loc))
            return
        if loc is None:
            if new is ABSENT:
                return
            parent, _, key = path.rpartition(".")
            ploc = self.locate(r, parent) if parent else None
            if isinstance(ploc, _Loc) and ploc.node.kind == "map" and ploc.node.style == "block":
                ploc.file.insert(ploc.doc, ploc.node, key, new)
                self.result.edits.append(Edit(r.address, path, ploc.file.path, ploc.node.line, "add", None, new))
                return
            self.result.not_written.append(NotWritten(r.address, path, "not found in the manifests: not written"))
            return
        node = loc.node
        if new is ABSENT:
            container = node.parent
            if container is not None and container.style == "flow":
                ppath = path.rpartition(".")[0]
                pvalue = _get(r.spec, ppath)
                if isinstance(pvalue, dict):
                    self.write(r, ppath, pvalue, {k: v for k, v in pvalue.items() if k != path.rpartition(".")[2]},
                               None)
                    return
            self._guard(loc, new)
            loc.file.delete_entry(loc.doc, node)
            self.result.edits.append(Edit(r.address, path, loc.file.path, node.key_line, "remove", old, None))
            return
        if isinstance(old, dict) and isinstance(new, dict) and node.kind == "map" \
                and (node.style == "block" or set(old) == set(new)):
            for k, v in old.items():
                if k not in new or _canon(v) != _canon(new[k]):  # changed, or removed (ABSENT)
                    self.write(r, f"{path}.{k}", v, new.get(k, ABSENT), self._child(loc, k))
            for k, v in new.items():
                if k not in old:
                    loc.file.insert(loc.doc, node, k, v)
                    self.result.edits.append(Edit(r.address, f"{path}.{k}", loc.file.path, node.line, "add", None, v))
            return
        if isinstance(old, list) and isinstance(new, list) and node.kind == "seq" and old and new \
                and self._list(r, path, loc, old, new):
            return
        self._put(r, path, loc, new, old)

    def _child(self, loc: _Loc, key: str | int) -> _Loc | None:
        child = loc.node.child(key)
        return _Loc(loc.file, loc.doc, child) if child is not None else None

    def _guard(self, loc: _Loc, value: Any) -> bool:
        """One place written once: two resources sharing a variable must agree on its value."""
        key = (loc.file.path, loc.node.start)
        if key in self._written:
            if _canon(self._written[key]) != _canon(value):
                self.result.conflicts.append(Conflict(loc.file.path, loc.file.doc_path(loc.doc, loc.node), None,
                                                      self._written[key], value,
                                                      f"{loc.file.path}:{loc.node.key_line}"))
            return False
        self._written[key] = value
        return True

    def _put(self, r: DesiredResource, path: str, loc: _Loc, new: Any, old: Any) -> None:
        if not self._guard(loc, new):
            return
        loc.file.replace(loc.doc, loc.node, new)
        self.result.edits.append(Edit(r.address, path, loc.file.path, loc.node.key_line, "update", old, new))

    def _list(self, r: DesiredResource, path: str, loc: _Loc, old: list[Any], new: list[Any]) -> bool:
        """Item by item when the list is block style: changed items edited in place, removed ones'
        lines deleted, new ones inserted; a flow list only when items are changed in place. False when
        the list is rewritten whole."""
        node = loc.node
        a, b = [_canon(x) for x in old], [_canon(x) for x in new]
        ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        if node.style == "flow" and not all(tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1)
                                            for tag, i1, i2, j1, j2 in ops):
            return False
        deleted = {n for tag, i1, i2, j1, j2 in ops if tag == "delete" or (tag == "replace" and i2 - i1 != j2 - j1)
                   for n in range(i1, i2)}
        appends = any(tag in ("insert", "replace") and i2 == len(old) and i2 - i1 != j2 - j1
                      for tag, i1, i2, j1, j2 in ops)
        if not new or len(deleted) == len(old) or (appends and len(old) - 1 in deleted):
            return False  # nothing left to anchor new items to: the list is written whole
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                for n in range(i2 - i1):
                    self.write(r, f"{path}.{i1 + n}", old[i1 + n], new[j1 + n], self._child(loc, i1 + n))
                continue
            if tag in ("replace", "delete"):
                for n in range(i1, i2):
                    child = node.children[n]
                    loc.file.delete_entry(loc.doc, child)
                    self.result.edits.append(Edit(r.address, f"{path}.{n}", loc.file.path, child.line, "remove",
                                                  old[n], None))
            if tag in ("replace", "insert"):
                before = node.children[i2] if i2 < len(node.children) else None
                for n in range(j1, j2):
                    loc.file.insert(loc.doc, node, None, new[n], before)
                    self.result.edits.append(Edit(r.address, f"{path}.{n}", loc.file.path,
                                                  (before or node.children[-1]).line, "add", None, new[n]))
        return True

    # ------------------------------------------------------------------ examples and documents

    def write_examples(self, r: DesiredResource, old: list[Any], new: list[Any], edit: ExamplesEdit) -> None:
        loc = self.locate(r, "examples")
        if loc is not None:
            self.write(r, "examples", old, new, None)
            return
        first = r.sources.get("examples.0")
        if first is None or not os.path.isfile(first.file):
            self.result.not_written.append(NotWritten(r.address, "examples", "examples not found: not written"))
            return
        path = first.file
        if not path.lower().endswith((".jsonl", ".ndjson")):
            self.result.not_written.append(NotWritten(r.address, "examples", f"{path} is a JSON array; only "
                                                      f"JSONL examples files are edited ({edit.count()} examples "
                                                      "differ): not written"))
            return
        before = self._text[path][1] if path in self._text else Path(path).read_bytes().decode("utf-8")
        lines = before.splitlines(keepends=True)
        newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
        compact = not lines or '": ' not in lines[0]
        separators = (",", ":") if compact else (", ", ": ")

        def dumps(example: Any) -> str:
            return json.dumps(example, ensure_ascii=False, separators=separators)

        index_line = {i: r.sources[f"examples.{i}"].line - 1 for i in range(len(old))}
        for i, example in edit.replace.items():
            n = index_line[i]
            ending = lines[n][len(lines[n].rstrip("\r\n")):] or newline
            lines[n] = dumps(example) + ending
            self.result.edits.append(Edit(r.address, f"examples.{i}", path, n + 1, "update", old[i], example))
        for i in sorted(edit.delete, reverse=True):
            n = index_line[i]
            self.result.edits.append(Edit(r.address, f"examples.{i}", path, n + 1, "remove", old[i], None))
            lines[n] = ""
        if edit.append and lines and not lines[-1].endswith("\n"):
            last = max((k for k, line in enumerate(lines) if line), default=None)
            if last is not None and not lines[last].endswith("\n"):
                lines[last] += newline
        for n, example in enumerate(edit.append):
            lines.append(dumps(example) + newline)
            self.result.edits.append(Edit(r.address, f"examples.{len(old) + n}", path, len(lines), "add", None,
                                          example))
        self._text[path] = (self._text[path][0] if path in self._text else before, "".join(lines))

    def remove_resource(self, r: DesiredResource) -> None:
        src = r.source("")
        doc = (self.yaml(src.file).doc_at(src.line, src.column)
               if src is not None and os.path.isfile(src.file) else None)
        if src is None or doc is None:
            self.result.not_written.append(NotWritten(r.address, "", "deleted live; its document was not found"))
            return
        f = self.yaml(src.file)  # read above
        f.remove_document(doc)
        self.result.edits.append(Edit(r.address, "", f.path, src.line, "remove document", r.address, None))
        for path in self.manifest_files:
            if not os.path.isfile(path):
                continue
            pf = self.yaml(path)
            for d in pf.docs:
                if d.index not in pf.removed_docs and _patches(pf, d, r):
                    pf.remove_document(d)
                    self.result.edits.append(Edit(r.address, "", path, d.root.line if d.root else 1,
                                                  "remove document", f"Patch of {r.address}", None))


def _patches(f: YamlFile, d: Doc, r: DesiredResource) -> bool:
    root = d.root
    if root is None or root.kind != "map":
        return False

    def text(key: str) -> str | None:
        node = root.child(key)
        return node.text if node is not None and node.kind == "scalar" else None

    return (text("kind") == "Patch" and text("target") == f"{r.kind}/{r.name}"
            and (r.space is None or text("space") == r.space))


def _canon(value: Any) -> str:
    if value is ABSENT:
        return "\x00absent"
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
