"""Golden files for the text, JSON and Markdown views of the quickstart tree's plans: once from
an empty account (everything created), once against a live state where each kind has drifted.
Regenerate with ``UPDATE_GOLDEN=1 pytest tests/plan/test_golden_plans.py`` and review the diff."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.manifests import load_manifests
from reconciler.model import (
    DatasetObject,
    EvaluatorObject,
    EvaluatorVersionObject,
    ExperimentObject,
    LiveDataset,
    LiveEvaluator,
    LiveIntegration,
    LivePrompt,
    PromptObject,
    PromptVersionObject,
    RestrictionObject,
)
from reconciler.plan.planner import make_plan
from reconciler.plan.render import render
from tests.plan.helpers import RESEARCH, live_llm, state

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
EXAMPLES = "tests/manifests/good/product-examples.yaml"
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def drifted_state():  # type: ignore[no-untyped-def]
    live = state(live_llm("vendor-a-prod", id="SW50ZWdyYXRpb246MQ", is_function_calling_enabled=False,
                          has_api_key=True))
    live.integrations[("AGENT", "support-agent")] = LiveIntegration.model_validate({
        "id": "SW50ZWdyYXRpb246Mg", "type": "AGENT", "name": "support-agent", "description": "old", "scopings": [],
        "config": {"endpoint": "https://agent.example.com/v1/run", "has_headers": True,
                   "input_schema": {"type": "object", "properties": {"question": {"type": "string"},
                                                                      "temperature": {"type": "number"}},
                                    "required": ["question"]},
                   "request_presets": [{"id": "UHJlc2V0OjE", "name": "cold", "description": "deterministic replay",
                                        "config": {"temperature": 0.1}}]}})
    version = {"id": "UHJvbXB0VmVyc2lvbjox", "commit_message": "old", "provider": "VENDOR_A", "model": "model-large",
               "input_variable_format": "f_string", "invocation_params": {"temperature": 0.2}, "provider_params": {},
               "messages": [{"role": "system", "content": "You summarise tickets."},
                            {"role": "user", "content": "{ticket}"}], "labels": []}
    live.prompts[(RESEARCH, "summarize-ticket")] = LivePrompt(
        prompt=PromptObject.read({"id": "UHJvbXB0OjE", "name": "summarize-ticket", "description": "Summarize a support ticket",
                "space_id": RESEARCH}), latest=PromptVersionObject.read(version), labels={})
    live.datasets[(RESEARCH, "golden-tickets")] = LiveDataset(
        dataset=DatasetObject.read({"id": "RGF0YXNldDox", "name": "golden-tickets", "space_id": RESEARCH}),
        examples=[{"id": "RXhhbXBsZTox", "ticket_id": "T-1", "ticket": "old text"},
                  {"id": "RXhhbXBsZToy", "ticket_id": "T-9", "ticket": "gone"}],
        experiments=[ExperimentObject.read({"id": f"RXhwOj{i}", "name": f"run-{i}",
                                            "created_at": f"2026-0{i}-01T00:00:00Z"})
                     for i in range(1, 4)])
    live.evaluators[(RESEARCH, "faithfulness")] = LiveEvaluator(
        evaluator=EvaluatorObject.read({"id": "RXZhbDox", "name": "faithfulness", "description": None}),
        latest=EvaluatorVersionObject.read({"id": "RXZhbFZlcnNpb246MQ", "template_config": {"name": "faithfulness", "template": "old {{output}}",
                                                                 "llm_config": {"ai_integration_id": "SW50ZWdyYXRpb246MQ"}}}))
    # a key that sees restrictions (another project's), so the prompt's restricted is compared
    live.restrictions[("PROJECT", "UHJvamVjdDo5")] = RestrictionObject.model_validate(
        {"resource_type": "PROJECT", "resource_id": "UHJvamVjdDo5", "created_at": "2026-01-01T00:00:00Z"})
    return live


CASES = {"create": lambda: state(), "drift": drifted_state}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("fmt", "ext"), [("text", "txt"), ("json", "json"), ("markdown", "md")])
def test_plan_views_match_golden_files(monkeypatch: pytest.MonkeyPatch, case: str, fmt: str, ext: str) -> None:
    monkeypatch.chdir(ROOT)
    plan = make_plan(load_manifests([EXAMPLES]), CASES[case](), now=NOW)
    got = render(plan, fmt)
    path = GOLDEN / f"{case}.{ext}"
    expected = path.read_text(encoding="utf-8") if path.exists() else None
    if os.environ.get("UPDATE_GOLDEN") and got != expected:
        path.write_text(got, encoding="utf-8")  # compared with what the file held, never with itself
        pytest.fail(f"{path} was out of date and is rewritten: review its diff, then run again without UPDATE_GOLDEN")
    assert got == expected


def test_plan_files_name_secret_references_never_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("VENDOR_A_KEY", "canary-4d1f9a")
    text = render(make_plan(load_manifests([EXAMPLES]), state(), now=NOW), "json")
    assert '"env:VENDOR_A_KEY"' in text and '"(sensitive)"' in text and "canary-4d1f9a" not in text
