"""The project file, ``reconciler.yaml``: one tree, many named environments (README.md,
"Environments: one tree, many accounts").

Each environment says where its account is (``base_url``, ``region``, ``host`` or ``emulator``),
which variable holds its key (``api_key: {env: NAME}``, never a value), which paths, var files and
policies make its desired state, and which environments it comes ``after``. The file is read as
manifests are (``manifests.yamlload``: line marks, duplicate keys, no aliases) and validated by
pydantic models built on the manifests' ``Strict`` base, so its problems read as theirs do:
``reconciler.yaml:LINE:COL: PATH: message``, every one of them, before any request.

What the file alone cannot say is checked when the environments are chosen (``select``): an unknown
name (did-you-mean and the list), an unset key variable; and, once their manifests are loaded,
two environments of one account that declare the same space (``check_accounts``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, ValidationError, field_validator, model_validator

from reconciler.errors import ConfigError, ManifestError
from reconciler.manifests.fields import ENV_NAME, SECRET_LITERAL, Strict, problem
from reconciler.manifests.hints import suggest
from reconciler.manifests.yamlload import PROJECT_FILE, Mark, Problem, parse_documents, read_file

#: The members of an environment that say where its account is: exactly one is written.
ENDPOINTS = ("base_url", "region", "host", "emulator")

EnvironmentName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]


class KeyReference(Strict):
    """``{env: NAME}``: the environment variable that holds the environment's API key."""

    env: NonEmpty = Field(description="The environment variable holding the API key (read when the command runs).")

    @field_validator("env")
    @classmethod
    def _a_variable_name(cls, value: str) -> str:
        if not ENV_NAME.match(value):
            raise problem("must be an environment variable name (letters, digits and _; not starting with a digit)")
        return value


class Environment(Strict):
    """One environment: where its account is, its key, the files of its desired state, its order."""

    base_url: NonEmpty | None = Field(None, description="The service root, without /v2 (https://, or http:// to "
                                      "a loopback host).")
    #: client.settings.REGIONS (a test keeps the two equal)
    region: Literal["eu-west-1a", "ca-central-1a"] | None = Field(
        None, description="The regional host https://api.REGION.llmops.example.")
    host: NonEmpty | None = Field(None, description="A custom host: https://HOST.")
    emulator: NonEmpty | None = Field(None, description="An in-process emulator persisted in this SQLite file "
                                      "(relative to the project file).")
    api_key: KeyReference | None = Field(None, description="{env: NAME}: the variable holding the API key, never "
                                         "a value. Required unless the environment is an emulator.")
    paths: list[NonEmpty] = Field(min_length=1, description="The manifests, in load order (files or directories, "
                                  "relative to the project file).")
    var_files: list[NonEmpty] = Field(default_factory=list, description="Var files, in order (later wins).")
    policies: list[NonEmpty] = Field(default_factory=list, description="Central Policy documents of this "
                                     "environment (files or directories).")
    after: list[NonEmpty] = Field(default_factory=list, description="Environments this one is applied after: "
                                  "apply --all starts it only once each of them converged in the same run.")

    @field_validator("api_key", mode="before")
    @classmethod
    def _a_reference(cls, value: Any) -> Any:
        if isinstance(value, str):  # never repeated: it is most likely the key itself
            raise problem(SECRET_LITERAL.replace("{env: NAME} or {file: PATH}", "{env: NAME}")
                          + "; a project file is committed")
        if isinstance(value, dict) and "file" in value and "env" not in value:
            raise problem("the key is read from an environment variable only: write {env: NAME}", "file", key=True)
        return value

    @model_validator(mode="after")
    def _one_endpoint(self) -> Environment:
        given = [name for name in ENDPOINTS if getattr(self, name) is not None]
        if len(given) != 1:
            raise problem("write exactly one of " + ", ".join(ENDPOINTS) + " (where the environment's account is)"
                          + (f"; found {', '.join(given)}" if given else ""))
        if self.api_key is None and self.emulator is None:
            raise problem("missing required field 'api_key' ({env: NAME}: the variable holding the key)",
                          key=True)
        duplicates = sorted({n for n in self.after if self.after.count(n) > 1})
        if duplicates:
            raise problem(f"names {', '.join(duplicates)} twice", "after")
        return self


