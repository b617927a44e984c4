"""Loading manifests from files, directories and standard input into a ``ManifestSet``.

Every problem of a run is collected (syntax, types, unknown fields, cross-document identities) and
raised together as one ``ManifestError``, each problem one line ``FILE:LINE:COL: PATH: message``.
Nothing here reads the environment, resolves a secret or touches the network.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from reconciler.errors import ManifestError
from reconciler.kinds import KIND_SPECS
from reconciler.manifests import yamlload
from reconciler.manifests.confine import outside_tree, tree_roots
from reconciler.manifests.overlay import Variables, apply_patches, collect_variables, substitute
from reconciler.manifests.policies import check_names, compile_policy
from reconciler.manifests.validate import cross_document_problems, ownership_of, validate_document
from reconciler.manifests.yamlload import Problem, YamlDocument, parse_documents, read_file, read_text
from reconciler.model import DesiredResource, ManifestSet

STDIN = "-"
STDIN_NAME = "<stdin>"
MANIFEST_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Loaded:
    manifests: ManifestSet
    files: tuple[str, ...]  # the files read, as shown in messages


def manifest_files(paths: Sequence[str], problems: list[Problem]) -> list[str]:
    """Files to read, in order: each file as given; each directory's ``*.yaml``/``*.yml`` below it,
    sorted by path (hidden files and directories such as ``.git`` or ``.github`` are skipped, and so
    is the project file, ``reconciler.yaml``; a
    symbolic link to a file outside the directory is a problem, unless ``--allow-outside-tree``);
    ``-`` for standard input. A file reached twice is read once."""
    files: dict[str, str] = {}  # by real path, as first given
    roots = tree_roots(paths)

    def add(shown: str) -> None:
        files.setdefault(shown if shown == STDIN else os.path.realpath(shown), shown)

    for given in paths:
        if given == STDIN:
            add(STDIN)
        elif os.path.isdir(given):
            found: list[str] = []
            for root, dirs, names in os.walk(given):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                found.extend(os.path.join(root, n) for n in names
                             if n.lower().endswith(MANIFEST_SUFFIXES) and not n.startswith(".")
                             and n != yamlload.PROJECT_FILE)  # the project file says where, not what
            if not found:
                problems.append(Problem(given, 1, 1, "path", "no *.yaml or *.yml files in this directory"))
            for f in sorted(found, key=lambda p: os.path.relpath(p, given).split(os.sep)):
                why = outside_tree(f, roots)  # a symlink in the tree to a file out of it is not read
                if why is None:
                    add(f)
                else:
                    problems.append(Problem(f, 1, 1, "file", why))
        elif os.path.exists(given):
            add(given)
        else:
            problems.append(Problem(given, 1, 1, "path", "no such file or directory"))
    return list(files.values())


def _read_stdin(stdin: TextIO, problems: list[Problem]) -> str | None:
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None:
        return read_text(buffer.read(yamlload.MAX_FILE_BYTES + 1), STDIN_NAME, problems)
    try:
        text = stdin.read(yamlload.MAX_FILE_BYTES + 1)
    except UnicodeDecodeError as exc:
        problems.append(Problem(STDIN_NAME, 1, 1, "file", f"not valid UTF-8: {exc.reason}"))
        return None
    if len(text) > yamlload.MAX_FILE_BYTES:
        problems.append(Problem(STDIN_NAME, 1, 1, "file",
                                f"standard input is over the {yamlload.MAX_FILE_BYTES:,}-byte limit"))
        return None
    return text


def load(paths: Sequence[str], *, stdin: TextIO | None = None, variables: Variables | None = None,
         problems: list[Problem] | None = None, policy_paths: Sequence[str] = ()) -> Loaded:
    """``load_manifests`` that also says which files were read. Every document of every file is
    parsed first; variables are then resolved in each, Patches applied in command-line then file
    order, and what remains is validated.

    The cyclic garbage collector is paused while the tree is built: loading makes only acyclic
    values (documents, models, examples), and at 5,000 resources the collector's passes over them
    cost more than the validation itself (about a tenth of the load)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _load(paths, stdin, variables, problems, policy_paths)
    finally:
        if paused:
            gc.enable()


