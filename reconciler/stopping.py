"""A stop asked for by a signal: ``apply`` (SIGTERM) and ``watch`` (SIGTERM and SIGINT) let the calls
in flight finish, start nothing more, then report. The first signal sets the stop and puts the
process's own handlers back, so a second one does what it does by default (SIGTERM ends the process,
Ctrl-C raises ``KeyboardInterrupt``). Handlers are installed only in the main thread (Python allows
no other); elsewhere the stop is only ever set by its owner."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any


class Stop:
    def __init__(self, event: threading.Event | None = None) -> None:
        self.event = event if event is not None else threading.Event()
        self.signal_name: str | None = None  # the signal that asked for it, once one did
        self._previous: dict[int, Any] = {}

    def install(self, *signums: signal.Signals) -> Stop:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._caught) for s in signums}
        return self

    def restore(self) -> None:
        previous, self._previous = self._previous, {}
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _caught(self, signum: int, frame: FrameType | None) -> None:
        self.signal_name = signal.Signals(signum).name
        self.event.set()
        self.restore()

    def __enter__(self) -> Stop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()
