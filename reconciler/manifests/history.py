"""Git as the memory of write-only fields (``--since REF``, docs/manifests.md, "Write-only fields").

A write-only value (an API key, header values) cannot be read back, so a changed declaration (a
header added, removed or renamed on an AGENT, another ``env``/``file`` reference) is invisible in live
state. ``--since REF`` loads the same paths as they were at git revision REF and names every
write-only field whose *declaration* differs: the plan sends those. Values are never read here.

Git is also the memory of the fields the API does not store at all (``KindSpec.unstored``: a
dataset's experiment retention): ``unstored_at`` gives their values at REF, which a policy's
``before`` shows (docs/manifests.md, "Policy").
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from reconciler.errors import ConfigError, ManifestError
from reconciler.kinds import KIND_SPECS, SECRET_KINDS
from reconciler.manifests.secrets import walk
from reconciler.model import DesiredResource, ManifestSet, SecretRef

#: The integration config paths that hold write-only values, as plans name them.
WRITE_ONLY_PATHS = ("config.api_key", "config.headers", "config.auth")


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=120)
    except FileNotFoundError:
        raise ConfigError("--since needs git, and git is not installed") from None


def _toplevel(path: str) -> str:
    where = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    done = _git(["rev-parse", "--show-toplevel"], where)
    if done.returncode != 0:
        raise ConfigError(f"--since: {path} is not inside a git repository")
    return os.path.realpath(done.stdout.decode().strip())


def changed_since(ref: str, paths: Sequence[str], current: ManifestSet, var_assignments: Sequence[str] = (),
                  var_files: Sequence[str] = ()) -> tuple[str, ...]:
    """``"ADDRESS PATH"`` for every write-only field of ``current`` whose declaration differs from
    the same manifests at ``ref`` (a resource new since then counts as changed). Raises
    ``ConfigError`` outside a git repository or for an unknown revision; ``ManifestError`` when the
    manifests at ``ref`` do not load."""
    with tree_at(ref, paths, var_assignments, var_files) as (root, tmp, before):
        old = {r.identity: _declarations(r, tmp) for r in before.resources} if before else {}
    out: list[str] = []
    for r in current.resources:
        if r.kind not in SECRET_KINDS:
            continue
        now = _declarations(r, root)
        was = old.get(r.identity, {})
        out.extend(f"{r.address} {path}" for path, decl in now.items() if decl != was.get(path))
    return tuple(sorted(out))


def unstored_at(ref: str, paths: Sequence[str], var_assignments: Sequence[str] = (),
                var_files: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Address -> the fields the API does not store (``KindSpec.unstored``) as the same manifests
    declare them at ``ref``; a resource absent then is absent here, a field it did not declare is
    absent from its mapping. Raises as ``changed_since``."""
    with tree_at(ref, paths, var_assignments, var_files) as (_root, _tmp, before):
        resources = before.resources if before is not None else ()
        return {r.address: {f: r.spec[f] for f in KIND_SPECS[r.kind].unstored if f in r.spec}
                for r in resources if r.kind in KIND_SPECS and KIND_SPECS[r.kind].unstored}


@contextmanager
def tree_at(ref: str, paths: Sequence[str], var_assignments: Sequence[str] = (), var_files: Sequence[str] = (),
            *, var_files_at_ref: bool = False) -> Iterator[tuple[str, str, ManifestSet | None]]:
    """The same ``paths`` as they were at git revision ``ref``, extracted to a temporary directory:
    ``(repository root, that directory, the manifests loaded there or None when the tree did not
    exist)``, valid inside the block. ``var_files_at_ref``: the var files inside the repository are
    read at ``ref`` too (``pull --since``), else as they are now (``--since`` of plan). Raises
    ``ConfigError`` outside a git repository or for an unknown revision."""
    if not paths or any(p == "-" for p in paths):
        raise ConfigError("--since compares files in git: it cannot be used with standard input (-)")
    roots = {_toplevel(p) for p in paths}
    if len(roots) != 1:
        raise ConfigError("--since: the paths are in different git repositories: " + ", ".join(sorted(roots)))
    root = roots.pop()
    commit = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root)
    if commit.returncode != 0:
        raise ConfigError(f"--since {ref}: not a revision of the git repository at {root}")
    archive = _git(["archive", "--format=tar", commit.stdout.decode().strip()], root)
    if archive.returncode != 0:
        raise ConfigError(f"--since {ref}: git archive failed: {archive.stderr.decode(errors='replace').strip()}")
    with tempfile.TemporaryDirectory(prefix="reconciler-since-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        old_paths = [os.path.join(tmp, os.path.relpath(os.path.realpath(p), root)) for p in paths]
        if var_files_at_ref:
            var_files = [v for v in (os.path.join(tmp, os.path.relpath(os.path.realpath(v), root))
                                     if os.path.realpath(v).startswith(root + os.sep) else v for v in var_files)
                         if os.path.exists(v)]
        yield root, tmp, _load_existing(old_paths, tmp, ref, var_assignments, var_files)


def _load_existing(paths: list[str], tmp: str, ref: str, var_assignments: Sequence[str],
                   var_files: Sequence[str]) -> ManifestSet | None:
    from reconciler.manifests.loader import load_manifests

    existing = [p for p in paths if os.path.exists(p)]
    if not existing:
        return None  # the tree did not exist then: everything is new
    try:
        return load_manifests(existing, var_assignments=var_assignments, var_files=var_files)
    except ManifestError as exc:
        shown = [line.replace(tmp + os.sep, "") for line in exc.problems[:5]]
        raise ManifestError([f"--since {ref}: the manifests at that revision do not load:", *shown]) from None


def _declarations(r: DesiredResource, root: str) -> dict[str, Any]:
    """Each write-only field's declaration: which references, under which header names; a file
    reference relative to the repository root, so the two trees compare."""
    config = r.spec.get("config")
    if not isinstance(config, dict):
        return {}
    out: dict[str, Any] = {}
    for path in WRITE_ONLY_PATHS:
        value = config.get(path.removeprefix("config."))
        decl = [(where, ref.source, os.path.relpath(ref.ref, root) if ref.source == "file" else ref.ref)
                for where, ref in walk(value, "") if isinstance(ref, SecretRef)]
        if decl:
            out[path] = sorted(decl)
    return out
