"""``reconciler pull``: every difference live has on a declared resource, written back where the
manifests declare the value (docs/manifests.md, "Two writers").

For each declared resource, ``plan.liveview`` says which declared fields differ live (as the
planner compares them) and the value that makes the next plan empty. Each is routed to where it is
written: the manifest's own line; a Patch's line (the value a Patch sets); a var file's line (a
whole value from a variable; a ``${var.X}`` inside a string when the rest of the string still
matches); the line of an ``examples_file`` (an example replaced, removed or appended). A value from
``--var`` or the environment is not written and is named, and so is every write-only field.

Pull's promise holds for every tree that loads a file it writes (product section 8). A file is
*shared* when other environments load it: the files another environment's tree loads (``others``),
and, in a tree with an overlay (a var file, or Patch documents), every file outside the overlay's
folders (the base). A shared value (in a shared file, or a variable that other declarations also
use) is written into this environment's overlay as a Patch, or listed when it has none. A declared
resource absent live is listed ("declared, not live"), and removed only with ``remove_absent`` or,
with ``--since``, when REF already declared it. A value the tree cannot hold is listed. The edited
tree is loaded (its texts staged, no file replaced) and checked before anything is written.
With ``--since REF``, a field changed in the tree since REF that live changed to something else is
a conflict: neither side is written.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from reconciler.errors import ManifestError
from reconciler.fieldkinds import ABSENT
from reconciler.kinds import PROMPT, RESTRICTION
from reconciler.manifests.ignores import path_matches
from reconciler.model import DesiredResource, LiveState, ManifestSet, Source
from reconciler.plan.ignore import Rule, rules_for, take_live
from reconciler.plan.liveview import ExamplesEdit, FieldEdit
from reconciler.plan.registry import resource_diff
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


#: Characters YAML (and a JSONL file's lines) read as line breaks: a string holding one cannot be written back.
_BREAKS = ("\u2028", "\u2029", "\u0085")
_PATCH_DOC = re.compile(r"^kind:[ \t]*[\"']?Patch\b", re.MULTILINE)


@dataclass(frozen=True)
class Tree:
    """One environment's tree as a command line loads it. ``Puller`` takes the one it runs on and
    the others that may load its files (``pull --env NAME``: every other environment of reconciler.yaml)."""

    paths: tuple[str, ...]
    variables: tuple[str, ...] = ()
    var_files: tuple[str, ...] = ()
    name: str = ""

    def load(self) -> ManifestSet:
        from reconciler.manifests.loader import load_manifests

        return load_manifests(self.paths, var_assignments=self.variables, var_files=self.var_files)

    def files(self) -> set[str]:
        """Every file it loads (real paths): manifests, var files and examples files."""
        from reconciler.manifests.loader import manifest_files

        found = [f for f in manifest_files(self.paths, []) if f != "-"]
        try:
            loaded = self.load()
        except ManifestError:
            loaded = None
        examples = [src.file for r in (loaded.resources if loaded is not None else ())
                    if (src := r.sources.get("examples.0")) is not None]
        return {os.path.realpath(f) for f in [*found, *self.var_files, *examples]}

    def __str__(self) -> str:
        return self.name or " ".join(self.paths)


@dataclass
class PullResult:
    edits: list[Edit] = field(default_factory=list)
    not_written: list[NotWritten] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    files: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (text before, text after)
    boms: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # what was not compared (not a difference)
    errors: list[str] = field(default_factory=list)  # why nothing may be written (the edited tree does not load)

    def exit_code(self) -> int:
        """1 with a conflict or an error, else 2 with a difference (an edit, or a value not written), else 0."""
        return 1 if self.conflicts or self.errors else (2 if self.edits or self.not_written else 0)

    def diff(self) -> str:
        out: list[str] = []
        for path, (before, after) in self.files.items():
            lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                         fromfile=f"a/{path}", tofile=f"b/{path}")
            for line in lines:
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def write(self) -> None:
        """Write every edited file through the project's atomic writer (``files.write_private``: a
        temporary file of an unpredictable name, renamed over the target, never through a symbolic
        link), each keeping its mode. Every target is checked before the first is replaced."""
        from reconciler.files import refuse_symlink, write_private

        if self.errors:
            return
        for path in self.files:
            refuse_symlink(Path(path), "pull:")
        for path, (_, after) in self.files.items():
            mode = os.stat(path).st_mode & 0o7777
            write_private(Path(path), ("\ufeff" if self.boms.get(path) else "") + after, what="pull:", mode=mode)

    def to_json(self, written: bool, unmanaged_written: list[str]) -> dict[str, Any]:
        return {"edits": [_as_json(e) for e in self.edits],
                "not_written": [_as_json(n) for n in self.not_written],
                "conflicts": [_as_json(c) for c in self.conflicts], "warnings": list(self.warnings),
                "errors": list(self.errors), "files": list(self.files), "written": written, "diff": self.diff(),
                "unmanaged_written": unmanaged_written}


@dataclass
class _Loc:
    file: YamlFile
    doc: Doc
    node: Node


@dataclass
class _VarLoc:
    """A value set by a variable: where the variable is set, and its new value (``whole``: the value
    is the variable; else the variable is one ``${var.X}`` of a string)."""

    loc: _Loc
    via: str
    value: Any
    whole: bool


@dataclass
class _VarWant:
    r: DesiredResource
    path: str
    old: Any
    new: Any
    at: _VarLoc


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


def _get(spec: Any, path: str) -> Any:
    value: Any = spec
    for part in path.split(".") if path else []:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return ABSENT
    return value


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _breaks(value: Any) -> bool:
    if isinstance(value, str):
        return any(c in value for c in _BREAKS)
    if isinstance(value, Mapping):
        return any(_breaks(k) or _breaks(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_breaks(v) for v in value)
    return False


def _unignored(edit: FieldEdit, rules: Sequence[Rule]) -> FieldEdit | None:
    """The edit without what ``ignore_changes`` covers (None: nothing left). A rule inside a
    free-form object keeps the declared value of the keys it names."""
    if any(path_matches(rule.field, edit.path) for rule in rules):
        return None
    new = edit.new
    for rule in rules:
        if isinstance(edit.old, dict) and isinstance(new, dict) and path_matches(edit.path, rule.field):
            kept = take_live(copy.deepcopy(new), edit.old, rule.field.split(".")[len(edit.path.split(".")):])
            new = kept if kept is not None else new
    if new is not edit.new and _canon(new) == _canon(edit.old):
        return None
    return FieldEdit(edit.path, edit.old, new) if new is not edit.new else edit


def _versioned(paths: Sequence[str]) -> bool:
    return any(p.startswith("template_config.") or (p.startswith("version.") and p not in (
        "version.labels", "version.commit_message")) for p in paths)


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".") or not a or not b


def _set_in(spec: Any, path: str, value: Any) -> None:
    """Set a dotted path through mappings and lists (``ABSENT`` removes a key, or a list item)."""
    parts = path.split(".")
    node = spec
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        if value is ABSENT:
            del node[int(last)]
        elif int(last) < len(node):
            node[int(last)] = copy.deepcopy(value)
        else:
            node.append(copy.deepcopy(value))
    elif value is ABSENT:
        node.pop(last, None)
    else:
        node[last] = copy.deepcopy(value)


def _replacing(current: Any, want: Any) -> Any:
    """The merge patch value that turns ``current`` into ``want``: a mapping is merged, not replaced,
    so each key of ``current`` that ``want`` lacks is given as null (removed)."""
    if not isinstance(current, Mapping) or not isinstance(want, dict):
        return want
    return {**{k: None for k in current if k not in want}, **{k: _replacing(current.get(k), v) for k, v in want.items()}}


def _merge(current: Any, patch: Any) -> Any:
    if not isinstance(current, dict) or not isinstance(patch, dict):
        return patch
    out = dict(current)
    for k, v in patch.items():
        out[k] = _merge(out.get(k), v)
    return out


def _patch_files(files: Sequence[str]) -> set[str]:
    """The real paths of the files that hold a Patch document."""
    return {os.path.realpath(f) for f in files if f != "-" and os.path.isfile(f)
            and _PATCH_DOC.search(Path(f).read_bytes().decode("utf-8", "replace"))}


def _overlay_roots(tree: Tree, patch_files: set[str]) -> list[str]:
    """The paths of ``tree`` that are its overlay: those holding its var files or Patch documents."""
    var_files = [os.path.realpath(v) for v in tree.var_files]
    return [root for root in (os.path.realpath(p) for p in tree.paths if p != "-")
            if any(_under(f, root) for f in [*patch_files, *var_files])]


def sibling_environments(tree: Tree) -> list[Tree]:
    """The other environments a tree laid out as base and overlays holds (``overlays/staging`` next
    to ``overlays/production``): for each overlay folder of ``tree``, each sibling folder with
    manifests, loaded with the same base and the sibling's var files of the same names: the ones pull
    protects when run on PATHs (with ``--env NAME``, the environments of reconciler.yaml instead)."""
    from reconciler.manifests.loader import manifest_files

    given = {os.path.realpath(p) for p in tree.paths if p != "-"}
    patch_files = _patch_files(manifest_files([p for p in tree.paths if p != "-"], []))
    out: list[Tree] = []
    roots = set(_overlay_roots(tree, patch_files))
    for written in tree.paths:  # each overlay folder as the command line wrote it
        root = os.path.realpath(written) if written != "-" else ""
        if root not in roots or not os.path.isdir(written):
            continue
        parent = os.path.dirname(os.path.normpath(written))
        for name in sorted(os.listdir(parent or ".")):
            sibling = os.path.join(parent, name)
            if name.startswith(".") or not os.path.isdir(sibling) or os.path.realpath(sibling) in given:
                continue
            own_vars = [os.path.relpath(os.path.realpath(v), root) for v in tree.var_files
                        if _under(os.path.realpath(v), root)]
            theirs = [os.path.join(sibling, v) for v in own_vars]
            # an environment like this one: its var files of the same names, or Patches of its own
            if not ((theirs and all(os.path.isfile(v) for v in theirs))
                    or _patch_files(manifest_files([sibling], []))):
                continue
            paths = tuple(sibling if p == written else p for p in tree.paths)
            var_files = tuple(os.path.join(sibling, os.path.relpath(os.path.realpath(v), root))
                              if _under(os.path.realpath(v), root) else v for v in tree.var_files)
            out.append(Tree(paths, tree.variables, tuple(v for v in var_files if os.path.isfile(v)), name))
    return out


class Puller:
    """One pull: the manifests, the live state they were compared with, and where values are written.

    ``tree``: the command line's tree (loaded again, its edits staged, before anything is written);
    ``others``: the other environments that may load its files; ``remove_absent``: a declared
    resource absent live has its document removed."""

    def __init__(self, manifests: ManifestSet, live: LiveState, files: Sequence[str] = (),
                 base: Mapping[tuple[str, ...], DesiredResource] | None = None, *, tree: Tree | None = None,
                 others: Sequence[Tree] = (), remove_absent: bool = False) -> None:
        self.manifests = manifests
        self.live = live
        self.manifest_files = list(files)
        self.base = base
        self.tree = tree
        self.others = list(others)
        self.remove_absent = remove_absent
        self.result = PullResult()
        self.restrictions_hidden = False
        self._yaml: dict[str, YamlFile] = {}
        self._text: dict[str, tuple[str, str]] = {}  # other files (examples): before, after
        self._written: dict[tuple[str, int], Any] = {}  # (file, node start) -> value written there
        self._var_wants: dict[str, list[_VarWant]] = {}
        self._overlay: dict[tuple[str, ...], tuple[DesiredResource, dict[str, Any], dict[str, str]]] = {}
        self._left: set[tuple[str, str]] = set()  # (address, path) left alone on purpose (ignored, not applied)
        self._whole: set[str] = set()  # addresses accounted for whole (absent live)
        self._classify()

    # ------------------------------------------------------------------ files

    def yaml(self, path: str) -> YamlFile:
        found = self._yaml.get(path)
        if found is None:
            found = self._yaml[path] = YamlFile(path, Path(path).read_bytes())
        return found

    def _classify(self) -> None:
        """Which files other environments load too, and where a new Patch of this environment goes
        (the last of its own files that holds Patches, in its overlay's folders)."""
        self.elsewhere: set[str] = set()
        for other in self.others:
            self.elsewhere |= other.files()
        patch_files = _patch_files(self.manifest_files)
        own_dirs = _overlay_roots(self.tree, patch_files) if self.tree is not None else []
        own = [f for f in self.manifest_files if os.path.isfile(f) and not self.shared(f)]
        homes = [f for f in own if os.path.realpath(f) in patch_files] or \
            [f for f in own if any(_under(os.path.realpath(f), d) for d in own_dirs)]
        self.patch_home: str | None = homes[-1] if homes else None

    def shared(self, path: str) -> bool:
        """Whether another environment loads ``path`` (an edit there would change its plan)."""
        return bool(self.elsewhere) and os.path.realpath(path) in self.elsewhere

    # ------------------------------------------------------------------ the run

    def run(self) -> PullResult:
        # a key that cannot see restrictions (a reader key) must not pull "restricted: false" nor
        # remove ResourceRestriction documents: as plan and drift, pull leaves them out, with one warning
        self.restrictions_hidden = restrictions_unseen(self.manifests.resources, self.live)
        left_out: list[str] = []
        for r in self.manifests.resources:
            if self.restrictions_hidden and r.kind == RESTRICTION.name:
                left_out.append(r.address)
                self._whole.add(r.address)
                continue
            if self.restrictions_hidden and r.kind == PROMPT.name and "restricted" in r.spec:
                left_out.append(f"{r.address} (restricted)")
            self.pull_resource(r)
        if left_out:
            self.result.warnings.append(
                "restrictions were not compared: the API key sees no resource restriction (a read-only key "
                "manages none), so these are left out: " + ", ".join(left_out))
        self._settle_variables()
        self._write_overlays()
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
        self._verify()
        return self.result

    def pull_resource(self, r: DesiredResource) -> None:
        diff = resource_diff(r, self.live)
        rules = rules_for(r, self.manifests.ownership)

        if diff.missing:
            self.absent(r)
            return
        self.result.not_written.extend(NotWritten(r.address, "", note.partition(": ")[2] or note)
                                       for note in diff.notes)
        base = self.base.get(r.identity) if self.base is not None else None
        kept: list[FieldEdit] = []
        for e in diff.edits:
            left = _unignored(e, rules)
            if left is None or (self.restrictions_hidden and e.path == "restricted"):
                self._left.add((r.address, e.path))
            else:
                kept.append(left)
        versioned = _versioned([e.path for e in kept])
        for edit in kept:
            if edit.path in ("commit_message", "version.commit_message") and not versioned:
                self._left.add((r.address, edit.path))
                continue  # the message follows a version whose fields are pulled, not an ignored one
            if self.agreed(r, base, edit.path, edit.old, edit.new):
                self.write(r, edit.path, edit.old, edit.new, None)
            else:
                self._left.add((r.address, edit.path))
        if diff.examples and any(path_matches(rule.field, "examples") for rule in rules):
            self._left.add((r.address, "examples"))
        elif diff.examples:
            examples = self.holdable_examples(r, diff.examples)
            old = list(r.spec.get("examples") or [])
            new = examples.applied(old)
            if not examples:
                return
            if self.agreed(r, base, "examples", old, new):
                self.write_examples(r, old, new, examples)
            else:
                self._left.add((r.address, "examples"))

    def absent(self, r: DesiredResource) -> None:
        """A declared resource that does not exist live: listed; removed with ``--remove-absent``, or
        with ``--since REF`` when REF declared it (deleted in the UI); one added since REF is an
        apply not made yet."""
        self._whole.add(r.address)
        at_ref = self.base is not None and r.identity in self.base
        if self.remove_absent or at_ref:
            self.remove_resource(r)
        elif self.base is None:
            self.result.not_written.append(NotWritten(
                r.address, "", "declared, not live: apply creates it (pull removes its document with "
                "--remove-absent, or with --since REF when REF declared it)"))

    def holdable_examples(self, r: DesiredResource, edit: ExamplesEdit) -> ExamplesEdit:
        """The examples edit without the live examples the tree cannot hold (listed): one without
        the dataset's key, one holding a line separator."""
        key = r.spec.get("key")  # a dataset's key field (no other kind has a top-level key)

        def bad(example: dict[str, Any]) -> bool:
            return (isinstance(key, str) and key not in example) or _breaks(example)

        dropped = [i for i, e in edit.replace.items() if bad(e)] + \
            [len(r.spec.get("examples") or []) + n for n, e in enumerate(edit.append) if bad(e)]
        if not dropped:
            return edit
        why = (f"without the dataset's key '{key}' or " if isinstance(key, str) else "") + \
            "holding a line separator (U+2028, U+2029 or U+0085)"
        self.result.not_written.append(NotWritten(
            r.address, "examples", f"{len(dropped)} live example(s) {why}: the tree cannot hold them; not written, "
            "nor any example removed (one may be such an example)"))
        return ExamplesEdit({i: e for i, e in edit.replace.items() if not bad(e)}, [],
                            [e for e in edit.append if not bad(e)])

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

    def locate(self, r: DesiredResource, path: str, new: Any = ABSENT) -> _Loc | _VarLoc | str | None:
        """Where ``path`` of ``r`` is written (a node), or why it cannot be written (a string), or
        None when only a parent records it; a value from a variable: where the variable is set."""
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
            var = self.variable(src.via)
            return _VarLoc(var, src.via, new, True) if isinstance(var, _Loc) else var
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

    def _solve(self, via: str, node: Node, new: Any) -> _VarLoc | str | None:
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
        return _VarLoc(var, via, new[len(head):len(new) - len(tail)], False) if isinstance(var, _Loc) else var

    # ------------------------------------------------------------------ writing

    def write(self, r: DesiredResource, path: str, old: Any, new: Any, fallback: _Loc | None) -> None:
        loc = self.locate(r, path, new)
        if isinstance(loc, _VarLoc):  # settled once every resource is pulled: other users may share it
            self._var_wants.setdefault(loc.via, []).append(_VarWant(r, path, old, new, loc))
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
                if self.shared(ploc.file.path):
                    self.to_overlay(r, path, new, f"declared in {ploc.file.path}, which other environments load")
                elif self.holdable(r, path, new):
                    ploc.file.insert(ploc.doc, ploc.node, key, new)
                    self.result.edits.append(Edit(r.address, path, ploc.file.path, ploc.node.line, "add", None, new))
                return
            self.result.not_written.append(NotWritten(r.address, path, "not found in the manifests: not written"))
            return
        self.write_at(r, path, loc, old, new)

    def write_at(self, r: DesiredResource, path: str, loc: _Loc, old: Any, new: Any) -> None:
        """Write ``new`` at ``loc`` (an own file), or route it to the overlay (a shared one)."""
        node = loc.node
        shared = self.shared(loc.file.path)
        why = f"declared in {loc.file.path}, which other environments load"
        if new is ABSENT:
            if shared:
                self.to_overlay(r, path, new, why)
                return
            self._guard(loc, new)
            loc.file.delete_entry(loc.doc, node)
            self.result.edits.append(Edit(r.address, path, loc.file.path, node.key_line, "remove", old, None))
            return
        # key by key while one declared key stays to anchor the new ones (a block mapping emptied
        # of its last key reads {}, which nothing can be added under): else written whole
        if isinstance(old, dict) and isinstance(new, dict) and node.kind == "map" \
                and ((node.style == "block" and not set(old).isdisjoint(new)) or set(old) == set(new)):
            for k, v in old.items():
                if k not in new or _canon(v) != _canon(new[k]):  # changed, or removed (ABSENT)
                    self.write(r, f"{path}.{k}", v, new.get(k, ABSENT), self._child(loc, k))
            for k, v in new.items():
                if k not in old:
                    if shared:
                        self.to_overlay(r, f"{path}.{k}", v, why)
                    elif self.holdable(r, f"{path}.{k}", v):
                        loc.file.insert(loc.doc, node, k, v)
                        self.result.edits.append(Edit(r.address, f"{path}.{k}", loc.file.path, node.line, "add",
                                                      None, v))
            return
        if shared:
            self.to_overlay(r, path, new, why)
            return
        if not self.holdable(r, path, new):
            return
        if isinstance(old, list) and isinstance(new, list) and node.kind == "seq" and old and new \
                and self._list(r, path, loc, old, new):
            return
        self._put(r, path, loc, new, old)

    def holdable(self, r: DesiredResource, path: str, value: Any) -> bool:
        """Whether the tree can hold ``value`` (else it is listed)."""
        if _breaks(value):
            self.result.not_written.append(NotWritten(
                r.address, path, "live holds a line separator (U+2028, U+2029 or U+0085), which YAML reads as a "
                "line break: the tree cannot hold it; not written"))
            return False
        return True

    def _child(self, loc: _Loc, key: str | int) -> _Loc | None:
        child = loc.node.child(key)
        return _Loc(loc.file, loc.doc, child) if child is not None else None

    def _guard(self, loc: _Loc, value: Any) -> bool:
        """One place written once: two resources sharing a value must agree on it."""
        key = (loc.file.path, loc.node.start)
        if key in self._written:
            if _canon(self._written[key]) != _canon(value):
                self.result.conflicts.append(Conflict(loc.file.path, loc.file.doc_path(loc.node), None,
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

    # ------------------------------------------------------------------ variables and the overlay

    def _variable_users(self) -> dict[str, set[tuple[str, str]]]:
        """Each variable's line (``file:line``) -> the (address, path) of every value it sets."""
        users: dict[str, set[tuple[str, str]]] = {}
        holders: list[tuple[str, Mapping[str, Source]]] = [(r.address, r.sources) for r in self.manifests.resources]
        if self.manifests.ownership is not None:
            holders.append((f"Ownership/{self.manifests.ownership.name}", self.manifests.ownership.sources))
        for address, sources in holders:
            for path in sources:
                via = sources[path].via
                if via:
                    for one in via.split(", "):
                        users.setdefault(one, set()).add((address, path))
        return users

    def _settle_variables(self) -> None:
        """A variable is written once, when every value it sets wants the same new value; else each
        edit goes to this environment's overlay (or is listed)."""
        if not self._var_wants:
            return
        users = self._variable_users()
        for via, wants in self._var_wants.items():
            wanting = {(w.r.address, w.path) for w in wants}
            others = sorted(f"{a} {p}" for a, p in users.get(via, set()) - wanting)
            values = {_canon(w.at.value) for w in wants}
            if others:
                why = f"set by {via}, which also sets {', '.join(others[:4])}" + (" and more" if len(others) > 4 else "")
            elif len(values) > 1:
                why = f"set by {via}, for which live has different values ({', '.join(w.r.address for w in wants)})"
            elif self.shared(wants[0].at.loc.file.path):
                why = f"set by {via}, which other environments load"
            else:
                w = wants[0]
                if not self.holdable(w.r, w.path, w.at.value):
                    continue
                if w.at.whole:
                    self.write_at(w.r, w.path, w.at.loc, w.old, w.new)
                else:
                    self._put(w.r, w.path, w.at.loc, w.at.value, w.old)
                continue
            for w in wants:
                self.to_overlay(w.r, w.path, w.new, why)

    def to_overlay(self, r: DesiredResource, path: str, new: Any, why: str) -> None:
        """A shared value: written in a Patch of this environment's overlay (or listed)."""
        entry = self._overlay.setdefault(r.identity, (r, {}, {}))
        entry[1][path] = new
        entry[2][path] = why

    def _write_overlays(self) -> None:
        for r, wanted, reasons in self._overlay.values():
            home = self.patch_home
            held = {p: v for p, v in wanted.items() if v is ABSENT or self.holdable(r, p, v)}
            if not held:
                continue
            if home is None:
                for p in held:
                    self.result.not_written.append(NotWritten(
                        r.address, p, f"{reasons[p]}; this environment has no overlay (a folder with its Patches or "
                        "var file) to write it in: not written"))
                continue
            patch = self._patch_of(r, held)
            f = self.yaml(home)
            existing = [(pf, d) for pf in (self.yaml(p) for p in self.manifest_files
                                           if os.path.isfile(p) and not self.shared(p))
                        for d in pf.docs if d.index not in pf.removed_docs and _patches(pf, d, r)]
            if existing and existing[-1][1].root is not None and \
                    (node := existing[-1][1].root.child("patch")) is not None and node.kind == "map":
                f, doc = existing[-1]
                self._merge_into(f, doc, node, patch)
                line = node.key_line
            else:
                line = f.text.count("\n") + 2
                head: dict[str, Any] = {"kind": "Patch", "target": f"{r.kind}/{r.name}"}
                if r.space is not None:
                    head["space"] = r.space
                f.append_document({**head, "patch": patch})
            for p, v in held.items():
                self.result.edits.append(Edit(r.address, p, f.path, line, "patch", _get(r.spec, p), v))

    def _patch_of(self, r: DesiredResource, wanted: Mapping[str, Any]) -> dict[str, Any]:
        """The merge patch that gives ``r`` the wanted values: a list is patched whole."""
        spec = copy.deepcopy(dict(r.spec))
        for path, want in wanted.items():
            _set_in(spec, path, want)
        patch: dict[str, Any] = {}
        for path in wanted:
            parts = path.split(".")
            cut: list[str] = []
            value: Any = r.spec
            for part in parts:
                if isinstance(value, list):
                    break
                cut.append(part)
                value = value.get(part) if isinstance(value, Mapping) else None
            node = patch
            for part in cut[:-1]:
                node = node.setdefault(part, {})
            got = _get(spec, ".".join(cut))
            node[cut[-1]] = None if got is ABSENT else _replacing(_get(r.spec, ".".join(cut)), got)
        return patch

    def _merge_into(self, f: YamlFile, doc: Doc, node: Node, value: dict[str, Any]) -> None:
        if node.style == "flow" or not node.children:
            import yaml

            current = yaml.safe_load(f.text[node.start:node.end]) or {}
            f.replace(doc, node, _merge(current, value))
            return
        for k, v in value.items():
            child = node.child(k)
            if child is None:
                f.insert(doc, node, k, v)
            elif isinstance(v, dict) and child.kind == "map":
                self._merge_into(f, doc, child, v)
            else:
                f.replace(doc, child, v)

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
        if self.shared(path):
            self.result.not_written.append(NotWritten(r.address, "examples", f"{path} is loaded by other "
                                                      f"environments too ({edit.count()} examples differ): not "
                                                      "written (give this environment its own examples_file)"))
            return
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
        if self.shared(src.file):
            self.result.not_written.append(NotWritten(r.address, "", f"deleted live; its document is in {src.file}, "
                                                      "which other environments load: not removed"))
            return
        f = self.yaml(src.file)  # read above
        f.remove_document(doc)
        self.result.edits.append(Edit(r.address, "", f.path, src.line, "remove document", r.address, None))
        for path in self.manifest_files:
            if not os.path.isfile(path) or self.shared(path):
                continue
            pf = self.yaml(path)
            for d in pf.docs:
                if d.index not in pf.removed_docs and _patches(pf, d, r):
                    pf.remove_document(d)
                    self.result.edits.append(Edit(r.address, "", path, d.root.line if d.root else 1,
                                                  "remove document", f"Patch of {r.address}", None))

    # ------------------------------------------------------------------ the edited tree, checked

    def _verify(self) -> None:
        """Load the edited tree as it will be read (its texts staged; no file replaced) and every other
        environment's: it must load, the others must declare exactly what they declared, and each
        difference left must be listed."""
        if self.tree is None:
            return
        from reconciler.manifests.yamlload import staged

        after = self.manifests
        if self.result.files:
            texts = {os.path.realpath(p): ("\ufeff" if self.result.boms.get(p) else "") + a
                     for p, (_, a) in self.result.files.items()}
            before = [_declared(other) for other in self.others]
            with staged(texts):
                try:
                    after = self.tree.load()
                except ManifestError as exc:
                    self.result.errors.append("the edited tree would not load, so nothing is written:\n" + "\n".join(
                        f"  {p}" for p in exc.problems[:20]))
                    return
                for other, was in zip(self.others, before, strict=True):
                    now = _declared(other)
                    if was is not None and now != was:
                        changed = sorted(a for a in set(was) | set(now or {}) if (now or {}).get(a) != was.get(a))
                        self.result.errors.append(f"the edits would change what environment {other} declares "
                                                  f"({', '.join(changed[:5]) or 'it would not load'}), so nothing "
                                                  "is written")
        self._left_listed(after)

    def _left_listed(self, after: ManifestSet) -> None:
        """Every difference still there after the edits is listed with its reason."""
        listed: dict[str, list[str]] = {}
        for n in self.result.not_written:
            listed.setdefault(n.address, []).append(n.path)
        for c in self.result.conflicts:
            listed.setdefault(c.address, []).append(c.path)
        for a, p in self._left:
            listed.setdefault(a, []).append(p)
        for r in after.resources:
            if r.address in self._whole:
                continue
            diff = resource_diff(r, self.live)
            if diff.missing:
                continue
            rules = rules_for(r, after.ownership)
            left = [e.path for e in diff.edits if _unignored(e, rules) is not None
                    and not (self.restrictions_hidden and e.path == "restricted")]
            if diff.examples and not any(path_matches(rule.field, "examples") for rule in rules):
                left.append("examples")
            if not _versioned(left):
                left = [p for p in left if p not in ("commit_message", "version.commit_message")]
            for p in left:
                if not any(_related(p, q) for q in listed.get(r.address, [])):
                    self.result.not_written.append(NotWritten(r.address, p, "still differs live after the edits "
                                                              "pull can make: not written"))


def _declared(tree: Tree) -> dict[str, str] | None:
    """What a tree declares, resource by resource (None: it does not load)."""
    try:
        loaded = tree.load()
    except ManifestError:
        return None
    return {r.address: _canon({"spec": dict(r.spec), "aliases": list(r.aliases), "ignore": list(r.ignore_changes)})
            for r in loaded.resources}


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