class ProjectFile(Strict):
    """``reconciler.yaml``: the named environments of one tree."""

    environments: dict[EnvironmentName, Environment] = Field(min_length=1, description="The environments, by name.")


class ProjectFileError(ManifestError):
    """Every problem of a project file, each at its ``file:line``."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        super().__init__([str(p) for p in sorted(problems)])
        n = len(self.problems)
        self.message = f"{n} problem{'s' if n != 1 else ''} in the project file:\n" + "\n".join(self.problems)
        self.args = (self.message,)


@dataclass(frozen=True)
class Project:
    """A project file read and checked: its environments in the order written."""

    file: Path
    model: ProjectFile
    marks: Mapping[str, Mark]

    @property
    def root(self) -> Path:
        return self.file.parent

    @property
    def names(self) -> list[str]:
        return list(self.model.environments)

    def at(self, dotted: str) -> str:
        """``FILE:LINE`` of an entry (its key), for messages."""
        parts = dotted.split(".")
        while parts and ".".join(parts) not in self.marks:
            parts.pop()
        line = self.marks[".".join(parts)][0] if parts else 1
        return f"{self.file}:{line}"

    def place(self, written: str) -> str:
        """A path of the file (relative to it) as the command names it: relative to the working
        directory when it lies below it, else absolute."""
        path = os.path.normpath(self.root / os.path.expanduser(written))
        relative = os.path.relpath(path)
        return path if relative.startswith("..") else relative


def find(start: Path | None = None) -> Path | None:
    """``reconciler.yaml`` in ``start`` (the working directory) or the nearest directory above it."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def load(path: Path) -> Project:
    """Read and check a project file; every problem found is a ``ManifestError`` at its ``file:line``."""
    shown = str(path)
    problems: list[Problem] = []
    text = read_file(str(path), shown, problems)
    documents = parse_documents(text, shown, problems) if text is not None else []
    if not problems and len(documents) != 1:
        problems.append(Problem(shown, documents[1].line if documents else 1, 1, "file",
                                "a project file is one YAML mapping (environments: ...)"))
    if problems:
        raise ProjectFileError(problems)
    doc = documents[0]
    try:
        model = ProjectFile.model_validate(doc.value)
    except ValidationError as exc:
        from reconciler.manifests.messages import Ctx, report

        ctx = Ctx(shown, doc.marks, problems, str(path.parent), "file")
        report(exc, ProjectFile, ctx)
        raise ProjectFileError(problems) from None
    project = Project(path, model, doc.marks)
    problems.extend(_order_problems(project))
    if problems:
        raise ProjectFileError(problems)
    return project


def _order_problems(project: Project) -> list[Problem]:
    """An unknown name in ``after`` (with a did-you-mean), one naming itself, and every cycle."""
    envs = project.model.environments
    found: list[Problem] = []

    def at(name: str, index: int, message: str) -> None:
        path = f"environments.{name}.after.{index}"
        line, column = project.marks.get(path, project.marks.get(f"environments.{name}", (1, 1, 1, 1)))[2:]
        found.append(Problem(str(project.file), line, column, path, message))

    for name, env in envs.items():
        for i, other in enumerate(env.after):
            if other == name:
                at(name, i, "an environment cannot come after itself")
            elif other not in envs:
                at(name, i, unknown_message(other, envs))
    for cycle in _cycles({name: [a for a in env.after if a in envs and a != name] for name, env in envs.items()}):
        first = cycle[0]
        at(first, envs[first].after.index(cycle[1]),
           "a cycle in after: " + " after ".join((*cycle, first)) + " (each would wait for another)")
    return found


