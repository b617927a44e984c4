"""``--allow-outside-tree`` on every command that loads manifests (see ``manifests.confine``):
``@confined``, applied where each such command is defined."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from reconciler.manifests.confine import ENV, FLAG, allowing_outside_tree


def confined(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--allow-outside-tree`` on the command: while it runs, files its manifests name may lie
    outside their tree when the flag is given. The callback does not receive the flag."""
    @functools.wraps(f)
    def run(*args: Any, allow_outside_tree: bool, **kwargs: Any) -> Any:
        with allowing_outside_tree(allow_outside_tree):
            return f(*args, **kwargs)

    return click.option(FLAG, "allow_outside_tree", is_flag=True,
                        help=f"Let {{file: PATH}} secrets and examples_file name files outside the manifests' tree "
                             f"(the PATHs given; or {ENV}=1).")(run)
