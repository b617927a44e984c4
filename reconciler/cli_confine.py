"""``--allow-outside-tree`` on every command that loads manifests (see ``manifests.confine``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from reconciler.cli_flags import collect, collected
from reconciler.manifests.confine import ENV, FLAG, allowing_outside_tree

#: The commands that load manifests (a command not registered is skipped).
LOADING_COMMANDS = ("validate", "plan", "apply", "drift", "watch", "pull")


def install(group: click.Group) -> None:
    for name in LOADING_COMMANDS:
        command = group.commands.get(name)
        if command is None or command.callback is None or any(p.name == "allow_outside_tree" for p in command.params):
            continue
        command.params.append(click.Option(
            [FLAG], is_flag=True, expose_value=False, callback=collect("confine"), help=f"Let {{file: PATH}} secrets and examples_file name files outside the "
            f"manifests' tree (the PATHs given; or {ENV}=1)."))
        command.callback = _wrap(command.callback)


def _wrap(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        with allowing_outside_tree(bool(collected("confine").get("allow_outside_tree"))):
            return callback(*args, **kwargs)

    return run
