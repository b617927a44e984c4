"""The live-state reader: exactly the reads the manifests need, as parallel chains (see
``read_live``). What of a live object a comparison looks at is ``reconciler.essence``.

Reads (every list at ``limit=100``, the API maximum, examples at 500; every page followed):

1. Always: spaces, organizations, and each account-wide kind: integrations ``?type=LLM`` and
   ``?type=AGENT``; any other kind (resource restrictions...) its whole list (``KindSpec.collection``,
   unfiltered; ``ACCOUNT_READS`` holds the kinds read otherwise).
2. For each space the manifests name (resolved by exact name, then id): the list of each spaced
   kind (``KindSpec.collection``, ``?space_id=``: prompts, datasets, evaluators), for the kinds the
   manifests use (every one when ``scope.kinds`` is empty). Every listed object is kept, declared
   or not: ``--prune`` needs them.
3. Per resource the manifests declare that exists live: a prompt's versions (newest first: the
   first is ``latest``; each version's ``labels`` says where a label points), a dataset's examples
   (latest version), an evaluator with its latest version, and the experiments of a dataset that
   declares retention.

The number of requests is therefore (see ``minimum_requests``)::

    requests = sum of pages over every list read  +  one GET per declared evaluator that exists

where a list of n items at limit L takes ``max(1, ceil(n / L))`` pages when every page is full;
authorization filtering (resource restrictions) can only add pages. ``LiveState.requests`` counts
the calls the reader made, not retries (those are in ``LiveState.retries``).

Names are matched exactly on the client (the service's ``name`` filter is a substring match, and
the reader lists whole spaces anyway).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from reconciler.client.http import ApiClient, path_segment
from reconciler.essence import same_example
from reconciler.kinds import ACCOUNT_WIDE, DATASET, EVALUATOR, INTEGRATION, KIND_SPECS, PROMPT
from reconciler.model import (
    LIVE_TYPES,
    EvaluatorObject,
    EvaluatorVersionObject,
    ExperimentObject,
    LiveDataset,
    LiveEvaluator,
    LiveIntegration,
    LiveOrganization,
    LivePrompt,
    LiveSpace,
    LiveState,
    ManifestSet,
    PromptObject,
    PromptVersionObject,
    ReadScope,
)
from reconciler.providers import INTEGRATION_TYPES

LIST_LIMIT = 100
EXAMPLES_LIMIT = 500

#: The spaced kinds (``reconciler.kinds``): manifest kind -> (list path, list key).
SPACED_LISTS: Mapping[str, tuple[str, str]] = {k.name: (k.collection, k.list_key) for k in KIND_SPECS.values()
                                               if k.spaced}


Task = Callable[[], Awaitable["list[Task] | None"]]


async def read_live(client: ApiClient, scope: ReadScope, desired: ManifestSet | None = None) -> LiveState:
    """Everything the plan compares against (module docstring), keyed as ``LiveState`` documents.

    With ``desired`` (the manifests the plan is for), the examples of a keyed dataset are compared
    with the declared ones page by page as they arrive (``read_examples``): only the ones that
    differ are kept whole, so a large dataset is not held twice.

    The reads form independent chains, tasks of the client's event loop (``run_tasks``; the client's
    limit bounds the requests in flight): the account-wide lists, and spaces -> each (space, kind)
    list -> that list's per-resource reads. A task returns the tasks its answer makes possible, so
    the next step of a chain starts as soon as its own previous step is done and the long
    integration lists never hold up the rest."""
    before = client.stats.snapshot()
    live = LiveState()
    wanted: dict[tuple[str, str], tuple[str, list[Any]]] = {}

    async def organizations() -> None:
        live.organizations = [LiveOrganization.read(o, "/v2/organizations")
                              for o in await client.paginate("/v2/organizations", "organizations", limit=LIST_LIMIT)]

    async def spaces() -> list[Task]:
        live.spaces = [LiveSpace.read(s, "/v2/spaces") for s in await client.paginate("/v2/spaces", "spaces", limit=LIST_LIMIT)]
        if desired is not None:
            wanted.update(wanted_examples(desired, live))
        space_ids = sorted({sid for s in scope.spaces if (sid := live.space_id(s)) is not None})
        kinds = [k for k in SPACED_LISTS if not scope.kinds or k in scope.kinds]
        declared = {name: set(_declared(live, getattr(scope, name)))  # live keys of what the manifests declare
                    for name in ("prompts", "datasets", "retention", "evaluators")}
        return [_space_chain(client, live, declared, sid, kind, wanted) for sid in space_ids for kind in kinds]

    account_wide = [task for kind in ACCOUNT_WIDE for task in account_read(kind).tasks(client, live)]
    await run_tasks([spaces, organizations, *account_wide])
    after = client.stats.snapshot()
    live.requests = after.total_requests - before.total_requests
    live.retries = after.retries - before.retries
    return live


async def run_tasks(tasks: list[Task]) -> None:
    """Run tasks, and the follow-up tasks they return, concurrently on the running event loop: each
    task, as it ends, starts its own follow-ups (nothing waits on the whole set again and again).
    On a failure no new task starts; the running ones finish, then the first error is raised.
    Cancelled (Ctrl-C), it cancels the tasks it started and waits for them."""
    running: set[asyncio.Task[list[Task] | None]] = set()
    errors: list[BaseException] = []
    over = asyncio.Event()

    def start(task: Task) -> None:
        started = asyncio.ensure_future(task())
        running.add(started)
        started.add_done_callback(ended)

    def ended(task: asyncio.Task[list[Task] | None]) -> None:
        running.discard(task)
        if task.cancelled():
            pass
        elif (error := task.exception()) is not None:
            errors.append(error)
        elif not errors:
            for follow in task.result() or ():
                start(follow)
        if not running:
            over.set()

    for task in tasks:
        start(task)
    if running:
        try:
            await over.wait()
        except asyncio.CancelledError:
            for left in running:
                left.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise
    if errors:
        raise errors[0]


def _space_chain(client: ApiClient, live: LiveState, declared: Mapping[str, set[tuple[str, str]]], space_id: str,
                 kind: str, wanted: Mapping[tuple[str, str], tuple[str, list[Any]]]) -> Task:
    """One space's list of one kind; its result is the per-resource reads of the declared ones in it."""
    async def run() -> list[Task]:
        reads: list[Task] = []
        path, list_key = SPACED_LISTS[kind]
        table = live.table(kind)
        for item in await client.paginate(path, list_key, {"space_id": space_id}, limit=LIST_LIMIT):
            obj = LIVE_TYPES[kind].read(item, path)
            key = (space_id, item["name"])
            table[key] = obj
            if kind in _FOLLOW:
                reads.extend(_FOLLOW[kind](client, obj, key, declared, wanted))
        return reads
    return run