def _load(paths: Sequence[str], stdin: TextIO | None, variables: Variables | None,
          problems: list[Problem] | None, policy_paths: Sequence[str] = ()) -> Loaded:
    problems = [] if problems is None else problems
    variables = variables or Variables()
    files = [f for f in manifest_files(paths, problems)
             if f == STDIN or os.path.realpath(f) not in variables.files]  # a --var-file is no manifest
    docs: list[tuple[YamlDocument, str]] = []
    shown_files: list[str] = []
    budget = yamlload.NodeBudget()  # every file of the load together
    for f in files:
        if f == STDIN:
            shown, base_dir = STDIN_NAME, os.getcwd()
            text = _read_stdin(stdin if stdin is not None else sys.stdin, problems)
        else:
            shown, base_dir = f, os.path.dirname(os.path.abspath(f))
            text = read_file(f, f, problems)
        shown_files.append(shown)
        if text is None:
            continue
        for doc in parse_documents(text, shown, problems, budget):
            substitute(doc, variables, problems)
            docs.append((doc, base_dir))
    docs, policy_docs = _policies_apart(docs, policy_paths, problems)
    base_dirs = {id(doc): base for doc, base in docs}
    roots = tree_roots(paths)
    resources: list[DesiredResource] = []
    for doc in apply_patches((doc for doc, _ in docs), problems):
        resource = validate_document(doc, problems, base_dirs[id(doc)], roots)
        if resource is not None:
            resources.append(resource)
    ownership = ownership_of(resources, problems)
    resources = [r for r in resources if r.kind in KIND_SPECS]  # the Ownership document is no resource
    problems.extend(cross_document_problems(resources))
    policies = _compile_policies(policy_docs, problems)
    if problems:
        rank = {f: i for i, f in enumerate(shown_files)}
        problems.sort(key=lambda p: (rank.get(p.file, len(rank)), p.file, p.line, p.column))
        raise ManifestError([str(p) for p in problems])
    return Loaded(ManifestSet(tuple(resources), paths=tuple(paths), ownership=ownership,
                              warnings=tuple(variables.unused_warnings()), policies=policies), tuple(shown_files))


def _policies_apart(docs: list[tuple[YamlDocument, str]], policy_paths: Sequence[str], problems: list[Problem]
                    ) -> tuple[list[tuple[YamlDocument, str]], list[tuple[YamlDocument, str]]]:
    """The tree's ``kind: Policy`` documents and those of ``--policy PATH`` (``reconciler.policy``),
    apart from the resources."""
    mine = [(d, b) for d, b in docs if isinstance(d.value, dict) and d.value.get("kind") == "Policy"]
    rest = [(d, b) for d, b in docs if not (isinstance(d.value, dict) and d.value.get("kind") == "Policy")]
    return rest, mine + policy_documents(policy_paths, problems)


def policy_documents(paths: Sequence[str], problems: list[Problem]) -> list[tuple[YamlDocument, str]]:
    """The documents of ``--policy PATH`` (files, or directories of ``*.yaml``): Policy documents
    only, anything else is a problem at its line."""
    docs: list[tuple[YamlDocument, str]] = []
    for f in manifest_files(paths, problems):
        if f == "-":
            problems.append(Problem("-", 1, 1, "--policy", "a policy is a file or a directory, not standard input"))
            continue
        text = read_file(f, f, problems)
        if text is None:
            continue
        for doc in parse_documents(text, f, problems):
            kind = doc.value.get("kind") if isinstance(doc.value, dict) else None
            if kind != "Policy":
                problems.append(Problem(doc.file, doc.line, doc.column, doc.label(),
                                        "--policy takes Policy documents only (kind: Policy), got "
                                        + (f"kind {kind}" if isinstance(kind, str) and kind.isidentifier()
                                           else "another document")))
                continue
            docs.append((doc, os.path.dirname(os.path.abspath(f))))
    return docs


def _compile_policies(docs: list[tuple[YamlDocument, str]], problems: list[Problem]) -> tuple[object, ...]:
    if not docs:
        return ()
    rules = [rule for doc, base in docs for rule in compile_policy(doc, problems, base)]
    check_names(rules, problems)
    return tuple(rules)


def load_manifests(paths: Sequence[str], *, stdin: TextIO | None = None, var_assignments: Sequence[str] = (),
                   var_files: Sequence[str] = (), environ: Mapping[str, str] | None = None,
                   policy_paths: Sequence[str] = ()) -> ManifestSet:
    """Load and validate manifests (``-`` reads ``stdin``, default ``sys.stdin``), with the
    variables of ``--var NAME=VALUE``, ``--var-file FILE`` and ``RECONCILER_VAR_*`` in ``environ``
    (default ``os.environ``).

    Raises ``ManifestError`` carrying every problem found. Secrets are not resolved (see
    ``check_secrets``) and no request is made."""
    problems: list[Problem] = []
    variables = collect_variables(var_assignments, var_files, os.environ if environ is None else environ, problems)
    return load(paths, stdin=stdin, variables=variables, problems=problems, policy_paths=policy_paths).manifests
