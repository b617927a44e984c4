"""A replica of a live account: the live state a plan read, as the plain API objects
``reconciler.emulator.seed`` takes (``account_of``), and a client of an in-process emulator seeded
with them (``open_replica``). Nothing here sends a request to the real API.

A live read holds what a plan needs, not the whole account; what it leaves out is filled in as
little as the emulator needs and said in ``Replica.unknown``:

- write-only values (API keys, header values) are never readable: the replica holds placeholders
  where the read says one is set, and accepts any value;
- a prompt's versions other than the latest and those holding a label are not read: they are
  copies of the latest (so the count is right) with ids of the replica's own;
- a keyed dataset's examples found equal to their declared ones while reading (``matched``) are not
  kept: the replica rebuilds them from the manifests (ids of its own), for the datasets asked;
- only the spaces the manifests name are read, only declared resources' versions, examples and
  experiments (of datasets declaring retention), only the restrictions the key can list.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.client.http import EMULATOR_BASE_URL, ApiClient, build_http_client
from reconciler.client.live import wanted_examples
from reconciler.client.settings import DEFAULT_PARALLELISM
from reconciler.kinds import DATASET, EVALUATOR, INTEGRATION, KIND_SPECS, PROMPT, KindSpec
from reconciler.model import LiveDataset, LivePrompt, LiveState, ManifestSet, PromptVersionObject

#: What a version the read did not fetch says of itself in the replica.
NOT_READ = "(not read: a replica's copy of the latest version)"


@dataclass
class Replica:
    """The account as ``reconciler.emulator.seed`` takes it, and what the replica cannot know."""

    account: dict[str, list[dict[str, Any]]]
    unknown: list[str] = field(default_factory=list)


@dataclass
class _Copying:
    """What the copy of one kind's table reads besides ``live``, and what it notes it cannot know."""

    live: LiveState
    wanted: Mapping[tuple[str, str], tuple[str, list[Any]]]  # a keyed dataset's declared examples
    examples_of: Collection[tuple[str, str]] | None
    unknown: dict[str, int] = field(default_factory=dict)

    def note(self, what: str, n: int = 1) -> None:
        self.unknown[what] = self.unknown.get(what, 0) + n


def account_of(live: LiveState, desired: ManifestSet | None = None, *,
               examples_of: Collection[tuple[str, str]] | None = None) -> Replica:
    """``live`` as plain API objects. ``desired`` rebuilds the examples a keyed read matched (not
    kept in ``live``) for the datasets in ``examples_of`` (live keys; None: every dataset). Each
    kind's table is copied by its entry of ``COPIES``, else as read (``copied_as_read``)."""
    copying = _Copying(live, wanted_examples(desired, live) if desired is not None else {}, examples_of)
    account: dict[str, list[dict[str, Any]]] = {
        "organizations": [o.raw() for o in live.organizations],
        "spaces": [s.raw() for s in live.spaces],
    }
    for spec in KIND_SPECS.values():
        copy = COPIES.get(spec.name)
        account[spec.table] = copy(copying) if copy is not None else copied_as_read(spec, live.table(spec.name))
    lines = [f"{n} {what}" for what, n in copying.unknown.items()]
    lines.append("resources in spaces the manifests do not name are not copied")
    lines.append("only the resource restrictions the key can list are copied, and the replica writes as an admin "
                 "key: a key that may not write or manage a space's restrictions is refused only by the real API")
    return Replica(account, lines)


def copied_as_read(spec: KindSpec, table: Mapping[tuple[str, str], Any]) -> list[dict[str, Any]]:
    """The copy of a kind read whole by its list: each live object of its table (an ``ApiObject``) as
    the API answered it, with its ``space_id`` for a spaced kind (the first of its key)."""
    if spec.spaced:
        return [{**obj.raw(), "space_id": space_id} for (space_id, _), obj in table.items()]
    return [obj.raw() for obj in table.values()]


def _integrations(c: _Copying) -> list[dict[str, Any]]:
    secrets = sum(1 for i in c.live.integrations.values() for _ in _write_only(i.config or {}))
    if secrets:
        c.note("write-only values (API keys, header values) hold placeholders: a wrong key or token is not caught",
               secrets)
    return copied_as_read(INTEGRATION, c.live.integrations)