def _cycles(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """One cycle of each knot of the graph (name -> the names it comes after), each from its
    smallest name: a depth-first walk from each name that stops at the first name seen again on its path."""
    found: list[list[str]] = []
    seen: set[str] = set()
    for start in sorted(graph):
        cycle = _cycle_from(graph, start, [], set())
        if cycle is not None and not seen & set(cycle):
            smallest = cycle.index(min(cycle))
            found.append(cycle[smallest:] + cycle[:smallest])
            seen.update(cycle)
    return found


def _cycle_from(graph: Mapping[str, Sequence[str]], node: str, path: list[str], done: set[str]) -> list[str] | None:
    if node in path:
        return path[path.index(node):]
    if node in done:
        return None
    path.append(node)
    for nxt in graph.get(node, ()):
        cycle = _cycle_from(graph, nxt, path, done)
        if cycle is not None:
            return cycle
    path.pop()
    done.add(node)
    return None


def unknown_message(name: str, known: Iterable[str]) -> str:
    names = list(known)
    hint = suggest(name, names) or next((n for n in names if n.startswith(name)), None)  # prod: production
    return (f"no environment '{name}'" + (f"; did you mean '{hint}'?" if hint else "")
            + f" (environments: {', '.join(names)})")


def select(project: Project, names: Sequence[str], every: bool) -> list[str]:
    """The environments a command runs on: those named (``--env``, in the order given) or all of them
    (``--all``, in the file's order). An unknown name is refused with a did-you-mean and the list."""
    if every:
        return project.names
    chosen: list[str] = []
    for name in names:
        if name not in project.model.environments:
            raise ConfigError(f"--env {name}: {unknown_message(name, project.names)} in {project.file}")
        if name not in chosen:
            chosen.append(name)
    return chosen


def key_of(project: Project, name: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The environment's API key, read from its variable (None for an emulator without one); an
    unset or empty variable is a ``ConfigError`` naming it and the line that names it."""
    ref = project.model.environments[name].api_key
    if ref is None:
        return None
    value = environ.get(ref.env, "").strip()
    if not value:
        raise ConfigError(f"environment {name}: its key variable {ref.env} is not set "
                          f"(api_key at {project.at(f'environments.{name}.api_key')}); nothing was sent")
    return value


def check_accounts(project: Project, spaces: Mapping[str, Iterable[str]], accounts: Mapping[str, Any]) -> None:
    """Two chosen environments of one account (``accounts``: what says which account each is) that
    declare a space in common would each plan the other's resources away: refused, naming both and
    the space, before any request."""
    owners: dict[tuple[Any, str], str] = {}
    clashes: list[str] = []
    for name, declared in spaces.items():
        for space in sorted(set(declared)):
            first = owners.setdefault((accounts[name], space), name)
            if first != name:
                clashes.append(f"  environments {first} and {name} name one account and the space {space} "
                               f"({project.at(f'environments.{first}')}, {project.at(f'environments.{name}')})")
    if clashes:
        raise ConfigError("two environments may not manage one space of one account (each would plan the "
                          "other's changes away):\n" + "\n".join(clashes))


def order(project: Project, chosen: Sequence[str]) -> list[str]:
    """The chosen environments in an order ``after`` allows (the file's order among equals)."""
    envs = project.model.environments
    placed: list[str] = []
    left = [n for n in project.names if n in chosen]
    while left:
        ready = next(n for n in left if all(a in placed or a not in chosen for a in envs[n].after))
        placed.append(ready)
        left.remove(ready)
    return placed


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the project file (``reconciler schema --project``; docs/project.schema.json)."""
    schema = ProjectFile.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": "reconciler.yaml",
            "description": "The project file of reconciler: the named environments of one tree (endpoint, key "
                           "reference, paths, var files, policies, after)."}

