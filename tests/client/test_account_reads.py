"""How ``read_live`` reads an account-wide kind: whole by its list (``KindSpec.collection``) unless
``client.live.ACCOUNT_READS`` holds a read of its own (the integrations, listed per type)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from clienthelpers import Script, ok, ran

from reconciler.client.http import ApiClient
from reconciler.client.live import ACCOUNT_READS, account_read, run_tasks
from reconciler.kinds import ACCOUNT_WIDE, INTEGRATION, RESTRICTION
from reconciler.model import LiveState, RestrictionObject


def page(items: list[Any], cursor: str | None = None) -> httpx.Response:
    pagination: dict[str, Any] = {"has_more": cursor is not None}
    if cursor is not None:
        pagination["next_cursor"] = cursor
    return ok({RESTRICTION.list_key: items, "pagination": pagination})


def test_an_account_wide_kind_without_a_read_of_its_own_is_read_whole_by_its_list_keyed_by_its_identity(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    assert RESTRICTION.name not in ACCOUNT_READS  # the restrictions take the default
    script.then(page([{"resource_type": "PROJECT", "resource_id": "P1", "created_at": "2026-01-01T00:00:00Z"}], "c1"),
                page([{"resource_type": "DASHBOARD", "resource_id": "D1"}]))
    live = LiveState()
    ran(make_client(script), lambda c: run_tasks(account_read(RESTRICTION.name).tasks(c, live)))
    assert live.restrictions == {
        ("PROJECT", "P1"): RestrictionObject.read({"resource_type": "PROJECT", "resource_id": "P1",
                                                   "created_at": "2026-01-01T00:00:00Z"}),
        ("DASHBOARD", "D1"): RestrictionObject.read({"resource_type": "DASHBOARD", "resource_id": "D1"})}
    assert [r.url.path for r in script.requests] == [RESTRICTION.collection] * 2  # every page, unfiltered
    assert "type" not in script.requests[0].url.params
    assert account_read(RESTRICTION.name).requests(live) == 1  # two objects: one full page at least


def test_the_integrations_are_read_per_type_and_every_account_wide_kind_has_a_read() -> None:
    assert set(ACCOUNT_READS) <= set(ACCOUNT_WIDE)
    assert account_read(INTEGRATION.name) is ACCOUNT_READS[INTEGRATION.name]
    assert account_read(INTEGRATION.name).requests(LiveState()) == 2  # an empty list of each type is one page
