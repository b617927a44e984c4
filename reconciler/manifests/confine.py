"""Files a manifest may name (``{file: PATH}`` secrets, ``examples_file``) stay inside the tree.

The tree is what the command line gives: each PATH directory, the directory of each PATH file, the
working directory for ``-``. A manifest from a fork or a pull request is reviewed as text; a
``{file: /home/ci/.ssh/id_rsa}``, a ``../../`` or a symlink out of the checkout would make the run
read (and, for an examples file, print in the plan that CI posts as a comment) any file the runner
can read. Paths are compared after ``realpath``, so a symlink that leads out is outside.

The opt-out is explicit: ``--allow-outside-tree`` on the command, or ``RECONCILER_ALLOW_OUTSIDE_TREE=1``
(a secret mounted at ``/var/run/secrets/...`` in a pod, say).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

ENV = "RECONCILER_ALLOW_OUTSIDE_TREE"
FLAG = "--allow-outside-tree"
_allowed: ContextVar[bool] = ContextVar("allow_outside_tree", default=False)


@contextmanager
def allowing_outside_tree(on: bool) -> Iterator[None]:
    """While the block runs, ``--allow-outside-tree`` is ``on`` (the CLI's flag)."""
    token = _allowed.set(on)
    try:
        yield
    finally:
        _allowed.reset(token)


def outside_allowed() -> bool:
    return _allowed.get() or os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes")


def tree_roots(paths: Sequence[str]) -> tuple[str, ...]:
    """The real directories the manifests given on the command line are the tree of."""
    roots: dict[str, None] = {}  # an ordered set: the first place a root is reached
    for given in paths:
        if given == "-":
            root = os.getcwd()
        elif os.path.isdir(given):
            root = given
        else:
            root = os.path.dirname(os.path.abspath(given))
        roots[os.path.realpath(root)] = None
    return tuple(roots)


def outside_tree(path: str, roots: Sequence[str] | None) -> str | None:
    """Why ``path`` may not be read (None when it may): outside every root, after symlinks."""
    if roots is None or outside_allowed():
        return None
    real = os.path.realpath(path)
    if any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
        return None
    via = " (through a symbolic link)" if real != os.path.abspath(path) else ""
    return (f"is outside the manifests' tree ({', '.join(roots)}){via}; keep the file inside it, or allow "
            f"it with {FLAG} (or {ENV}=1)")
