"""Findings 4 and 10: names from the API never take an export outside --out; plan --out, export's
files and the emulator's SQLite file are written atomically, mode 0600, never through a symlink."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.core import EmulatorSettings
from tests.conftest import running_emulator
from tests.e2e.conftest import ENV, ROOT

HOSTILE_SPACES = ("../../escaped-space", "/abs-space", "a/b", "a-b", "..", "back\\slash", "nul\x00byte")
HOSTILE_DATASETS = ("../../../escaped-dataset", "/etc/cron.d/x", "..", "A b", "a-b", "a\\b", ".hidden")


def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner(env={**ENV, "RECONCILER_BASE_URL": None, **(env or {})}).invoke(
        main, list(args), catch_exceptions=False)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.fixture
def hostile() -> Iterator[str]:
    """An emulator whose spaces and datasets have names that are paths."""
    with running_emulator(EmulatorSettings(spaces=HOSTILE_SPACES)) as (url, emu):
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}) as api:
            spaces = {s["name"]: s["id"] for s in api.get("/v2/spaces", params={"limit": 100}).json()["spaces"]}
            for i, name in enumerate(HOSTILE_DATASETS):
                api.post("/v2/datasets", json={"name": name, "space_id": spaces["a/b"],
                                               "examples": [{"n": i}]}).raise_for_status()
        yield url


def test_export_never_writes_outside_out_whatever_the_names_hold(hostile: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    out = work / "out"
    work.mkdir()
    before = files_under(tmp_path)

    result = run("export", "--out", str(out), "--base-url", hostile)

    assert result.exit_code == 0, result.output
    written = files_under(tmp_path) - before
    assert written and all(out in p.parents for p in written)  # nothing next to or above --out
    assert not any(part.startswith(".") or part in ("..", "") for p in written for part in p.relative_to(out).parts)
    # one examples file per dataset, however alike their names once made safe
    data = [p for p in written if p.parent.name == "data"]
    assert len(data) == len(HOSTILE_DATASETS)
    assert all(mode(p) == 0o600 for p in written)


def test_the_exported_tree_names_its_examples_files_and_plans_empty(hostile: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run("export", "--out", str(out), "--base-url", hostile).exit_code == 0

    result = run("plan", str(out), "--base-url", hostile, "--detailed-exitcode")

    assert result.exit_code == 0, result.output


def test_export_refuses_a_folder_in_out_that_links_outside(server: tuple[str, Any], tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "research").symlink_to(elsewhere, target_is_directory=True)
    with httpx.Client(base_url=server[0], headers={"Authorization": "Bearer admin-key"}) as api:
        space = next(s["id"] for s in api.get("/v2/spaces", params={"limit": 100}).json()["spaces"] if s["name"] == "research")
        api.post("/v2/datasets", json={"name": "d", "space_id": space, "examples": [{"n": 1}]}).raise_for_status()

    result = run("export", "--out", str(out), "--force", "--base-url", server[0])

    assert result.exit_code == 1 and "would be written outside" in result.output
    assert list(elsewhere.iterdir()) == []


@pytest.fixture
def planned(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The quickstart tree and an emulator file to plan it against."""
    yield ROOT / "manifests", tmp_path / "state.db"


def test_plan_out_is_private_and_replaced_whole(planned: tuple[Path, Path], tmp_path: Path) -> None:
    tree, db = planned
    target = tmp_path / "plan.json"
    target.write_text("an older plan")
    os.chmod(target, 0o644)
    inode = target.stat().st_ino

    result = run("plan", str(tree), "--emulator", str(db), "--out", str(target))

    assert result.exit_code == 0, result.output
    assert mode(target) == 0o600 and target.stat().st_ino != inode  # a new file renamed over the old one
    assert target.read_text().startswith("{") and [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_plan_out_never_writes_through_a_symlink(planned: tuple[Path, Path], tmp_path: Path) -> None:
    tree, db = planned
    victim = tmp_path / "authorized_keys"
    victim.write_text("ssh-ed25519 AAAA me\n")
    link = tmp_path / "plan.json"
    link.symlink_to(victim)

    result = run("plan", str(tree), "--emulator", str(db), "--out", str(link))

    assert result.exit_code == 1 and "is a symbolic link; refusing to write through it" in result.output
    assert victim.read_text() == "ssh-ed25519 AAAA me\n" and link.is_symlink()


def test_the_emulator_database_is_private_and_never_opened_through_a_symlink(planned: tuple[Path, Path],
                                                                           tmp_path: Path) -> None:
    tree, db = planned
    assert run("apply", str(tree), "--emulator", str(db), "--auto-approve").exit_code == 0
    assert mode(db) == 0o600  # it holds the integrations' secrets
    assert all(mode(p) == 0o600 for p in tmp_path.glob("state.db*"))

    link = tmp_path / "link.db"
    link.symlink_to(tmp_path / "somewhere.db")
    result = run("plan", str(tree), "--emulator", str(link))
    assert result.exit_code == 1 and "is a symbolic link" in result.output
    assert not (tmp_path / "somewhere.db").exists()
