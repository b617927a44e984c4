"""The client's refusals before anything is sent (reconciler/client/http.py, ``ApiClient._call``):
the message a user reads when drift's read-only client meets a write, or a path leaves /v2."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from clienthelpers import Script, ok

from reconciler.client.http import ApiClient
from reconciler.errors import ConfigError, ReadOnlyError


def test_a_read_only_client_refuses_a_write_naming_the_call(make_client: Callable[..., ApiClient],
                                                            script: Script) -> None:
    client = make_client(script.then(ok()), read_only=True)
    with pytest.raises(ReadOnlyError) as caught:
        client.patch("/v2/prompts/P1", {"description": "x"})
    assert str(caught.value) == "PATCH /v2/prompts/P1: refused: this client is read-only (drift never writes)"
    assert script.requests == []


def test_a_path_outside_the_api_is_refused_naming_it(make_client: Callable[..., ApiClient], script: Script) -> None:
    client = make_client(script.then(ok()))
    with pytest.raises(ConfigError, match=r"^refused to send GET '/v1/prompts': the path "):
        client.get("/v1/prompts")
    assert script.requests == []
