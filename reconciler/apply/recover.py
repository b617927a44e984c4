"""How apply learns whether an ambiguous POST took effect (the client calls these after a 5xx, a
reset or a timeout on a POST, before it dares to send it again): re-read by name, or compare the
newest version with what was sent."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from reconciler.client.http import ApiClient
from reconciler.kinds import KIND_SPECS, KindSpec, Recovery
from reconciler.model import DatasetVersionObject, EvaluatorVersionObject, PromptVersionObject
from reconciler.plan.context import canonical
from reconciler.plan.prompts import VERSION_FIELDS

Recover = Callable[[], Awaitable[Any | None]]


def recover_for_patch(client: ApiClient, path: str, body: Any, not_before: datetime) -> Recover | None:
    """A recover function for the one PATCH that is not idempotent: examples updated into a new
    dataset version. It took effect when the dataset's newest version has that name and was made
    since this apply started (with five minutes of allowance for clock skew)."""
    m = re.fullmatch(r"/v2/datasets/([^/]+)/examples", path)
    if m is None or not isinstance(body, dict) or not body.get("new_version"):
        return None
    dataset_id, name = m.group(1), str(body["new_version"])

    async def made() -> Any | None:
        path = f"/v2/datasets/{dataset_id}"
        versions = [DatasetVersionObject.read(v, path) for v in (await client.get(path)).get("versions") or []]
        newest = versions[0] if versions else None
        created = _parse_time(newest.created_at) if newest is not None else None
        if newest is not None and newest.name == name and created is not None \
                and created >= not_before - timedelta(minutes=5):
            return {"dataset_version_id": newest.id, "recovered": True}
        return None

    return made


async def _nothing_made() -> None:
    """An idempotent POST (``Recovery.RESEND``): after an ambiguous failure it is simply sent again."""
    return None


def _parse_time(value: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value))  # a trailing Z is UTC (Python 3.11)
    except ValueError:
        return None


#: Each kind by the collection its creates are POSTed to.
_CREATED_AT: Mapping[str, KindSpec] = {spec.collection: spec for spec in KIND_SPECS.values()}


def _created(client: ApiClient, spec: KindSpec, body: Any) -> Recover | None:
    """A create of ``spec``'s kind, found out as its ``recover`` rule says."""
    if spec.recover is Recovery.RESEND:
        return _nothing_made
    if not isinstance(body, dict):
        return None
    scope = "space_id" if spec.spaced else spec.identity[0]

    async def by_name() -> Any | None:
        found = await client.find_by_name(spec.collection, spec.list_key, str(body.get("name")),
                                          {scope: body.get(scope)})
        if found is None or spec.recover is Recovery.BY_NAME:
            return found
        return await client.get(f"{spec.collection}/{found['id']}")  # with its version, as the create returns it

    return by_name


def recover_for(client: ApiClient, path: str, body: Any) -> Recover | None:
    """A recover function for a POST, or None when nothing can tell."""
    spec = _CREATED_AT.get(path)
    if spec is not None:
        return _created(client, spec, body)
    if not isinstance(body, dict):
        return None
    if m := re.fullmatch(r"/v2/prompts/([^/]+)/versions", path):
        async def prompt_version() -> Any | None:
            newest = (await client.get(path, {"limit": 1})).get("prompt_versions") or []
            version = PromptVersionObject.read(newest[0], path) if newest else None
            if version is not None and all(canonical(getattr(version, f)) == canonical(body[f])
                                           for f in VERSION_FIELDS if f in body):
                return newest[0]  # the answer as the API gave it: later calls refer into it
            return None

        del m
        return prompt_version
    if m := re.fullmatch(r"/v2/evaluators/([^/]+)/versions", path):
        evaluator_id = m.group(1)

        async def evaluator_version() -> Any | None:
            path = f"/v2/evaluators/{evaluator_id}"
            version = (await client.get(path)).get("version") or {}
            template = EvaluatorVersionObject.read(version, path).template_config
            if canonical(template.raw() if template else None) == canonical(body.get("template_config")):
                return version  # the answer as the API gave it: later calls refer into it
            return None

        return evaluator_version
    if re.fullmatch(r"/v2/datasets/[^/]+/examples", path):
        async def appended() -> Any | None:
            live = Counter(canonical({k: v for k, v in e.items() if k not in ("id", "created_at", "updated_at")})
                           for e in await client.paginate(path, "examples", limit=500))
            sent = Counter(canonical(e) for e in body.get("examples") or [])
            return {"recovered": True} if all(live[k] >= n for k, n in sent.items()) else None

        return appended
    return None
