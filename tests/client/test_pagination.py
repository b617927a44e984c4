"""Cursor pagination: every page followed, empty pages crossed, broken cursors refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from clienthelpers import Script, ok, ran

from reconciler.client.http import ApiClient
from reconciler.errors import PaginationError


def page(items: list[Any], cursor: str | None = None, key: str = "resource_restrictions") -> httpx.Response:
    pagination: dict[str, Any] = {"has_more": cursor is not None}
    if cursor is not None:
        pagination["next_cursor"] = cursor
    return ok({key: items, "pagination": pagination})


def test_paginate_follows_next_cursor_until_has_more_is_false(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(page([1, 2], "c1"), page([3], "c2"), page([4]))
    items: list[Any] = ran(make_client(script), lambda c: c.paginate("/v2/resource-restrictions", "resource_restrictions",
                                                    {"resource_type": "PROMPT"}))
    assert items == [1, 2, 3, 4]
    params = [dict(r.url.params) for r in script.requests]
    assert params == [
        {"resource_type": "PROMPT", "limit": "100"},
        {"resource_type": "PROMPT", "limit": "100", "cursor": "c1"},
        {"resource_type": "PROMPT", "limit": "100", "cursor": "c2"},
    ]


def test_paginate_sends_the_page_size_it_is_given(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(page([], key="examples"))
    ran(make_client(script), lambda c: c.paginate("/v2/datasets/D/examples", "examples", limit=500))
    assert script.requests[0].url.params["limit"] == "500"


def test_paginate_does_not_stop_on_an_empty_page_while_has_more(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(page([], "c1"), page([], "c2"), page(["late"]))
    items: list[Any] = ran(make_client(script), lambda c: c.paginate("/v2/resource-restrictions", "resource_restrictions"))
    assert items == ["late"]
    assert len(script.requests) == 3


def test_paginate_refuses_a_repeated_cursor(make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(page([1], "c1"), page([2], "c2"), page([3], "c1"))
    with pytest.raises(PaginationError) as info:
        ran(make_client(script), lambda c: c.paginate("/v2/resource-restrictions", "resource_restrictions"))
    assert "repeated a cursor" in str(info.value)
    assert info.value.path == "/v2/resource-restrictions"
    assert len(script.requests) == 3


def test_paginate_refuses_has_more_without_next_cursor(make_client: Callable[..., ApiClient],
                                                       script: Script) -> None:
    script.then(ok({"resource_restrictions": [1], "pagination": {"has_more": True}}))
    with pytest.raises(PaginationError, match="next_cursor is missing"):
        ran(make_client(script), lambda c: c.paginate("/v2/resource-restrictions", "resource_restrictions"))


def test_paginate_refuses_an_answer_without_the_list(make_client: Callable[..., ApiClient],
                                                     script: Script) -> None:
    script.then(ok({"items": [], "pagination": {"has_more": False}}))
    with pytest.raises(PaginationError, match="no list 'prompts'"):
        ran(make_client(script), lambda c: c.paginate("/v2/prompts", "prompts"))


def test_paginate_treats_a_missing_pagination_object_as_the_last_page(
        make_client: Callable[..., ApiClient], script: Script) -> None:
    script.then(ok({"spaces": [{"id": "S"}]}))
    assert ran(make_client(script), lambda c: c.paginate("/v2/spaces", "spaces")) == [{"id": "S"}]


def test_find_by_name_matches_exactly_across_pages(make_client: Callable[..., ApiClient],
                                                   script: Script) -> None:
    # The service's name filter is a case-insensitive substring match.
    script.then(page([{"name": "Summarize"}, {"name": "summarize-v2"}], "c1", key="prompts"),
                page([{"name": "summarize", "id": "P3"}], key="prompts"))
    found = ran(make_client(script), lambda c: c.find_by_name("/v2/prompts", "prompts", "summarize", {"space_id": "S1"}))
    assert found == {"name": "summarize", "id": "P3"}
    assert script.requests[0].url.params["name"] == "summarize"
    assert script.requests[0].url.params["space_id"] == "S1"


def test_find_by_name_returns_none_when_only_substrings_match(make_client: Callable[..., ApiClient],
                                                              script: Script) -> None:
    script.then(page([{"name": "prod-2"}, {"name": "PROD"}], key="integrations"))
    assert ran(make_client(script), lambda c: c.find_by_name("/v2/integrations", "integrations", "prod")) is None
