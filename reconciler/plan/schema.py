"""The JSON form of a plan (``--format json``, the PLANFILE format) as pydantic models, and its
JSON Schema (``reconciler schema --plan``). ``Plan.to_json`` writes it; the schema is checked
against every plan the end-to-end tests produce (``tests/e2e/conftest.py``).

``format_version`` follows semantic versioning: a consumer (a conftest/OPA policy, a CI script)
accepts every version of the major it was written for.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reconciler.plan.model import FORMAT_VERSION

SEMVER = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$"
Action = Literal["create", "update", "delete", "replace"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChangeJson(_Closed):
    """One field that differs; secrets are the string ``(sensitive)``."""

    path: str = Field(description="Dotted manifest field path ('' for the resource itself).")
    before: Any = Field(description="The live value (null: absent).")
    after: Any = Field(description="The desired value (null: absent or removed).")
    source: str | None = Field(description="FILE:LINE of the manifest value asking for the change.")


class OperationJson(_Closed):
    """One API call, in execution order."""

    id: str = Field(description="Stable id: ADDRESS#step.")
    address: str = Field(description="The manifest resource: KIND/NAME or KIND/SPACE/NAME.")
    action: Action
    kind: str
    name: str
    space: str | None = Field(None, description="The space, for Prompt, Dataset, Evaluator (and experiments).")
    method: Literal["POST", "PATCH", "PUT", "DELETE"]
    path: str = Field(description="The request path; ${OP:path} stands for a value known after an earlier call.")
    body: Any = Field(description="The request body; secrets as (sensitive).")
    changes: list[ChangeJson]
    depends_on: list[str] = Field(description="Ids of the operations that run first.")
    secrets: dict[str, str] | None = Field(None, description="JSON pointer in body -> env:NAME or file:PATH.")
    note: str | None = Field(None, description="Why, for humans.")


class SummaryJson(_Closed):
    """Counts by object (a resource with several calls counts once)."""

    create: int = Field(ge=0)
    update: int = Field(ge=0)
    delete: int = Field(ge=0)
    replace: int = Field(ge=0)
    unmanaged: int = Field(ge=0)
    ignored: int | None = Field(None, ge=0, description="Changes left alone by ignore_changes.")


class UnmanagedJson(_Closed):
    address: str
    kind: str
    name: str
    path: str
    space: str | None = None


class IgnoredJson(_Closed):
    """A difference an ignore_changes rule leaves alone (never updated, never drift)."""

    address: str
    path: str = Field(description="Dotted manifest field path.")
    before: Any = Field(description="The live value.")
    after: Any = Field(description="The declared value.")
    source: str | None = Field(description="FILE:LINE of the rule.")


class VerdictJson(_Closed):
    """A policy rule that fired."""

    rule: str
    effect: Literal["deny", "require_approval", "warn"]
    address: str | None = Field(description="The resource; null when the rule judged the whole plan.")
    message: str
    source: str = Field(description="FILE:LINE of the rule.")


class RefusalJson(_Closed):
    """A call the rehearsal's replica refused."""

    call: str = Field(description="ADDRESS METHOD PATH, the path as sent.")
    address: str
    status: int | None = Field(description="The API's HTTP status (null: no answer).")
    detail: str = Field(description="The API's answer, objects named by name.")
    sources: list[str] = Field(description="'FIELD at FILE:LINE': the manifest values that cause it.")


class RehearsalJson(_Closed):
    """``plan --rehearse``: the plan executed on a replica of the live state read (README.md, "Rehearsal")."""

    ok: bool = Field(description="No refusal, nothing left untried, and the replica converged.")
    calls: int = Field(ge=0)
    accepted: int = Field(ge=0)
    refused: list[RefusalJson]
    skipped: list[str] = Field(description="Calls not tried: they depend on a refused one.")
    converged: bool | None = Field(description="The replica's re-plan is empty (null: not checked).")
    remaining: list[str] = Field(description="ADDRESS: FIELDS still differing on the replica after its apply.")
    unknown: list[str] = Field(description="What a replica cannot know.")


class PlanJson(_Closed):
    """A reconciler plan (``reconciler plan --format json``, ``plan --out PLANFILE``)."""

    # open at the top: a MINOR version may add a member (a consumer ignores what it does not know)
    model_config = ConfigDict(extra="allow", title="reconciler plan",
                              json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"})
    format_version: str = Field(pattern=SEMVER, description=f"Semantic version of this format (now {FORMAT_VERSION}).")
    operations: list[OperationJson] = Field(description="API calls in execution order.")
    summary: SummaryJson
    unverified_secrets: list[str]
    warnings: list[str]
    fingerprints: dict[str, str] = Field(description="Address -> hash of the live object the plan was made from.")
    pins: dict[str, list[str]]
    scope: dict[str, list[Any]] = Field(description="What a live read for this plan fetches.")
    manifests: list[str]
    options: dict[str, Any]
    unmanaged: list[UnmanagedJson]
    owner: str | None = None
    workdir: str | None = None
    policy: list[VerdictJson] | None = Field(None, description="Policy verdicts (absent when none fired).")
    ignored: list[IgnoredJson] | None = Field(None, description="Differences ignore_changes left alone (absent when "
                                              "none).")
    rehearsal: RehearsalJson | None = Field(None, description="With --rehearse: the rehearsal's report.")


def plan_json_schema() -> dict[str, Any]:
    return PlanJson.model_json_schema()
