"""The manifests as they were at a git revision (``pull --since REF``): the base of a three-way
comparison, loaded the way ``manifests.history`` loads them for write-only fields."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from collections.abc import Sequence

from reconciler.errors import ConfigError
from reconciler.manifests.history import _git, _load_existing, _toplevel
from reconciler.model import DesiredResource


def resources_at(ref: str, paths: Sequence[str], var_assignments: Sequence[str] = (),
                 var_files: Sequence[str] = ()) -> dict[tuple[str, ...], DesiredResource]:
    """The resources the same paths declared at ``ref``, by identity (none when the tree did not exist)."""
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
    with tempfile.TemporaryDirectory(prefix="reconciler-pull-since-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        old_paths = [os.path.join(tmp, os.path.relpath(os.path.realpath(p), root)) for p in paths]
        old_vars = [os.path.join(tmp, os.path.relpath(os.path.realpath(v), root))
                    if os.path.realpath(v).startswith(root + os.sep) else v for v in var_files]
        old_vars = [v for v in old_vars if os.path.exists(v)]
        before = _load_existing(old_paths, tmp, ref, var_assignments, old_vars)
    return {r.identity: r for r in before.resources} if before is not None else {}
