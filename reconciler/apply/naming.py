"""The API's refusals in names, not ids: a problem's ``detail`` names the objects it is about by
id ("no LLM integration SW50... is visible from space U3Bh..."); a reviewer knows them by name.
``Namer`` knows the ids of the live state a plan was made from and of what the apply created so
far (its responses), and puts each object's name in quotes where its id was."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from reconciler.model import LiveState

#: Ids are opaque strings (docs/api.md, "Conventions"): long runs of base64 characters.
_ID_LIKE = re.compile(r"[A-Za-z0-9+/=_-]{8,}")


class Namer:
    """id -> name for every object of a live state (integrations, spaces, organizations, prompts,
    datasets, evaluators); ``name(text, responses)`` also learns the objects an apply created."""

    def __init__(self, live: LiveState | None = None) -> None:
        self.names: dict[str, str] = {}
        if live is None:
            return
        for org in live.organizations:
            if org.name:
                self.names[org.id] = org.name
        for space in live.spaces:
            self.names[space.id] = space.name
        for integration in live.integrations.values():
            self.names[integration.id] = integration.name
        for table in (live.prompts, live.datasets, live.evaluators):
            for (_, name), obj in table.items():
                self.names[obj.id] = name

    def name(self, text: str, responses: Mapping[str, Any] = {}) -> str:
        """``text`` with every known id replaced by ``'name'``."""
        names = dict(self.names)
        for response in responses.values():
            if isinstance(response, Mapping) and isinstance(response.get("id"), str) \
                    and isinstance(response.get("name"), str):
                names[response["id"]] = response["name"]

        def one(m: re.Match[str]) -> str:
            word = m.group(0)
            if word in names:
                return f"'{names[word]}'"
            if "/" in word:  # a path holding an id ("/v2/integrations/SW50...")
                return "/".join(f"'{names[p]}'" if p in names else p for p in word.split("/"))
            return word

        return _ID_LIKE.sub(one, text)
