"""The manifests as they were at a git revision (``pull --since REF``): the base of a three-way
comparison, loaded the way ``manifests.history`` loads them for write-only fields."""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.manifests.history import tree_at
from reconciler.model import DesiredResource


def resources_at(ref: str, paths: Sequence[str], var_assignments: Sequence[str] = (),
                 var_files: Sequence[str] = ()) -> dict[tuple[str, ...], DesiredResource]:
    """The resources the same paths declared at ``ref``, by identity (none when the tree did not
    exist); the var files inside the repository are read at ``ref`` too."""
    with tree_at(ref, paths, var_assignments, var_files, var_files_at_ref=True) as (_, _, before):
        return {r.identity: r for r in before.resources} if before is not None else {}
