"""Every flag of every command reaches the object it fills (``reconciler/cli/flags.py``): each flag
bound to a ``PlanOptions`` or ``Connection`` field is given alone, with a value that is not its
default, and that value is found on the object the command hands to the workflow (the planner's
options, the connection, the watcher's config, the loader's arguments). A flag a command
forgot would fail here, not be silently dropped."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
from click.testing import CliRunner

from reconciler.cli.flags import CONNECTION_FLAGS, PLAN_FLAGS
from reconciler.cli.main import main

BOUND = {f.name: ("options", f) for f in PLAN_FLAGS} | {f.name: ("conn", f) for f in CONNECTION_FLAGS}
REFUSED_BY_WATCH = {"rotate", "rotate_secrets", "since"}  # they would resend secrets every cycle


class Reached(Exception):
    """Raised where the command would open a connection: what it built is recorded by then."""


def cases() -> list[tuple[str, str]]:
    return [(name, p.name) for name, command in sorted(main.commands.items()) for p in command.params
            if isinstance(p, click.Option) and p.name in BOUND and not p.expose_value]  # drift has a --prune of its own


def value_for(option: click.Option, tmp_path: Path) -> tuple[list[str], Any]:
    """Arguments giving ``option`` a value that is not its default, and the value expected."""
    flag = option.opts[0]
    if option.is_flag:
        return [flag], True
    kind = option.type
    if isinstance(kind, click.Choice):
        value: Any = kind.choices[-1]
    elif isinstance(kind, click.IntRange):
        value = 7
    elif isinstance(kind, click.FloatRange):
        value = 3.5
    elif isinstance(kind, click.Path) and kind.exists:
        (tmp_path / "given").write_text("kind: Policy\n")
        value = str(tmp_path / "given")
    else:
        value = f"given-{option.name}"
    return [flag, str(value)], (value,) if option.multiple else value


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Stand-ins at the workflow's doors, recording what each command hands over."""
    import reconciler.cli.validate
    import reconciler.watch
    import reconciler.workflow

    seen: dict[str, Any] = {}
    manifests = SimpleNamespace(warnings=(), policies=(), read_scope=lambda: None)

    def load(paths: Any, stdin: Any = None, *, var_assignments: Any = (), var_files: Any = (),
             policy_paths: Any = ()) -> Any:
        seen.setdefault("options", SimpleNamespace(variables=var_assignments, var_files=var_files,
                                                   policies=policy_paths))
        return manifests

    def prepare_options(manifests: Any, options: Any) -> Any:
        seen["options"] = options
        return options

    def connect(conn: Any, **kwargs: Any) -> Any:
        seen["conn"] = conn
        raise Reached

    def run_validate(paths: Any, *, var_assignments: Any, var_files: Any, policy_paths: Any, **kwargs: Any) -> int:
        load(paths, var_assignments=var_assignments, var_files=var_files, policy_paths=policy_paths)
        return 0

    class Watcher:
        def __init__(self, config: Any, conn: Any, telemetry: Any, **kwargs: Any) -> None:
            seen["options"], seen["conn"] = config.options, conn

        def run(self) -> int:
            return 0

    monkeypatch.setattr(reconciler.workflow, "load", load)
    monkeypatch.setattr(reconciler.workflow, "prepare_options", prepare_options)
    monkeypatch.setattr(reconciler.workflow, "connect", connect)
    monkeypatch.setattr(reconciler.cli.validate, "run_validate", run_validate)
    monkeypatch.setattr(reconciler.watch, "Watcher", Watcher)
    return seen


@pytest.mark.parametrize("command, field", cases())
def test_every_flag_of_every_command_reaches_its_field(command: str, field: str, tmp_path: Path,
                                                        reached: dict[str, Any]) -> None:
    option = next(p for p in main.commands[command].params if p.name == field and not p.expose_value)
    assert isinstance(option, click.Option)
    args, expected = value_for(option, tmp_path)
    paths = [] if command == "export" else [str(tmp_path)]
    extra = ["--auto-approve"] if command == "apply" else ["--once"] if command == "watch" else []

    result = CliRunner().invoke(main, [command, *paths, *extra, *args])

    if command == "watch" and field in REFUSED_BY_WATCH:
        assert result.exit_code == 1 and f"{option.opts[0]} would send the same secrets again" in result.output
        return
    assert result.exception is None or isinstance(result.exception, (Reached, SystemExit)), result.output
    where, _ = BOUND[field]
    assert getattr(reached[where], field) == expected, f"{command} {' '.join(args)}: lost on the way"


def test_the_flags_tested_are_every_bound_flag_and_no_command_swallows_keywords() -> None:
    assert {field for _, field in cases()} == set(BOUND)
    for name, command in main.commands.items():
        assert command.callback is not None
        own = inspect.unwrap(command.callback)
        kinds = [p.kind for p in inspect.signature(own).parameters.values()]
        assert inspect.Parameter.VAR_KEYWORD not in kinds, f"{name} takes **kwargs: a flag could be dropped there"
