"""The executor run as the CLI runs it: on the client's event loop, to its end."""

from __future__ import annotations

from typing import Any

from reconciler.apply.executor import ApplyReport, execute
from reconciler.client.http import ApiClient
from reconciler.plan.model import Plan


def run_plan(plan: Plan, client: ApiClient, **options: Any) -> ApplyReport:
    """``execute(plan, client, **options)`` on the client's loop."""
    return client.run(execute(plan, client, **options))


async def no_sleep(seconds: float) -> None:
    """A client's ``sleep`` that does not wait."""
