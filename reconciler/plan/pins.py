"""What a plan saw of each live object it depends on, so that a saved plan can be refused when live
state moved. A pin is a key into LiveState; its value is hashed into the plan's fingerprints. The
same functions compute both sides (at plan time and when a plan file is applied)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

from reconciler.kinds import KIND_SPECS
from reconciler.model import LiveState
from reconciler.plan.context import fingerprint
from reconciler.plan.registry import STEPS


def pin_value(key: list[str], live: LiveState) -> Any:
    """What a plan depends on of one live object (its kind's ``KindSteps.pin``): its id and the
    fields a manifest manages (an integration's ``essence``; the other kinds' managed attributes),
    so a field the service adds or bumps on its own never makes a plan stale, while a changed
    managed field, a new version or a re-created object (new id) does."""
    spec = KIND_SPECS.get(key[0])
    obj = live.table(spec.name).get((key[1], key[2])) if spec is not None else None
    return None if obj is None else STEPS[key[0]].pin(obj, live)


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
