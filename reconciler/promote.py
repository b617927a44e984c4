"""``reconciler promote FROM TO``: the edits that make TO's desired state of the chosen resources
equal FROM's, written into TO's own files only (README.md, "Promoting one environment's state to
the next").

Kargo, read for this design, promotes *Freight* from one Stage to the next, and its promotion steps
write the new version into the target Stage's own configuration (its overlay directory, its branch),
never into what every Stage shares. Here the tree is the freight: FROM's desired state, resource by
resource and field by field, is compared with TO's (no request: desired state against desired
state), and each difference becomes an edit of a file only TO loads (``own``: TO's files minus every
file another environment of the project loads):

- a value TO writes in a file of its own (its Patch, a document of its overlay) is replaced in place;
- any other value goes into a Patch of TO's overlay (into TO's Patch of that resource when it has one,
  key by key, a flow mapping written again whole; else a new Patch document): RFC 7396, so a value
  FROM leaves unmanaged is ``null`` there;
- a resource only FROM declares is copied, as written (its variables still variables), into TO's
  overlay, and its differences patched the same way;
- what an environment sets on purpose stays, *kept* and listed: a value that comes from a variable on
  either side (a var file, an environment variable), and a value TO sets in its own files over the one
  FROM has from a file both load (TO's overlay overriding the shared base);
- what cannot be written is listed, not written (an explicit ``null`` through a Patch, a resource only
  TO declares, a copied document naming files relative to its own).

The promise is checked before anything is written: TO's tree, its edits staged, is loaded again and
each chosen resource must then differ from FROM's only in the kept values, every other resource of
TO unchanged; so the next ``plan --env TO`` shows exactly the promotion.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.environments import Target, targets
from reconciler.errors import ConfigError, ManifestError
from reconciler.fieldkinds import ABSENT
from reconciler.manifests.yamlload import parse_documents, read_file, staged
from reconciler.model import SPACED_KINDS, DesiredResource, ManifestSet, SecretRef, Source
from reconciler.plan.context import sensitive_ref
from reconciler.plan.ignore import set_path
from reconciler.plan.select import named_by
from reconciler.project import Project, unknown_message
from reconciler.pull.engine import NotWritten, Tree
from reconciler.pull.yamledit import EditError, YamlFile


@dataclass(frozen=True)
class Change:
    """One field of one resource: TO's value before, FROM's value it takes (or keeps: ``Kept``)."""

    address: str
    path: str
    before: Any
    after: Any
    source: str  # where FROM's value is written (file:line, via a variable when it comes from one)

    def __str__(self) -> str:
        return f"{self.address}: {self.path or '(document)'}: {shown(self.before)} -> {shown(self.after)} ({self.source})"


@dataclass(frozen=True)
class Kept:
    """A value of TO that differs from FROM's and stays, set on purpose (``why``: a variable, or TO's
    overlay over the shared base)."""

    address: str
    path: str
    value: Any  # TO's
    theirs: Any  # FROM's
    why: str

    def __str__(self) -> str:
        return f"{self.address}: {self.path}: {shown(self.value)} ({self.why})"


@dataclass
class Promotion:
    """What ``promote`` found: the changes, what it kept, what it could not write, the files edited."""

    source: str
    target: str
    changes: list[Change] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    not_promoted: list[NotWritten] = field(default_factory=list)
    files: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (text before, text after)

    def exit_code(self) -> int:
        """0 nothing to promote, 2 a change (shown or written) or a value not promoted."""
        return 2 if self.changes or self.not_promoted else 0

    def diff(self) -> str:
        out: list[str] = []
        for path, (before, after) in self.files.items():
            old = f"a/{path}"
            for line in difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                             fromfile=old, tofile=f"b/{path}"):
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def write(self) -> None:
        """Every edited file through the project's atomic writer, each keeping its mode;
        every target checked before the first is replaced."""
        from reconciler.files import refuse_symlink, write_private

        for path in self.files:
            refuse_symlink(Path(path), "promote:")
        for path, (_, after) in self.files.items():
            mode = os.stat(path).st_mode & 0o7777
            write_private(Path(path), after, what="promote:", mode=mode)

    def to_json(self, written: bool) -> dict[str, Any]:
        def row(item: Change | Kept | NotWritten) -> dict[str, Any]:
            return {k: _plain(v) for k, v in vars(item).items()}

        return {"from": self.source, "to": self.target, "changes": [row(c) for c in self.changes],
                "kept": [row(k) for k in self.kept], "not_promoted": [row(n) for n in self.not_promoted],
                "files": list(self.files), "written": written, "diff": self.diff()}


def shown(value: Any) -> str:
    if value is ABSENT:
        return "(not set)"
    text = json.dumps(_plain(value), ensure_ascii=False, sort_keys=False)
    return text if len(text) <= 100 else text[:97] + "..."


def _plain(value: Any) -> Any:
    """A value as JSON shows it: a secret as its reference (never a value: none is read here)."""
    if value is ABSENT:
        return None
    if isinstance(value, SecretRef):
        return sensitive_ref(value)  # as a plan shows it
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ---------------------------------------------------------------- choosing


def check_pair(project: Project, source: str, target: str) -> tuple[str, str]:
    """FROM and TO named in the project (did-you-mean and the list), and two different ones."""
    for name in (source, target):
        if name not in project.model.environments:
            raise ConfigError(f"promote: {unknown_message(name, project.names)} in {project.file}")
    if source == target:
        raise ConfigError(f"promote {source} {target}: FROM and TO are one environment; name two of "
                          f"{', '.join(project.names)}")
    return source, target


def own_files(project: Project, target: Target, every: Sequence[Target]) -> tuple[set[str], set[str]]:
    """TO's files (real paths) and, of them, those no other environment of the project loads."""
    mine = _tree(target).files()
    elsewhere: set[str] = set()
    for other in every:
        if other.name != target.name:
            elsewhere |= _tree(other).files()
    return mine, mine - elsewhere


