"""End-to-end fixtures: the quickstart manifests copied to a temp dir, the CLI run in-process with
click's runner against an emulator served over a real socket."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.conftest import EMULATOR_ADMIN

ROOT = Path(__file__).resolve().parents[2]
ENV = {"RECONCILER_API_KEY": "admin-key", "VENDOR_A_KEY": "canary-vendor-a-5f2c", "AGENT_TOKEN": "canary-agent-9b7e"}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    dest = tmp_path / "manifests"
    shutil.copytree(ROOT / "manifests", dest)
    return dest


@pytest.fixture
def cli(server: tuple[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Result]:
    """The CLI run in the test's directory: the working tree that ``apply PLANFILE`` binds a plan's
    files to (they must lie inside it)."""
    url = server[0]
    monkeypatch.chdir(tmp_path)
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)

    def run(*args: str, input: str | None = None) -> Result:
        command = list(args)
        if command[0] in ("plan", "apply", "drift", "export"):
            command += ["--base-url", url]
        return CliRunner().invoke(main, command, input=input, catch_exceptions=False)

    return run


@pytest.fixture
def stats(server: tuple[str, Any]) -> Callable[[], dict[str, int]]:
    def read() -> dict[str, int]:
        counts: dict[str, int] = httpx.get(f"{server[0]}/_emulator/stats", headers=EMULATOR_ADMIN).json()["requests"]
        return counts

    return read


@pytest.fixture
def reset_stats(server: tuple[str, Any]) -> Callable[[], None]:
    return lambda: httpx.post(f"{server[0]}/_emulator/reset-stats", headers=EMULATOR_ADMIN).raise_for_status()


@pytest.fixture(autouse=True)
def plans_follow_the_schema(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every plan an end-to-end test makes (planned, rendered as JSON or saved) is checked against
    ``reconciler schema --plan`` when the test ends."""
    import json

    import jsonschema

    from reconciler import workflow
    from reconciler.plan.model import Plan
    from reconciler.plan.schema import plan_json_schema

    seen: list[dict[str, Any]] = []
    to_json, plan_against = Plan.to_json, workflow.plan_against

    def recording_to_json(self: Plan) -> dict[str, Any]:
        out = to_json(self)
        seen.append(json.loads(json.dumps(out)))
        return out

    def recording_plan_against(*args: Any, **kw: Any) -> Any:
        live, planned = plan_against(*args, **kw)
        recording_to_json(planned)
        return live, planned

    monkeypatch.setattr(Plan, "to_json", recording_to_json)
    monkeypatch.setattr(workflow, "plan_against", recording_plan_against)
    yield seen
    validator = jsonschema.Draft202012Validator(plan_json_schema())
    for plan in seen:
        errors = sorted(validator.iter_errors(plan), key=lambda e: list(e.absolute_path))
        assert not errors, [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]]