def _dataset_reads(client: ApiClient, dataset: LiveDataset, key: tuple[str, str],
                   declared: Mapping[str, set[tuple[str, str]]], wanted: Mapping[Any, Any]) -> list[Task]:
    reads: list[Task] = [partial(read_examples, client, dataset, wanted.get(key))] if key in declared["datasets"] else []
    return reads + [_read_experiments(client, dataset)] if key in declared["retention"] else reads


#: The reads that follow a listed object of a spaced kind when the manifests declare it (a prompt's
#: versions, a dataset's examples and experiments, an evaluator's version). A kind without an entry
#: is read whole by its list, each object as its live type (``model.LIVE_TYPES``).
_FOLLOW: Mapping[str, Callable[..., list[Task]]] = {
    PROMPT.name: lambda client, prompt, key, declared, wanted:
        [_read_prompt_versions(client, prompt)] if key in declared["prompts"] else [],
    DATASET.name: _dataset_reads,
    EVALUATOR.name: lambda client, evaluator, key, declared, wanted:
        [_read_evaluator(client, evaluator)] if key in declared["evaluators"] else []}


@dataclass(frozen=True)
class AccountRead:
    """How ``read_live`` reads an account-wide kind: its tasks (filling the kind's ``LiveState``
    table), and the requests they make at least for the table they filled (``minimum_requests``)."""

    tasks: Callable[[ApiClient, LiveState], list[Task]]
    requests: Callable[[LiveState], int]


def _pages(n: int, limit: int = LIST_LIMIT) -> int:
    return max(1, math.ceil(n / limit))


def read_whole(kind: str) -> AccountRead:
    """An account-wide kind read whole by its list (``KindSpec.collection``): each object as its live
    type (``model.LIVE_TYPES``), keyed by its identity's fields (``KindSpec.identity``, as the API
    names them)."""
    spec = KIND_SPECS[kind]
    first, second = spec.identity

    def tasks(client: ApiClient, live: LiveState) -> list[Task]:
        async def read() -> None:
            table = live.table(kind)
            for item in await client.paginate(spec.collection, spec.list_key, limit=LIST_LIMIT):
                obj = LIVE_TYPES[kind].read(item, spec.collection)
                table[(str(item[first]), str(item[second]))] = obj
        return [read]

    return AccountRead(tasks, lambda live: _pages(len(live.table(kind))))


def _integration_reads(client: ApiClient, live: LiveState) -> list[Task]:
    def of_type(asked: str) -> Task:
        async def read() -> None:
            for item in await client.paginate(INTEGRATION.collection, INTEGRATION.list_key, {"type": asked},
                                              limit=LIST_LIMIT):
                obj = LiveIntegration.read({"type": asked, **item}, INTEGRATION.collection)
                live.integrations[(obj.type, obj.name)] = obj
        return read
    return [of_type(t) for t in INTEGRATION_TYPES]  # one list per type (``?type=LLM``, ``?type=AGENT``)