def _tree(t: Target) -> Tree:
    return Tree(t.paths, (), t.var_files, t.name)


def _load(t: Target) -> ManifestSet:
    from reconciler.manifests.loader import load_manifests

    return load_manifests(t.paths, var_files=t.var_files)


# ---------------------------------------------------------------- comparing


def _key(r: DesiredResource) -> tuple[str, str, str | None]:
    """How one resource is recognised in two environments: kind and name, and its space unless the
    space comes from a variable (each environment's own space)."""
    space = r.space if r.space is not None and not _via(r, "space") else None
    return r.kind, r.name, space


def _via(r: DesiredResource, path: str) -> str | None:
    """Where the variable that sets ``path`` (or a field around or inside it) is defined, if one does."""
    for at, src in r.sources.items():
        if src.via and (at == path or at.startswith(path + ".") or path.startswith(at + ".") or not path):
            return src.via
    return None


def _leaves(before: Any, after: Any, path: str) -> list[tuple[str, Any, Any]]:
    """The paths where two specs differ: mappings walked, anything else (lists included) compared whole."""
    if _same(before, after):
        return []
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        found: list[tuple[str, Any, Any]] = []
        for k in [*before, *(k for k in after if k not in before)]:
            found += _leaves(before.get(k, ABSENT), after.get(k, ABSENT), f"{path}.{k}" if path else str(k))
        return found
    return [(path, before, after)]


def _same(a: Any, b: Any) -> bool:
    return a is b or (a is not ABSENT and b is not ABSENT and type(a) is type(b) and a == b)


