"""``reconciler validate`` and ``reconciler schema``, as plain functions ``main`` wires up (and tests
call directly): output goes through the ``out``/``err`` callables, the exit code is returned."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence

from reconciler.errors import ManifestError
from reconciler.manifests.ignores import unmatched_warnings
from reconciler.manifests.loader import load
from reconciler.manifests.overlay import collect_variables
from reconciler.manifests.schema import manifest_json_schema
from reconciler.manifests.secrets import check_secrets as _check_secrets
from reconciler.manifests.validate import live_lookups
from reconciler.manifests.yamlload import Problem
from reconciler.shown import plural

Echo = Callable[[str], None]


def run_validate(paths: Sequence[str], *, check_secrets: bool, out: Echo, err: Echo,
                 var_assignments: Sequence[str] = (), var_files: Sequence[str] = (),
                 policy_paths: Sequence[str] = ()) -> int:
    """Exit 0 when every manifest is valid (and, with ``check_secrets``, every secret resolves),
    else 1 with every problem on ``err``, one a line."""
    try:
        found: list[Problem] = []
        variables = collect_variables(var_assignments, var_files, os.environ, found)
        loaded = load(paths, variables=variables, problems=found, policy_paths=policy_paths)
    except ManifestError as exc:
        for line in exc.problems:
            err(line)
        err(f"{plural(len(exc.problems), 'problem')} found; the manifests are not valid")
        return 1
    ms = loaded.manifests
    for warning in ms.warnings:
        err(f"Warning: {warning}")
    unmatched = unmatched_warnings(ms.resources, ms.ownership)  # a typo hides a difference: refused here
    if unmatched:
        for line in unmatched:
            err(line)
        err(f"{plural(len(unmatched), 'problem')} found; the manifests are not valid")
        return 1
    if check_secrets:
        problems = _check_secrets(ms)
        if problems:
            for line in problems:
                err(line)
            err(f"{plural(len(problems), 'secret problem')} found")
            return 1
    for resource, name in live_lookups(ms):
        out(f"note: {resource.address}: llm_config.integration '{name}' is not declared in these manifests; "
            "plan looks it up in live state")
    out(f"{plural(len(ms.resources), 'resource')} valid in {plural(len(loaded.files), 'file')}")
    return 0


def run_schema(out: Echo) -> int:
    """Print the JSON Schema of one manifest document."""
    out(json.dumps(manifest_json_schema(), indent=2))
    return 0
