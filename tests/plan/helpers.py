"""Builders for planner tests: desired resources and live objects without manifests or HTTP."""

from __future__ import annotations

from typing import Any

from reconciler.model import (
    DesiredResource,
    LiveIntegration,
    LiveSpace,
    LiveState,
    ManifestSet,
    Ownership,
    SecretRef,
)

SPACES = [LiveSpace(id="U3BhY2U6MQ", name="default", organization_id="T3JnOjE"),
          LiveSpace(id="U3BhY2U6Mg", name="research", organization_id="T3JnOjE")]
DEFAULT = "U3BhY2U6MQ"
RESEARCH = "U3BhY2U6Mg"


def key(name: str = "KEY") -> SecretRef:
    return SecretRef("env", name)


def res(kind: str, name: str, space: str | None = None, **spec: Any) -> DesiredResource:
    return DesiredResource(kind=kind, name=name, space=space, spec=spec)


def llm(name: str, provider: str = "VENDOR_A", **config: Any) -> DesiredResource:
    return res("Integration", name, type="LLM", config={"provider": provider, **config})


def live_llm(name: str, provider: str = "VENDOR_A", id: str = "SW50OjE", **config: Any) -> dict[str, Any]:
    return {"id": id, "type": "LLM", "name": name, "scopings": [], "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "created_by_user_id": "VXNlcjox",
            "config": {"provider": provider, **config}}


def state(*integrations: dict[str, Any], **kw: Any) -> LiveState:
    live = LiveState(spaces=list(SPACES), **kw)
    for obj in integrations:
        live.integrations[(obj["type"], obj["name"])] = LiveIntegration.model_validate(obj)
    return live


def manifests(*resources: DesiredResource, ownership: Ownership | None = None) -> ManifestSet:
    return ManifestSet(tuple(resources), ownership=ownership)


#: An Ownership of every integration and restriction (and the research space).
OWN_ALL = Ownership("all", spaces=("research",), integrations=("*",), resource_restrictions=("*",))