#: The account-wide kinds read otherwise than whole by their list (``read_whole``): the integrations,
#: listed per type.
ACCOUNT_READS: Mapping[str, AccountRead] = {
    INTEGRATION.name: AccountRead(_integration_reads, lambda live: sum(
        _pages(sum(1 for t, _ in live.integrations if t == asked)) for asked in INTEGRATION_TYPES)),
}


def account_read(kind: str) -> AccountRead:
    """How ``read_live`` reads an account-wide kind: its entry of ``ACCOUNT_READS``, else ``read_whole``."""
    return ACCOUNT_READS.get(kind) or read_whole(kind)


def minimum_requests(live: LiveState, scope: ReadScope) -> int:
    """The requests ``read_live`` needs for the state it returned when every page is full (the
    module docstring's formula). A service that filters pages after reading them (resource
    restrictions) can make the real number larger, never smaller."""
    total = _pages(len(live.spaces)) + _pages(len(live.organizations))
    total += sum(account_read(kind).requests(live) for kind in ACCOUNT_WIDE)
    space_ids = {sid for s in scope.spaces if (sid := live.space_id(s)) is not None}
    kinds = [k for k in SPACED_LISTS if not scope.kinds or k in scope.kinds]
    for sid in space_ids:
        for kind in kinds:
            total += _pages(sum(1 for s, _ in live.table(kind) if s == sid))
    for key in _declared(live, scope.prompts):
        if key in live.prompts:
            total += _pages(live.prompts[key].version_count or 0)
    for key in _declared(live, scope.datasets):
        if key in live.datasets:
            d = live.datasets[key]
            total += _pages(len(d.examples or []) + len(d.matched or {}), EXAMPLES_LIMIT)
    for key in _declared(live, scope.retention):
        if key in live.datasets:
            total += _pages(len(live.datasets[key].experiments or []))
    total += sum(1 for key in _declared(live, scope.evaluators) if key in live.evaluators)
    return total


# ---------------------------------------------------------------- the reads


