"""Schemathesis against the emulator's own OpenAPI document (``/v2/openapi.json``), in-process over
ASGI with faults and the rate limit off: for every operation, generated requests (valid ones and,
in the coverage phase, deliberately invalid ones) never get a 5xx, and every response (status,
content type, headers, body) is one the document describes.

Bounded so the whole module runs in seconds: at most 15 generated examples per operation,
derandomized (the same cases every run), no deadline, no example database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import schemathesis
from schemathesis import Case, checks

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings

SETTINGS = EmulatorSettings()
EMULATOR = Emulator(SETTINGS)

schema = schemathesis.openapi.from_asgi("/v2/openapi.json", create_app(EMULATOR))
schema.config.update(headers={"Authorization": f"Bearer {SETTINGS.admin_key}"})
schema.config.generation.update(max_examples=15, deterministic=True, database="none")

CONFORMANCE = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]


@pytest.fixture(scope="module", autouse=True)
def _close_the_store() -> Iterator[None]:
    yield
    EMULATOR.store.close()


@schema.parametrize()
@hypothesis.settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(hypothesis.HealthCheck),
)
def test_every_operation_answers_as_its_document_says(case: Case[Any]) -> None:
    case.call_and_validate(checks=CONFORMANCE)