def _compared(r: DesiredResource) -> dict[str, Any]:
    """The document as promote compares it: the spec, a dataset's examples through its ``examples_file``
    (the name the document writes), not the examples read from it; and the lifecycle fields it sets
    (``aliases``, ``protect``, ``ignore_changes``), as a Patch writes them."""
    spec = dict(r.spec)
    if "examples_file" in spec:
        spec.pop("examples", None)
    if r.aliases:
        spec["aliases"] = list(r.aliases)
    if r.protect:
        spec["protect"] = True
    if r.ignore_changes:
        spec["ignore_changes"] = list(r.ignore_changes)
    return spec


def _nearest(r: DesiredResource, path: str) -> Source | None:
    """Where the value at ``path`` is written: at it, else at the nearest field around it, else the
    document; unless a later file wrote inside it (a Patch's ``{env: NAME}`` over a base secret
    reference marks ``config.api_key.env``): then that file."""
    parts = path.split(".")
    while parts and ".".join(parts) not in r.sources:
        parts.pop()
    found = r.sources.get(".".join(parts)) if parts else r.sources.get("")
    inside = [src for at, src in r.sources.items() if path and at.startswith(path + ".")
              and (found is None or src.file != found.file)]
    return inside[-1] if inside else found


def _source(r: DesiredResource, path: str) -> str:
    src = _nearest(r, path)
    return str(src) if src is not None else "?"


# ---------------------------------------------------------------- the promotion