def _prompts(c: _Copying) -> list[dict[str, Any]]:
    copied = []
    for (space_id, _), prompt in c.live.prompts.items():
        copied.append({**prompt.prompt.raw(), "space_id": space_id, "versions": _prompt_versions(prompt)})
        if prompt.latest is not None and (prompt.version_count or 1) > 1:
            c.note("older prompt versions are copies of the latest (their content is not read)",
                   (prompt.version_count or 1) - 1)
    return copied


def _datasets(c: _Copying) -> list[dict[str, Any]]:
    copied = []
    for key, dataset in c.live.datasets.items():
        examples = list(dataset.examples or [])
        if dataset.matched:
            if key in c.wanted and (c.examples_of is None or key in c.examples_of):
                examples += _rebuilt(dataset, *c.wanted[key])
            else:
                c.note("examples equal to their manifest and untouched by the plan are not copied",
                       len(dataset.matched))
        experiments = [{**e.raw(), "dataset_id": dataset.id} for e in dataset.experiments or []]
        copied.append({**dataset.dataset.raw(), "space_id": key[0], "examples": examples,
                       "experiments": experiments})
    return copied


def _evaluators(c: _Copying) -> list[dict[str, Any]]:
    return [{**evaluator.evaluator.raw(), "space_id": space_id,
             "versions": [evaluator.latest.raw()] if evaluator.latest is not None else []}
            for (space_id, _), evaluator in c.live.evaluators.items()]


#: The kinds whose copy is more than their objects as read (``copied_as_read``): a prompt's versions,
#: a dataset's examples and experiments, an evaluator's latest version, the integrations' write-only
#: values (placeholders: noted).
COPIES: Mapping[str, Callable[[_Copying], list[dict[str, Any]]]] = {
    INTEGRATION.name: _integrations, PROMPT.name: _prompts, DATASET.name: _datasets, EVALUATOR.name: _evaluators,
}


def _write_only(config: dict[str, Any]) -> list[str]:
    """The write-only values a read config says are set (``has_*`` flags, header names)."""
    found = [k for k, v in config.items() if k.startswith("has_") and v is True]
    found += [str(n) for n in config.get("header_names") or []]
    auth = config.get("auth")
    if isinstance(auth, dict):
        found += _write_only(auth)
    return found


def _prompt_versions(prompt: LivePrompt) -> list[dict[str, Any]]:
    """Newest first: the latest as read, each other version a label points at, then copies up to
    the number of versions read."""
    latest = prompt.latest
    if latest is None:
        return []
    held: dict[str, list[str]] = {}
    for label, version_id in prompt.labels.items():
        held.setdefault(version_id, []).append(label)
    versions = [{**latest.raw(), "labels": held.get(latest.id, [])}]
    for version_id, labels in held.items():
        if version_id != latest.id:
            versions.append(_copy(latest, version_id, labels))
    for i in range(len(versions), prompt.version_count or 1):
        versions.append(_copy(latest, f"{prompt.id}/replica-version-{i}", []))
    return versions


def _copy(latest: PromptVersionObject, version_id: str, labels: list[str]) -> dict[str, Any]:
    return {**latest.raw(), "id": version_id, "commit_message": NOT_READ, "labels": labels}


def _rebuilt(dataset: LiveDataset, key: str, declared: list[Any]) -> list[dict[str, Any]]:
    """The examples a keyed read found equal to their declared ones, rebuilt from the manifest."""
    matched = dataset.matched or set()
    stamp = dataset.dataset.raw().get("updated_at")
    return [{"id": f"{dataset.id}/replica-example-{i}", "created_at": stamp, "updated_at": stamp, **e}
            for i, e in enumerate(declared) if isinstance(e, dict) and e.get(key) in matched]


def open_replica(replica: Replica, *, parallelism: int = DEFAULT_PARALLELISM) -> ApiClient:
    """A client of a fresh in-process emulator (in memory) seeded with ``replica.account``."""
    from reconciler.client.inprocess import InProcessTransport
    from reconciler.emulator import seed
    from reconciler.emulator.app import create_app
    from reconciler.emulator.core import Emulator, EmulatorSettings

    emu = Emulator(EmulatorSettings())
    seed(emu.store, replica.account)
    transport = InProcessTransport(create_app(emu), on_close=emu.store.close)
    http = build_http_client(EMULATOR_BASE_URL, emu.settings.admin_key, parallelism=parallelism, transport=transport)
    return ApiClient(http, parallelism=parallelism)
