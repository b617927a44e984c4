"""The naive baseline the figures are compared with: what a simple tool would do.

It reads the same live state with ``parallelism=1`` (every request waits for the previous one),
plans with the same planner (a plan's figures then differ only by how it reads), and on apply
sends one write per declared resource whether or not it changed: an existing integration gets a
PATCH with its whole declared body, a prompt a new version, a dataset one PATCH updating every
example it can match by key (in a new version), an evaluator a new version; a missing resource is
created with one POST. It does not re-read afterwards. Writes go one after the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.client.http import ApiClient, path_segment
from reconciler.errors import ReconcilerError
from reconciler.model import DesiredResource, LiveState, ManifestSet, SecretRef
from reconciler.plan.prompts import version_body


def resolved(value: Any) -> Any:
    """A manifest value with every secret read (this goes on the wire only)."""
    if isinstance(value, SecretRef):
        return value.resolve()
    if isinstance(value, Mapping):
        return {k: resolved(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [resolved(v) for v in value]
    return value


async def naive_writes(manifests: ManifestSet, live: LiveState, client: ApiClient) -> tuple[int, int]:
    """Send one write per declared resource; returns (sent, failed)."""
    integration_ids = {name: obj.id for (t, name), obj in live.integrations.items() if t == "LLM"}
    sent = failed = 0
    for r in sorted(manifests, key=lambda r: r.kind != "Integration"):  # evaluators name integrations
        try:
            request = _write_for(r, live, integration_ids)
            if request is None:
                continue
            method, path, body = request
            sent += 1
            answer = await (client.patch(path, body) if method == "PATCH" else client.post(path, body))
            if r.kind == "Integration" and method == "POST" and isinstance(answer, dict):
                integration_ids[r.name] = str(answer.get("id"))
        except ReconcilerError:
            failed += 1
    return sent, failed


def _write_for(r: DesiredResource, live: LiveState,
               integration_ids: dict[str, str]) -> tuple[str, str, dict[str, Any]] | None:
    spec = r.spec
    space_id = live.space_id(str(r.space)) if r.space else None
    if r.kind == "Integration":
        body = {k: resolved(spec[k]) for k in ("description", "scopings", "config") if k in spec}
        current = live.integrations.get((str(spec.get("type")), r.name))
        if current is None:
            return "POST", "/v2/integrations", {"type": spec.get("type"), "name": r.name, **body}
        return "PATCH", f"/v2/integrations/{path_segment(current.id)}", {"type": spec.get("type"), **body}
    if space_id is None:
        return None
    if r.kind == "Prompt":
        want = dict(spec.get("version") or {})
        prompt = live.prompts.get((space_id, r.name))
        if prompt is None:
            body = {"space_id": space_id, "name": r.name, "version": version_body(want, None)}
            if spec.get("description") is not None:
                body["description"] = spec["description"]
            return "POST", "/v2/prompts", body
        return "POST", f"/v2/prompts/{path_segment(prompt.id)}/versions", version_body(want, None)
    if r.kind == "Dataset":
        examples = list(spec.get("examples") or [])
        dataset = live.datasets.get((space_id, r.name))
        if dataset is None:
            return "POST", "/v2/datasets", {"name": r.name, "space_id": space_id, "examples": examples}
        key = spec.get("key")
        ids = {ex.get(key): ex["id"] for ex in dataset.examples or []} if key else {}
        updates = [{"id": ids[ex.get(key)], **ex} for ex in examples if key and ex.get(key) in ids]
        return "PATCH", f"/v2/datasets/{path_segment(dataset.id)}/examples", \
            {"examples": updates, "new_version": "naive"}
    if r.kind == "Evaluator":
        tc = dict(spec.get("template_config") or {})
        llm = dict(tc.get("llm_config") or {})
        if "integration" in llm:
            llm["ai_integration_id"] = integration_ids.get(str(llm.pop("integration")))
            tc["llm_config"] = llm
        version = {"commit_message": spec.get("commit_message") or "naive", "template_config": tc}
        evaluator = live.evaluators.get((space_id, r.name))
        if evaluator is None:
            return "POST", "/v2/evaluators", {"space_id": space_id, "name": r.name, "type": "template",
                                              **({"description": spec["description"]} if "description" in spec
                                                 else {}), "version": version}
        return "POST", f"/v2/evaluators/{path_segment(evaluator.id)}/versions", version
    return None
