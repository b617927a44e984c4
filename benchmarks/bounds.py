"""The request lower bound: the fewest requests the API allows for a job, computed from the
account's shape (``census``) and what the manifests declare, never from what the reconciler did.

Lists are read at the API's largest page (100; examples 500); a list of n items takes
``max(1, ceil(n / limit))`` pages.

**Read (a plan)**::

    pages(LLM) + pages(AGENT) + pages(spaces) + pages(organizations) + pages(restrictions)
    + sum over the spaces the manifests name, over Prompt, Dataset, Evaluator: pages(items of that kind there)
    + sum over declared prompts that exist:   pages(its versions)        (labels live on versions)
    + sum over declared datasets that exist:  pages500(its examples)     (latest version)
    + sum over declared evaluators that exist: 1                         (GET: the latest version)
    + sum over declared retention datasets that exist: pages(its experiments)

**Writes an apply is forced to make** (one call each; the API has no batch for them):

- create: an integration 1 POST; a prompt 1 POST (+1 PUT of its labels, which the create body cannot
  carry, +1 POST of a restriction when ``restricted``); a dataset 1 POST with its examples; an
  evaluator 1 POST with its first version.
- change: an integration field 1 PATCH; a prompt description 1 PATCH; a prompt version body 1 POST
  (+1 PUT to move its labels to the new version); changed examples 1 PATCH (the update, in a new
  version); an evaluator template 1 POST of a version; retention 1 DELETE per experiment beyond
  ``keep_last`` and older than ``older_than_days``.

**Re-read after apply** (the product requires confirming convergence by re-reading what apply
touched): integrations of a type ``min(touched, pages(that type))`` (one GET each, or the list);
a touched prompt 1 GET (``/v2/prompts/{id}`` carries the description and the latest version with its
labels), plus ``pages(restrictions)`` once when a restriction was written; a dataset whose examples
changed ``pages500(its examples)``; a dataset whose retention deleted ``pages(its experiments)``; a
touched evaluator 1 GET.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from benchmarks.account import AccountSpec, Change, pages
from benchmarks.census import Census
from reconciler.model import ManifestSet

EXAMPLES_PAGE = 500


@dataclass(frozen=True)
class Bound:
    list_pages: int
    per_resource_reads: int
    writes: int
    reread: int

    @property
    def total(self) -> int:
        return self.list_pages + self.per_resource_reads + self.writes + self.reread

    def as_json(self) -> dict[str, int]:
        return {"list_pages": self.list_pages, "per_resource_reads": self.per_resource_reads,
                "writes": self.writes, "reread": self.reread, "total": self.total}


def _declared(census: Census, keys: frozenset[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted({(sid, name) for space, name in keys if (sid := census.space_id(space)) is not None})


def read_bound(census: Census, manifests: ManifestSet) -> tuple[int, int]:
    """(list pages, per-resource reads) of a plan of ``manifests`` against the account ``census``."""
    scope = manifests.read_scope()
    lists = pages(census.integrations["LLM"]) + pages(census.integrations["AGENT"])
    lists += pages(len(census.spaces)) + pages(census.organizations) + pages(census.restrictions)
    kinds = [k for k in ("Prompt", "Dataset", "Evaluator") if not scope.kinds or k in scope.kinds]
    for space in sorted(scope.spaces):
        sid = census.space_id(space)
        if sid is not None:
            lists += sum(pages(census.in_space(kind, sid)) for kind in kinds)
    per = 0
    for key in _declared(census, scope.prompts):
        if key in census.prompts:
            per += pages(census.prompt_versions[census.prompts[key]])
    for key in _declared(census, scope.datasets):
        if key in census.datasets:
            per += pages(census.examples[census.datasets[key]], EXAMPLES_PAGE)
    for key in _declared(census, scope.retention):
        if key in census.datasets:
            per += pages(len(census.experiments.get(census.datasets[key], [])))
    per += sum(1 for key in _declared(census, scope.evaluators) if key in census.evaluators)
    return lists, per


def read_chain(census: Census, manifests: ManifestSet) -> int:
    """The longest chain of reads of a plan that must follow one another: a list's pages follow
    one another (each needs the previous cursor); a space's lists need the spaces list, and a
    resource's own reads (versions, examples, experiments) need its space's list."""
    scope = manifests.read_scope()
    top = max(pages(census.integrations["LLM"]), pages(census.integrations["AGENT"]), pages(census.organizations),
              pages(census.restrictions))
    kinds = [k for k in ("Prompt", "Dataset", "Evaluator") if not scope.kinds or k in scope.kinds]
    in_space = max((pages(census.in_space(kind, sid)) for space in scope.spaces
                    if (sid := census.space_id(space)) is not None for kind in kinds), default=0)
    own = max([pages(n) for n in census.prompt_versions.values()]
              + [pages(n, EXAMPLES_PAGE) for n in census.examples.values()]
              + [pages(len(e)) for e in census.experiments.values()], default=0)
    return max(top, pages(len(census.spaces)) + in_space + own)


def reread_chain(after: Census) -> int:
    """The longest chain of the re-read after an apply (at most: re-listing the larger integration
    type, or re-reading the longest examples list)."""
    return max([pages(after.integrations["LLM"]), pages(after.integrations["AGENT"])]
               + [pages(n, EXAMPLES_PAGE) for n in after.examples.values()])


def create_writes(manifests: ManifestSet) -> int:
    total = 0
    for r in manifests:
        if r.kind == "Prompt":
            total += 1 + bool((r.spec.get("version") or {}).get("labels")) + (r.spec.get("restricted") is True)
        else:
            total += 1
    return total


def create_reread(after: Census, manifests: ManifestSet) -> int:
    """Re-reading everything an apply from empty created."""
    counts = Counter(str(r.spec.get("type")) for r in manifests.of_kind("Integration"))
    total = sum(min(n, pages(after.integrations[t])) for t, n in counts.items())
    prompts = manifests.of_kind("Prompt")
    total += len(prompts)
    if any(r.spec.get("restricted") is True for r in prompts):
        total += pages(after.restrictions)
    for r in manifests.of_kind("Dataset"):
        sid = after.space_id(str(r.space))
        dataset_id = after.datasets.get((str(sid), r.name))
        total += pages(after.examples[dataset_id] if dataset_id else 0, EXAMPLES_PAGE)
    total += len(manifests.of_kind("Evaluator"))
    return total


def retention_deletes(census: Census, space_id: str | None, name: str, keep_last: int, older_than_days: int,
                      now_iso: str) -> int:
    """Experiments the rule deletes: beyond the ``keep_last`` newest and older than the age."""
    from datetime import datetime, timedelta

    dataset_id = census.datasets.get((str(space_id), name))
    if dataset_id is None:
        return 0
    limit = datetime.fromisoformat(now_iso) - timedelta(days=older_than_days)
    created = census.experiments.get(dataset_id, [])
    return sum(1 for stamp in created[keep_last:] if datetime.fromisoformat(stamp.replace("Z", "+00:00")) < limit)


def change_writes(before: Census, spec: AccountSpec, change: Change, keep_last: int, older_than_days: int,
                  now_iso: str) -> tuple[int, int]:
    """(writes, deletes by retention) the 5% change forces."""
    writes = len(change.llm) + len(change.agent) + len(change.prompt_descriptions)
    writes += 2 * len(change.prompt_versions) + len(change.dataset_examples) + len(change.evaluators)
    deletes = sum(retention_deletes(before, before.space_id(space), name, keep_last, older_than_days, now_iso)
                  for space, name in change.dataset_retention)
    return writes + deletes, deletes


def change_reread(after: Census, change: Change, llm_total: int, agent_total: int) -> int:
    total = min(len(change.llm), pages(llm_total)) + min(len(change.agent), pages(agent_total))
    total += len(change.prompt_descriptions) + len(change.prompt_versions)
    for space, name in change.dataset_examples:
        dataset_id = after.datasets.get((str(after.space_id(space)), name))
        total += pages(after.examples[dataset_id] if dataset_id else 0, EXAMPLES_PAGE)
    for space, name in change.dataset_retention:
        dataset_id = after.datasets.get((str(after.space_id(space)), name))
        total += pages(len(after.experiments.get(dataset_id, [])) if dataset_id else 0)
    total += len(change.evaluators)
    return total


def summary(bound: Bound) -> dict[str, Any]:
    return bound.as_json()
