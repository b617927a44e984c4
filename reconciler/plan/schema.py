"""The JSON Schema of a plan's JSON form (``--format json``, the PLANFILE format: ``reconciler
schema --plan``), derived from the classes that write it (``plan.model``) with the members that are
not fields of ``Plan``: the format version, the summary and the rehearsal. The schema is checked
against every plan the end-to-end tests produce (``tests/e2e/conftest.py``).

``format_version`` follows semantic versioning: a consumer (a conftest/OPA policy, a CI script)
accepts every version of the major it was written for.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass

from reconciler.plan.model import FORMAT_VERSION, JSON, Plan

SEMVER = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SummaryJson(_Closed):
    """Counts by object (a resource with several calls counts once)."""

    create: int = Field(ge=0)
    update: int = Field(ge=0)
    delete: int = Field(ge=0)
    replace: int = Field(ge=0)
    unmanaged: int = Field(ge=0)
    ignored: int | None = Field(None, ge=0, description="Changes left alone by ignore_changes.")


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


# open at the top: a MINOR version may add a member (a consumer ignores what it does not know)
@dataclass(frozen=True, kw_only=True, config=JSON | ConfigDict(
    extra="allow", title="reconciler plan", json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"}))
class PlanJson(Plan):
    """A reconciler plan (``reconciler plan --format json``, ``plan --out PLANFILE``)."""

    format_version: str = Field(pattern=SEMVER, description=f"Semantic version of this format (now {FORMAT_VERSION}).")
    summary_: SummaryJson = Field(alias="summary")  # what Plan.summary() counts
    rehearsal: RehearsalJson | None = Field(None, exclude_if=lambda v: v is None,
                                            description="With --rehearse: the rehearsal's report.")


def plan_json_schema() -> dict[str, Any]:
    return TypeAdapter(PlanJson).json_schema(mode="serialization")
