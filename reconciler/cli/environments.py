"""``--env NAME`` (repeatable), ``--all`` and ``--project FILE`` on the commands that load manifests
and talk to the API: ``@environments``, applied where each such command is defined, below its other
options. The callback receives ``chosen``: None when the command runs on PATHs as before, else the
environments of the project file (``reconciler.yaml``, found from the working directory upwards)
to run on. One source of truth: PATHs or connection flags given with them are refused, and so is
an unknown name (did-you-mean and the list) or, for a command that connects, an unset key
variable; all before any request.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from reconciler.cli.common import NotRun
from reconciler.cli.flags import CONNECTION_FLAGS
from reconciler.errors import ConfigError

#: The connection flags that say where the account is or which key to use: the project file says it.
ENDPOINT_FLAGS = ("base_url", "region", "host", "api_key_file", "emulator")
PROJECT_FILE = "reconciler.yaml"
#: What ``plan --all --out DIR`` writes beside the plan files (``NAME.json``): the project file and the
#: environments, in order; ``apply DIR`` reads it.
PLAN_INDEX = "environments.json"


@dataclass(frozen=True)
class Chosen:
    """The environments a command runs on, in the order ``after`` allows."""

    project: Any  # reconciler.project.Project (imported when a command runs)
    names: tuple[str, ...]


def environments(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--env``, ``--all`` and ``--project`` on the command; its callback gets ``chosen``."""
    @functools.wraps(f)
    def run(*args: Any, env_names: tuple[str, ...], all_environments: bool, project_file: str | None,
            **kwargs: Any) -> Any:
        paths = kwargs.get("paths", ())
        if not env_names and not all_environments:
            if project_file:
                raise NotRun("--project names the project file of --env NAME or --all: give one of them")
            if not paths:
                raise NotRun(f"Missing argument 'PATHS...'. Give the manifests, or --env NAME or --all to "
                             f"take them from {PROJECT_FILE}.")
            return f(*args, chosen=None, **kwargs)
        if env_names and all_environments:
            raise NotRun("--env and --all: give one of them")
        if paths:
            raise NotRun(f"--env and --all take the paths from {PROJECT_FILE}: give no PATH as well "
                                   f"(one source of truth)")
        if click.get_current_context().params.get("metrics_file"):
            raise NotRun("--metrics-file with --env or --all: not yet (its figures carry no environment label); "
                         "run one environment at a time with PATHs")
        given = endpoint_flags_given()
        if given:
            raise NotRun(f"{', '.join(given)}: with --env and --all each environment's endpoint and key "
                                   f"come from {PROJECT_FILE} (one source of truth)")
        return f(*args, chosen=choose(project_file, env_names, all_environments), **kwargs)

    run = click.option("--project", "project_file", type=click.Path(dir_okay=False), metavar="FILE",
                       help=f"The project file (default: {PROJECT_FILE} here or in a directory above).")(run)
    run = click.option("--all", "all_environments", is_flag=True,
                       help=f"Run on every environment of {PROJECT_FILE}.")(run)
    return click.option("--env", "env_names", multiple=True, metavar="NAME",
                        help=f"Run on this environment of {PROJECT_FILE}: its paths, var files, policies, endpoint "
                             "and key (repeatable).")(run)


def endpoint_flags_given(ctx: click.Context | None = None) -> list[str]:
    """The connection flags given that say where the account is or which key to use (as typed)."""
    ctx = ctx or click.get_current_context()
    flags = {f.name: f.decls[0] for f in CONNECTION_FLAGS}
    return [flags[name] for name in ENDPOINT_FLAGS if name in flags and ctx.get_parameter_source(name)
            in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)]


def choose(project_file: str | None, names: tuple[str, ...], every: bool) -> Chosen:
    from reconciler import project

    path = Path(project_file) if project_file else project.find()
    if path is None:
        raise ConfigError(f"--env and --all need a project file: no {PROJECT_FILE} in {Path.cwd()} or a directory "
                          "above it (or pass --project FILE)")
    if not path.is_file():
        raise ConfigError(f"--project {project_file}: no such file")
    if path.is_absolute() and path.is_relative_to(Path.cwd()):  # named as the user would: reconciler.yaml:3
        path = path.relative_to(Path.cwd())
    loaded = project.load(path)
    return Chosen(loaded, tuple(project.order(loaded, project.select(loaded, names, every))))


def heading(name: str, fmt: str) -> str:
    return f"## Environment `{name}`\n\n" if fmt == "markdown" else f"=== environment {name}\n"


def table(rows: list[dict[str, Any]], fmt: str) -> str:
    """The environments by action: one row each (an environment that failed says so)."""
    columns = ("create", "update", "delete", "replace", "unmanaged")
    if fmt == "markdown":
        lines = ["| environment | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
        for row in rows:
            cells = [str(row[c]) for c in columns] if "error" not in row else ["error"] + [""] * (len(columns) - 1)
            lines.append(f"| `{row['environment']}` | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"
    width = max(len("environment"), *(len(r["environment"]) for r in rows))
    lines = ["environment".ljust(width) + "".join(c.rjust(len(c) + 2) for c in columns)]
    for row in rows:
        if "error" in row:
            lines.append(row["environment"].ljust(width) + "  error (above)")
        else:
            lines.append(row["environment"].ljust(width) + "".join(str(row[c]).rjust(len(c) + 2) for c in columns))
    return "\n".join(lines) + "\n"


def check_plan_dir(directory: Path) -> None:
    """``--out DIR`` with --env/--all, before any request: a directory (made if missing) whose parent
    exists, never a symlink."""
    from reconciler.files import refuse_symlink

    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"--out {directory}: with --env or --all, --out names a directory (a plan file per "
                          "environment)")
    if not directory.resolve().parent.is_dir():
        raise ConfigError(f"--out {directory}: the directory {directory.parent} does not exist")
    refuse_symlink(directory, "--out")


def write_plans(directory: Path, chosen: Chosen, plans: Mapping[str, Any]) -> None:
    """A plan file per environment (``NAME.json``, bound to its files' digests, signed with
    RECONCILER_PLAN_KEY as ``plan --out`` does) and the index ``apply DIR`` reads."""
    import json
    import os

    from reconciler.files import write_private
    from reconciler.saved import signed_files, with_sources

    directory.mkdir(mode=0o700, exist_ok=True)
    for name, plan in plans.items():
        text = with_sources(plan, os.getcwd()).dumps()
        target = directory / f"{name}.json"
        for suffix, signed in signed_files(text):
            write_private(Path(f"{target}{suffix}"), signed, what="--out")
        write_private(target, text, what="--out")
    index = {"project": str(chosen.project.file), "environments": list(chosen.names)}
    write_private(directory / PLAN_INDEX, json.dumps(index, indent=2) + "\n", what="--out")


def planned_environments(directory: Path) -> Chosen:
    """The environments ``plan --all --out DIR`` saved, in their order, with their project file read
    again (their endpoints and keys come from it); refused with endpoint flags (one source of truth)."""
    import json

    given = endpoint_flags_given()
    if given:
        raise NotRun(f"{', '.join(given)}: apply {directory} applies each environment's plan against its endpoint "
                     f"in {PROJECT_FILE} (one source of truth)")
    try:
        index = json.loads((directory / PLAN_INDEX).read_text(encoding="utf-8"))
        project_file, names = str(index["project"]), [str(n) for n in index["environments"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{directory / PLAN_INDEX}: not an index of plan --out DIR ({exc})") from None
    return choose(project_file, tuple(names), False)
