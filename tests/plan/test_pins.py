"""A saved plan depends on the id and the managed fields of each live object: fields the service adds
or bumps on its own never make it stale; a managed change or a re-created object does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.model import (
    EvaluatorObject,
    EvaluatorVersionObject,
    LiveEvaluator,
    LivePrompt,
    LiveState,
    RestrictionObject,
)
from reconciler.plan.pins import pin_fingerprint
from reconciler.plan.planner import make_plan
from tests.plan.helpers import RESEARCH, live_llm, manifests, res, state
from tests.plan.test_kinds_plan import VERSION, live_prompt

KEY = ["Integration", "LLM", "a"]


def fingerprint_of(**changes: object) -> str:
    obj = live_llm("a", id="I1", is_function_calling_enabled=True, has_api_key=True)
    for k, v in changes.items():
        if k == "config":
            obj["config"].update(v)  # type: ignore[call-overload]
        else:
            obj[k] = v
    return pin_fingerprint(KEY, state(obj))


def test_unknown_and_server_set_fields_do_not_move_a_pin() -> None:
    assert fingerprint_of(usage_count=41, updated_at="2026-12-01T00:00:00Z") == fingerprint_of()


def test_a_managed_change_or_a_new_id_moves_a_pin() -> None:
    assert fingerprint_of(config={"is_function_calling_enabled": False}) != fingerprint_of()
    assert fingerprint_of(id="I2") != fingerprint_of()
    assert pin_fingerprint(KEY, state()) != fingerprint_of()  # deleted


# --------------------------------------------------------------------------------------------------
# A saved plan is refused when what it depends on moved (reconciler/plan/pins.py): a restriction
# made or removed by hand, a prompt restricted by hand, objects without a version yet.


TC = {"name": "f", "template": "t", "llm_config": {"integration": "judge", "model_name": "m"}}
TREE = manifests(res("ResourceRestriction", "dash", resource_type="DASHBOARD", resource_id="RGFzaDox"),
                 res("Prompt", "p", "research", version=VERSION),
                 res("Evaluator", "ev", "research", commit_message="c", template_config=TC))


def restriction(resource_type: str, resource_id: str) -> RestrictionObject:
    return RestrictionObject.model_validate({"resource_type": resource_type, "resource_id": resource_id,
                                             "created_at": "2026-01-01T00:00:00Z"})


def live(*, dashboard: bool = False, prompt_restricted: bool = False, versions: bool = True) -> LiveState:
    s = state(live_llm("judge", has_api_key=True))
    prompt = live_prompt()
    if not versions:
        prompt = LivePrompt(prompt=prompt.prompt, latest=None, labels={})
    s.prompts[(RESEARCH, "p")] = prompt
    s.evaluators[(RESEARCH, "ev")] = LiveEvaluator(evaluator=EvaluatorObject.read({"id": "RXY6MQ", "name": "ev", "description": None}),
                                                   latest=EvaluatorVersionObject.read({"id": "RVY6MQ", "template_config": TC})
                                                   if versions else None)
    s.restrictions[("PROJECT", "UHJvajo5")] = restriction("PROJECT", "UHJvajo5")  # a key that sees restrictions
    if dashboard:
        s.restrictions[("DASHBOARD", "RGFzaDox")] = restriction("DASHBOARD", "RGFzaDox")
    if prompt_restricted:
        s.restrictions[("PROMPT", "UHI6MQ")] = restriction("PROMPT", "UHI6MQ")
    return s


def fingerprints(**kw: Any) -> dict[str, str]:
    return dict(make_plan(TREE, live(**kw)).fingerprints)


def test_a_restriction_made_by_hand_makes_a_saved_plan_stale() -> None:
    before, after = fingerprints(), fingerprints(dashboard=True)
    assert before["ResourceRestriction/dash"] != after["ResourceRestriction/dash"]
    assert before["Prompt/research/p"] == after["Prompt/research/p"]


def test_a_prompt_restricted_by_hand_makes_a_saved_plan_stale() -> None:
    before, after = fingerprints(), fingerprints(prompt_restricted=True)
    assert before["Prompt/research/p"] != after["Prompt/research/p"]
    assert before["ResourceRestriction/dash"] == after["ResourceRestriction/dash"]


def test_objects_without_a_version_are_pinned_too() -> None:
    before, after = fingerprints(versions=False), fingerprints()
    assert before["Prompt/research/p"] != after["Prompt/research/p"]
    assert before["Evaluator/research/ev"] != after["Evaluator/research/ev"]


def test_a_saved_plan_pinning_a_kind_this_reconciler_does_not_know_is_stale_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edited plan file's pin of an unknown kind names no live object: apply refuses the plan as stale,
    before any write, like a pin whose object is gone."""
    monkeypatch.setenv("RECONCILER_API_KEY", "admin-key")
    monkeypatch.chdir(tmp_path)
    Path("tree.yaml").write_text("kind: Dataset\nspace: default\nname: d\nexamples: [{q: 1}]\n")

    def cli(*args: str) -> Result:
        return CliRunner().invoke(main, [*args, "--emulator", str(tmp_path / "live.db")], catch_exceptions=False)

    assert cli("plan", "tree.yaml", "--out", "plan.json").exit_code == 0
    data = json.loads(Path("plan.json").read_text())
    data["pins"]["Gadget/x"] = ["Gadget", "default", "x"]
    Path("plan.json").write_text(json.dumps(data))
    result = cli("apply", "plan.json")
    assert result.exit_code == 1
    assert "the plan file plan.json is stale: live state changed since it was made for Gadget/x. Make a new plan." \
        in result.output
    assert "Traceback" not in result.output
