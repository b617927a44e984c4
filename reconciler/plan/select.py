"""``--target`` and ``--exclude`` (README.md, "Commands"): which declared resources a run plans.

Both take address globs (``KIND/NAME`` or ``KIND/SPACE/NAME``; ``* ? [..]``, where ``*`` also
crosses ``/``), matched against a resource's address and its ``KIND/NAME``. ``--target`` keeps the
resources it names and what they depend on (an evaluator's LLM integration); ``--exclude`` then
leaves resources out: neither planned nor pruned. A kept resource that needs an excluded one
created first (an evaluator naming an integration that does not exist live) makes the plan fail,
naming both.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from fnmatch import fnmatchcase

from reconciler.errors import PlanError
from reconciler.kinds import INTEGRATION
from reconciler.model import DesiredResource, LiveState, ManifestSet
from reconciler.plan.context import integration_doc


def named_by(globs: Iterable[str], address: str, kind_name: str | None = None) -> bool:
    return any(fnmatchcase(address, g) or (kind_name is not None and fnmatchcase(kind_name, g)) for g in globs)


def _named(r: DesiredResource, globs: Iterable[str]) -> bool:
    return named_by(globs, r.address, f"{r.kind}/{r.name}")


def select(manifests: ManifestSet, targets: tuple[str, ...], excludes: tuple[str, ...],
           live: LiveState) -> list[DesiredResource]:
    """The resources the run plans, in manifest order."""
    resources = list(manifests)
    if targets:
        chosen = [r for r in resources if _named(r, targets)]
        unknown = [t for t in targets if not any(_named(r, (t,)) for r in resources)]
        if unknown:
            known = sorted({r.address for r in resources} | {f"{r.kind}/{r.name}" for r in resources})
            hints = [f"{u} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(u, known, n=1, cutoff=0.6))
                     else u for u in unknown]
            raise PlanError(f"--target names nothing in the manifests: {', '.join(hints)}")
        needed = {n for r in chosen if (n := r.integration_ref)}
        extra = [r for r in manifests.of_kind("Integration")
                 if r.name in needed and integration_doc(r).type == "LLM" and r not in chosen]
        resources = [r for r in resources if r in chosen or r in extra]
    if not excludes:
        return resources
    kept = [r for r in resources if not _named(r, excludes)]
    left_out = {r.name: r for r in INTEGRATION.among(resources) if _named(r, excludes)
                and integration_doc(r).type == "LLM"}
    problems = []
    for r in kept:
        name = r.integration_ref
        if name in left_out and ("LLM", name) not in live.integrations:
            source = r.source("template_config.llm_config.integration")
            problems.append(f"{r.address} needs {left_out[name].address} created first, and --exclude leaves it "
                            f"out" + (f" ({source})" if source else "") + f"; exclude {r.address} too, or keep "
                            f"{left_out[name].address}")
    if problems:
        raise PlanError("cannot plan:\n" + "\n".join(f"  {p}" for p in problems))
    return kept
