"""What the CLI shows while it works, on a terminal only: the live read as a count of requests per
kind on stderr (rich), so a long read of thousands of resources is never a silent wait. Off a
terminal (CI logs, cron) nothing is drawn."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

_ID = re.compile(r"^/v2/([a-z-]+)(?:/[^/]+)?(?:/([a-z-]+))?")
_SINGULAR = {"prompts": "prompt", "datasets": "dataset", "evaluators": "evaluator"}


def request_kind(path: str) -> str:
    """What a request reads, in words: ``/v2/datasets/D1/examples`` is "examples", ``/v2/prompts/P1/versions``
    "prompt versions", ``/v2/integrations`` "integrations"."""
    m = _ID.match(path)
    if m is None:
        return "other"
    collection, sub = m.group(1), m.group(2)
    if sub:
        return f"{_SINGULAR.get(collection, collection)} {sub}" if sub == "versions" else sub
    return collection.replace("-", " ")


@contextmanager
def read_progress(client: Any, *, enabled: bool | None = None) -> Iterator[dict[str, int]]:
    """Count the client's requests per kind while the block runs, drawn on stderr when it is a
    terminal (``enabled`` overrides the check). Yields the counts."""
    counts: dict[str, int] = {}
    show = sys.stderr.isatty() if enabled is None else enabled
    progress: Any = None
    if show:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn

        progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), console=Console(stderr=True),
                            transient=True)
        task = progress.add_task("Reading live state")

    def count(method: str, path: str) -> None:
        kind = request_kind(path)
        counts[kind] = counts.get(kind, 0) + 1
        if progress is not None:
            progress.update(task, description="Reading live state: " + ", ".join(
                f"{kind} {n}" for kind, n in counts.items()))

    with progress if progress is not None else nullcontext():
        client.on_request = count
        try:
            yield counts
        finally:
            client.on_request = None
