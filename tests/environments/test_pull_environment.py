"""pull --env NAME on a tree whose base is shared: the live edit of that environment is written into
its own overlay, and every other environment of reconciler.yaml plans exactly as before (the
example tree, its two environments on two loopback emulators)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tests.environments.conftest import api

ROOT = Path(__file__).resolve().parents[2]


def test_pull_env_writes_a_shared_value_into_that_environments_overlay_and_leaves_the_others_plan(
        example_accounts: dict[str, str], example_tree: Path, cli: Callable[..., Result]) -> None:
    tree = example_tree
    assert cli("apply", "--all", "--auto-approve").exit_code == 0
    production_plan = cli("plan", "--env", "production", "--format", "json").stdout
    base = (tree / "base" / "research.yaml").read_text()
    with api(example_accounts["staging"]) as c:  # someone edits staging's prompt in the UI
        listed = c.get("/v2/prompts").json()
        prompt = next(p for p in next(v for v in listed.values() if isinstance(v, list))
                      if p["name"] == "summarize-ticket")
        c.patch(f"/v2/prompts/{prompt['id']}", json={"description": "Summaries for the staging team"}
                ).raise_for_status()

    pulled = cli("pull", "--env", "staging", "--write")

    assert pulled.exit_code == 2, pulled.output
    assert (tree / "base" / "research.yaml").read_text() == base  # production loads it too: untouched
    assert "Summaries for the staging team" in (tree / "overlays" / "staging" / "patches.yaml").read_text()
    assert cli("plan", "--env", "staging", "--detailed-exitcode").exit_code == 0
    assert cli("plan", "--env", "production", "--format", "json").stdout == production_plan


def test_pull_takes_one_environment(cli: Callable[..., Result], tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "examples/environments", tmp_path / "environments")
    monkeypatch.chdir(tmp_path / "environments")
    result = cli("pull", "--all")
    assert result.exit_code == 1
    assert "pull writes one environment's files: give one --env (not 2)" in result.output
