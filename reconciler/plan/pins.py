"""What a plan saw of each live object it depends on, so that a saved plan can be refused when live
state moved. A pin is a key into LiveState; its value is hashed into the plan's fingerprints. The
same functions compute both sides (at plan time and when a plan file is applied)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from reconciler.client.live import integration_essence
from reconciler.model import LiveState
from reconciler.plan.context import fingerprint


def pin_value(key: list[str], live: LiveState) -> Any:
    """What a plan depends on of one live object: its id and the fields a manifest manages (an
    integration's ``essence``; the other kinds' managed attributes), so a field the service adds or
    bumps on its own never makes a plan stale, while a changed managed field, a new version or a
    re-created object (new id) does."""
    kind = key[0]
    if kind == "Integration":
        obj = live.integrations.get((key[1], key[2]))
        return None if obj is None else [obj.id, integration_essence(obj)]
    if kind == "ResourceRestriction":
        restriction = live.restrictions.get((key[1], key[2]))
        return None if restriction is None else [restriction.resource_type, restriction.resource_id]
    space_id, name = key[1], key[2]
    if kind == "Prompt":
        p = live.prompts.get((space_id, name))
        if p is None:
            return None
        restricted = ("PROMPT", p.id) in live.restrictions
        return [p.id, p.prompt.name, p.prompt.description, p.latest.id if p.latest else None,
                sorted(p.labels.items()), restricted]
    if kind == "Dataset":
        d = live.datasets.get((space_id, name))
        if d is None:
            return None
        experiments = sorted(e.id for e in d.experiments or [])
        digest = d.examples_digest if d.examples_digest is not None else _examples_digest(d.examples)
        return [d.id, d.dataset.name, digest, experiments]
    if kind == "Evaluator":
        e = live.evaluators.get((space_id, name))
        return None if e is None else [e.id, e.evaluator.name, e.evaluator.description,
                                       e.latest.id if e.latest else None]
    return None


def _examples_digest(examples: list[dict[str, Any]] | None) -> str | None:
    """Examples change their ``updated_at`` when they change: ids and stamps identify the set,
    and hashing them is far cheaper than hashing every example's fields. (``read_examples``
    computes the same digest as the pages arrive: ``LiveDataset.examples_digest``.)"""
    if examples is None:
        return None
    joined = "\n".join(f"{e.get('id')}|{e.get('updated_at')}" for e in examples)
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


def pin_fingerprint(key: list[str], live: LiveState) -> str:
    return fingerprint(pin_value(key, live))


class Fingerprints(Mapping[str, str]):
    """A plan's ``address -> pin_fingerprint``, computed on first use: a plan shown as text never
    needs them; one saved, shown as JSON or checked for staleness does. ``live`` must not change
    meanwhile (nothing writes into a ``LiveState`` after its read: a re-read makes a copy)."""

    def __init__(self, pins: Mapping[str, list[str]], live: LiveState) -> None:
        self._pins = dict(pins)
        self._live: LiveState | None = live
        self._values: dict[str, str] | None = None
        self._lock = threading.Lock()

    def _all(self) -> dict[str, str]:
        with self._lock:
            if self._values is None:
                assert self._live is not None
                self._values = {address: pin_fingerprint(key, self._live) for address, key in self._pins.items()}
                self._live = None  # the plan no longer holds the live state
            return self._values

    def __getitem__(self, address: str) -> str:
        return self._all()[address]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._pins)