def _declared(live: LiveState, keys: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Manifest keys (space name or id, name) as live keys (space id, name), in a stable order;
    keys whose space does not exist live are left out (the planner reports them)."""
    out = {(sid, name) for space, name in keys if (sid := live.space_id(space)) is not None}
    return sorted(out)


def _read_prompt_versions(client: ApiClient, prompt: LivePrompt) -> Task:
    async def read() -> None:
        path = f"/v2/prompts/{path_segment(prompt.id)}/versions"
        versions = [PromptVersionObject.read(v, path)
                    for v in await client.paginate(path, "prompt_versions", limit=LIST_LIMIT)]
        prompt.version_count = len(versions)
        prompt.latest = versions[0] if versions else None
        prompt.labels = labels_of(versions)
    return read


def labels_of(versions: list[PromptVersionObject]) -> dict[str, str]:
    """label -> id of the version holding it, from versions newest first. Should two versions
    claim one label, the newest wins."""
    labels: dict[str, str] = {}
    for version in versions:
        for name in version.label_names():
            labels.setdefault(name, version.id)
    return labels


def wanted_examples(desired: ManifestSet, live: LiveState) -> dict[tuple[str, str], tuple[str, list[Any]]]:
    """(key, declared examples) of every keyed dataset the manifests declare, by live key."""
    out: dict[tuple[str, str], tuple[str, list[Any]]] = {}
    for r in desired.of_kind("Dataset"):
        key, examples, sid = r.spec.get("key"), r.spec.get("examples"), live.space_id(str(r.space))
        if isinstance(key, str) and key and isinstance(examples, list) and sid is not None:
            out[(sid, r.name)] = (key, examples)
    return out


async def read_examples(client: ApiClient, dataset: LiveDataset, wanted: tuple[str, list[Any]] | None) -> None:
    """The examples of the dataset's latest version, into ``dataset.examples`` (and
    ``dataset.matched``, ``dataset.examples_digest``), consumed a page at a time.

    With ``wanted`` (the dataset's key and its declared examples) an example whose key is declared
    once and whose user fields equal the declared example's is recorded in ``matched`` (its key,
    the declared example's own key object: nothing of it is kept) and not kept; every other one is
    kept whole, as without ``wanted``. A key declared twice matches nothing; a key met twice live
    (the planner decides which of the two stays) makes the read start again without ``wanted``:
    a rare case that costs a second pass, never a wrong plan."""
    index: dict[Any, dict[str, Any]] = {}
    if wanted is not None:
        key, declared = wanted
        keyed = [e for e in declared if isinstance(e, dict) and key in e]
        index = {e[key]: e for e in keyed}
        if len(index) != len(keyed):  # a key declared twice: nothing is matched here
            index = {}
    else:
        key = ""
    kept: list[dict[str, Any]] = []
    matched: set[Any] = set()
    kept_keys: set[Any] = set()
    digest = hashlib.sha256()
    separator = ""  # the digest is of every example's "id|updated_at", joined by newlines
    path = f"/v2/datasets/{path_segment(dataset.id)}/examples"
    async for page in client.pages(path, "examples", limit=EXAMPLES_LIMIT):
        if page:
            digest.update((separator + "\n".join(f"{e.get('id')}|{e.get('updated_at')}" for e in page)).encode())
            separator = "\n"
        for e in page:
            if index and key in e:
                k = e[key]
                want = index.get(k)
                if k in matched or k in kept_keys:  # met twice live: read it all again, whole
                    await read_examples(client, dataset, None)
                    return
                if want is not None and same_example(e, want):
                    matched.add(want[key])
                    continue
                kept_keys.add(k)
            kept.append(e)
    dataset.examples = kept
    dataset.matched = matched if wanted is not None else None
    dataset.examples_digest = digest.hexdigest()[:16]


def _read_experiments(client: ApiClient, dataset: LiveDataset) -> Task:
    async def read() -> None:
        dataset.experiments = await read_experiments(client, dataset.id)
    return read


async def read_experiments(client: ApiClient, dataset_id: str) -> list[ExperimentObject]:
    return [ExperimentObject.read(e, "/v2/experiments") for e in await client.paginate(
        "/v2/experiments", "experiments", {"dataset_id": dataset_id}, limit=LIST_LIMIT)]


async def read_evaluator(client: ApiClient, evaluator_id: str) -> LiveEvaluator:
    """GET /v2/evaluators/{id}: the evaluator with its latest version taken apart."""
    path = f"/v2/evaluators/{path_segment(evaluator_id)}"
    full = dict(await client.get(path))
    version = full.pop("version", None)
    return LiveEvaluator(evaluator=EvaluatorObject.read(full, path),
                         latest=EvaluatorVersionObject.read(version, path) if isinstance(version, dict) else None)


async def read_prompt(client: ApiClient, prompt_id: str) -> LivePrompt:
    """GET /v2/prompts/{id}: the prompt with its latest version (and that version's labels)."""
    path = f"/v2/prompts/{path_segment(prompt_id)}"
    full = dict(await client.get(path))
    version = full.pop("version", None)
    latest = PromptVersionObject.read(version, path) if isinstance(version, dict) else None
    return LivePrompt(prompt=PromptObject.read(full, path), latest=latest,
                      labels=labels_of([latest] if latest else []))


async def read_object(client: ApiClient, kind: str, object_id: str) -> Any:
    """GET {collection}/{id}: one object of a kind as its live type (``model.LIVE_TYPES``)."""
    path = f"{KIND_SPECS[kind].collection}/{path_segment(object_id)}"
    return LIVE_TYPES[kind].read(await client.get(path), path)


def _read_evaluator(client: ApiClient, evaluator: LiveEvaluator) -> Task:
    async def read() -> None:
        evaluator.latest = (await read_evaluator(client, evaluator.id)).latest
    return read


# ---------------------------------------------------------------- who uses an integration




async def read_integration_users(client: ApiClient, live: LiveState) -> list[tuple[str, str, str, str]]:
    """``(integration id, space name, evaluator name, evaluator id)`` for every evaluator of the
    account whose latest version names an integration (``llm_config.ai_integration_id``), declared
    or not, in every space. Read only when a plan would delete or replace an integration: the
    evaluators the live read already holds are reused, the other spaces are listed and each
    evaluator read once."""
    found: list[tuple[str, str, str, str]] = []
    known = {sid for sid, _ in live.evaluators}

    def use(space_id: str, evaluator: LiveEvaluator) -> None:
        used = evaluator.latest.integration_id if evaluator.latest is not None else None
        if used:
            found.append((used, live.space_name(space_id), evaluator.evaluator.name, evaluator.id))

    def latest(space_id: str, evaluator: LiveEvaluator) -> Task:
        async def read() -> None:
            if evaluator.latest is None:
                await _read_evaluator(client, evaluator)()
            use(space_id, evaluator)
        return read

    def space(space_id: str) -> Task:
        async def read() -> list[Task]:
            items = await client.paginate("/v2/evaluators", "evaluators", {"space_id": space_id}, limit=LIST_LIMIT)
            return [latest(space_id, LiveEvaluator(evaluator=EvaluatorObject.read(item, "/v2/evaluators"))) for item in items]
        return read

    tasks: list[Task] = [latest(sid, e) for (sid, _), e in sorted(live.evaluators.items())]
    tasks += [space(s.id) for s in live.spaces if s.id not in known]
    await run_tasks(tasks)
    return sorted(found)