class Promoter:
    """One promotion: FROM's and TO's trees, TO's own files, and the edits staged in them."""

    def __init__(self, project: Project, source: str, target: str, globs: Sequence[str] = ()) -> None:
        self.project = project
        every = targets(project, project.names, None, keys=False)
        self.source = next(t for t in every if t.name == source)
        self.target = next(t for t in every if t.name == target)
        self.globs = tuple(globs)
        self.mine, self.own = own_files(project, self.target, every)
        self.home = self._home()
        self.result = Promotion(source, target)
        self._yaml: dict[str, YamlFile] = {}
        self._touched: list[tuple[str, int, int]] = []  # (file, start, end) of each value replaced in place

    def _home(self) -> str:
        """Where a new Patch of TO goes: the last file of TO's own that holds a Patch, else the last of
        its own manifest files. None: TO has no overlay, and nothing can be promoted into it (refused
        before anything is compared)."""
        from reconciler.manifests.loader import manifest_files

        var_files = {os.path.realpath(v) for v in self.target.var_files}
        own = [f for f in manifest_files(list(self.target.paths), [])
               if os.path.realpath(f) in self.own and os.path.realpath(f) not in var_files]
        with_patches = [f for f in own if "Patch" in Path(f).read_text(encoding="utf-8", errors="replace")]
        if with_patches or own:
            return (with_patches or own)[-1]
        raise ConfigError(f"environment {self.target.name} has no overlay to promote into: every manifest it loads "
                          f"({', '.join(self.target.paths)}) is loaded by another environment too. Give it a file "
                          f"of its own (e.g. overlays/{self.target.name}/patches.yaml, empty to start with) and "
                          f"name its directory in its paths at "
                          f"{self.project.at(f'environments.{self.target.name}.paths')}")

    def chosen(self, r: DesiredResource) -> bool:
        """Named by ``--target`` as plan's ``--target`` names it (``KIND/SPACE/NAME``, or ``KIND/NAME`` in any space)."""
        return not self.globs or named_by(self.globs, r.address, f"{r.kind}/{r.name}")

    def run(self) -> Promotion:
        theirs, before = _load(self.source), _load(self.target)
        mine = {_key(r): r for r in before.resources}
        new: list[DesiredResource] = []
        for r in theirs.resources:
            counterpart = mine.get(_key(r))
            if counterpart is None:
                if self.chosen(r):
                    new.append(r)
            elif self.chosen(r) or self.chosen(counterpart):
                self.promote(r, counterpart)
        theirs_keys = {_key(r) for r in theirs.resources}
        for r in before.resources:
            if _key(r) not in theirs_keys and self.chosen(r):
                self.result.not_promoted.append(NotWritten(
                    r.address, "", f"declared by {self.target.name} only: promote removes nothing (delete its "
                    f"document by hand if {self.source.name} dropped it)"))
        if new:
            self.copy_documents(new)
            after = self._staged_load()
            mine_now = {_key(r): r for r in after.resources}
            for r in new:
                if _key(r) in mine_now:
                    self.promote(r, mine_now[_key(r)], created=True)
        self._render()
        self._verify(theirs, before)
        return self.result

    # ------------------------------------------------------------ one resource

    def promote(self, theirs: DesiredResource, mine: DesiredResource, created: bool = False) -> None:
        """Each field where TO differs from FROM: kept (``_kept`` says why), or written into TO's files."""
        patch: dict[str, Any] = {}
        for path, old, new in _leaves(_compared(mine), _compared(theirs), ""):
            why = self._kept(mine, theirs, path)
            if why is not None:
                self.result.kept.append(Kept(mine.address, path, old, new, f"{why}; {self.source.name} has "
                                             f"{shown(new)}"))
                continue
            change = Change(mine.address, path, old, new,
                            _source(theirs, path) if new is not ABSENT else f"not set in {self.source.name}")
            if not self._in_place(mine, path, new):
                if new is None:
                    self.result.not_promoted.append(NotWritten(
                        mine.address, path, "an explicit null cannot be written by a Patch (RFC 7396: null removes "
                        f"the key); write it in the document {self.target.name} loads"))
                    continue
                set_path(patch, path, None if new is ABSENT else self._written(new))
            if not created:
                self.result.changes.append(change)
        if patch:
            self._add_patch(mine, patch)
        if created:
            self.result.changes.append(Change(mine.address, "", ABSENT, "(declared)", _source(theirs, "")))

    def _kept(self, mine: DesiredResource, theirs: DesiredResource, path: str) -> str | None:
        """Why TO's value at ``path`` is its own on purpose (None: it is promoted): a variable sets it
        on either side; or TO sets it in a file of its own (its overlay) over the value FROM has from a
        file TO loads too (the shared base): TO overrides what FROM merely inherits."""
        via = _via(mine, path) or _via(theirs, path)
        if via is not None:
            return f"{self.target.name if _via(mine, path) else self.source.name}'s variable, {via}"
        here, there = _nearest(mine, path), _nearest(theirs, path)
        if here is not None and there is not None and os.path.realpath(here.file) in self.own \
                and os.path.realpath(there.file) in self.mine - self.own:
            return f"{self.target.name}'s own value, {here}, over the shared {there}"
        return None

    def _in_place(self, r: DesiredResource, path: str, new: Any) -> bool:
        """Replace TO's value where TO writes it, when that is a file of its own (its Patch, or a
        document of its overlay); False when it is written elsewhere (a shared file) or nowhere."""
        src = r.sources.get(path)
        if src is None or os.path.realpath(src.file) not in self.own or not src.file.endswith((".yaml", ".yml")):
            return False
        f = self.yaml(src.file)
        found = f.find(src.line, src.column, [path, f"patch.{path}"])
        if found is None:
            return False
        doc, at, node = found
        in_patch = at.startswith("patch.")
        try:
            if new is ABSENT and not in_patch:
                f.delete_entry(doc, node)
            elif new is None and in_patch:
                return False
            else:
                f.replace(doc, node, None if new is ABSENT else self._written(new))
        except EditError:
            return False
        self._touched.append((f.path, node.start, node.end))
        return True

    def _written(self, value: Any) -> Any:
        """A value as TO's overlay writes it: a secret as its reference (a file's relative to the overlay)."""
        if isinstance(value, SecretRef):
            ref = value.ref if value.source == "env" else os.path.relpath(value.ref, os.path.dirname(
                os.path.abspath(self.home)))
            return {value.source: ref}
        if isinstance(value, Mapping):
            return {k: self._written(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._written(v) for v in value]
        return value

    def _add_patch(self, r: DesiredResource, patch: dict[str, Any]) -> None:
        """Into TO's Patch of ``r`` in its overlay file when it has one (each key where it belongs),
        else as a new Patch document at the end of that file."""
        f = self.yaml(self.home)
        found = self._patch_node(f, r)
        if found is not None and self._mergeable(f, found[1], patch, found[2]):
            self._merge_into(f, found[0], found[1], patch, found[2])
            return
        document: dict[str, Any] = {"kind": "Patch", "target": f"{r.kind}/{r.name}"}
        if r.kind in SPACED_KINDS:
            document["space"] = r.space
        document["patch"] = patch
        f.append_document(document)

    def _mergeable(self, f: YamlFile, node: Any, patch: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
        """Whether ``patch`` goes into the Patch's block mapping ``node`` (whose value is ``current``):
        a flow mapping on the way is rewritten whole, unless a value inside it was replaced in place."""
        for key, value in patch.items():
            child = node.child(key)
            if child is None or not isinstance(value, dict):
                continue
            if child.kind == "map" and child.style == "block" and child.children:
                if not self._mergeable(f, child, value, current[key]):
                    return False
            elif child.kind != "map" or not isinstance(current.get(key), dict) or any(
                    path == f.path and child.start <= start and end <= child.end for path, start, end in self._touched):
                return False
        return True

    def _merge_into(self, f: YamlFile, doc: Any, node: Any, patch: Mapping[str, Any],
                    current: Mapping[str, Any]) -> None:
        """Each key of ``patch`` into the block mapping ``node`` (its value ``current``): into the block
        mappings it has first, then the new keys, in order (a new key and one of a nested mapping's go
        to the same place, the end of ``node``, and the one spliced there first comes first); a flow
        mapping is written again whole, ``patch``'s keys merged into it."""
        for key, value in patch.items():
            child = node.child(key)
            if child is not None and isinstance(value, dict) and child.style == "block":
                self._merge_into(f, doc, child, value, current[key])
            elif child is not None and isinstance(value, dict):
                f.replace(doc, child, _merged(current[key], value))
            elif child is not None:
                f.replace(doc, child, value)
        for key, value in patch.items():
            if node.child(key) is None:
                f.insert(doc, node, key, value)

    def _patch_node(self, f: YamlFile, r: DesiredResource) -> tuple[Any, Any, dict[str, Any]] | None:
        """The ``patch:`` mapping (block, not empty) of the last Patch of ``r`` in ``f``, and its value."""
        if not f.text:
            return None
        problems: list[Any] = []
        docs = parse_documents(f.text, f.path, problems)
        found = None
        for parsed, d in zip(docs, [d for d in f.docs if d.root is not None], strict=False):
            v = parsed.value
            if isinstance(v, dict) and v.get("kind") == "Patch" and v.get("target") == f"{r.kind}/{r.name}" \
                    and (r.kind not in SPACED_KINDS or v.get("space") == r.space) and d.root is not None \
                    and isinstance(v.get("patch"), dict):
                node = d.root.child("patch")
                if node is not None and node.kind == "map" and node.style == "block" and node.children:
                    found = (d, node, v["patch"])
        return found

    # ------------------------------------------------------------ new resources

    def copy_documents(self, new: Iterable[DesiredResource]) -> None:
        """A resource only FROM declares: its document as written (variables and all) at the end of
        TO's overlay file; one naming a file relative to itself is listed instead."""
        f = self.yaml(self.home)
        for r in new:
            src = r.sources.get("")
            raw = self._raw_document(src.file, src.line) if src is not None else None
            if raw is None or _names_files(raw):
                self.result.not_promoted.append(NotWritten(
                    r.address, "", f"declared by {self.source.name} only, in a document that names files "
                    f"relative to it (examples_file, {{file: ...}}): copy it into {self.target.name}'s overlay "
                    "by hand"))
                continue
            if r.space is not None and not _via(r, "space") and self.source.account == self.target.account:
                self.result.not_promoted.append(NotWritten(
                    r.address, "", f"declared by {self.source.name} only, in its space {r.space} (written as is) of "
                    f"the account {self.target.name} shares: copied, {self.target.name} would manage "
                    f"{self.source.name}'s space; write its space as a variable ({{var: space}}) first"))
                continue
            f.append_document(raw)

    def _raw_document(self, file: str, line: int) -> dict[str, Any] | None:
        problems: list[Any] = []
        text = read_file(file, file, problems)
        if text is None:
            return None
        docs = [d for d in parse_documents(text, file, problems) if d.line <= line]
        value = docs[-1].value if docs else None
        return value if isinstance(value, dict) else None

    # ------------------------------------------------------------ files

    def yaml(self, path: str) -> YamlFile:
        found = self._yaml.get(path)
        if found is None:
            found = self._yaml[path] = YamlFile(path, Path(path).read_bytes())
        return found

    def _render(self) -> None:
        for path, f in self._yaml.items():
            if not f.edited:
                continue
            try:
                after = f.render()
            except EditError as exc:
                raise ConfigError(f"promote: {exc}") from None
            self.result.files[path] = (("\ufeff" if f.bom else "") + f.text, after)

    def _staged_load(self) -> ManifestSet:
        texts: dict[str, str] = {}
        for path, f in self._yaml.items():
            if f.edited:
                texts[os.path.realpath(path)] = f.render()
        with staged(texts):
            return _load(self.target)

    def _verify(self, theirs: ManifestSet, before: ManifestSet) -> None:
        """The promise, on TO's tree loaded with the edits staged: only TO's own files edited; each
        chosen resource differs from FROM's only where a value is kept or listed; every other resource
        of TO as it was."""
        for path in self.result.files:
            if os.path.realpath(path) not in self.own:
                raise ConfigError(f"promote: {path} is loaded by another environment; nothing written")
        if not self.result.files:
            return
        try:
            after = self._staged_load()
        except ManifestError as exc:
            raise ManifestError([f"[{self.target.name}, promoted] {p}" for p in exc.problems]) from None
        problems = check_promise(theirs, before, after, self.chosen, self.result)
        if problems:
            raise ConfigError("promote: the edited tree would not plan exactly the promotion; nothing written:\n"
                              + "\n".join(f"  {p}" for p in problems))


def check_promise(theirs: ManifestSet, before: ManifestSet, after: ManifestSet, chosen: Any,
                  result: Promotion) -> list[str]:
    """What breaks the promise (empty: it holds). ``after`` is TO's tree once promoted."""
    problems: list[str] = []
    theirs_by = {_key(r): r for r in theirs.resources}
    before_by = {_key(r): r for r in before.resources}
    left = {(n.address, n.path) for n in result.not_promoted} | {(k.address, k.path) for k in result.kept}
    for r in after.resources:
        old = before_by.get(_key(r))
        src = theirs_by.get(_key(r))
        if src is not None and (chosen(r) or chosen(src)):
            for path, _, _ in _leaves(_compared(r), _compared(src), ""):
                if (r.address, path) not in left and (r.address, "") not in left:
                    problems.append(f"{r.address}: {path} still differs from {result.source}")
        elif old is None or not _same(_compared(old), _compared(r)):
            problems.append(f"{r.address}: changed, but it was not chosen")
    return problems


def _merged(current: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Two merge patches as one: ``patch``'s keys over ``current``'s, mappings merged key by key."""
    out = dict(current)
    for key, value in patch.items():
        before = out.get(key)
        out[key] = _merged(before, value) if isinstance(value, dict) and isinstance(before, dict) else value
    return out


def _names_files(raw: Mapping[str, Any]) -> bool:
    def walk(value: Any) -> bool:
        if isinstance(value, Mapping):
            return set(value) == {"file"} or any(walk(v) for v in value.values())
        if isinstance(value, list):
            return any(walk(v) for v in value)
        return False

    return "examples_file" in raw or walk(raw)
