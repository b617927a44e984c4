"""Three environments over two accounts, each account an emulator served on a loopback socket and
shared by the tests of a module: staging and production are two spaces of the account ``main``,
research has the account ``lab`` to itself. Each test gets spaces of its own (``project``), so the
tests share the emulators, never their data."""

from __future__ import annotations

import itertools
import os
import shutil
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.conftest import ADMIN, EMULATOR_ADMIN, running_emulator

KEYS = {"MAIN_API_KEY": ADMIN, "LAB_API_KEY": ADMIN}
PROMPT = """\
kind: Prompt
space: {var: space}
name: summarize-ticket
description: "Summaries for ${var.env}"
version:
  commit_message: first version
  provider: VENDOR_A
  model: model-large
  messages:
    - {role: system, content: You summarize support tickets.}
    - {role: user, content: "{ticket}"}
"""
_unique = itertools.count()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def accounts() -> Iterator[dict[str, str]]:
    """The base URLs of the two accounts."""
    with running_emulator() as (main_url, _), running_emulator() as (lab_url, _):
        yield {"main": main_url, "lab": lab_url}


@pytest.fixture(scope="module")
def example_accounts() -> Iterator[dict[str, str]]:
    """An emulator on a loopback socket for each environment of the example tree, its space in it."""
    with running_emulator(spaces=("staging",)) as (staging, _), running_emulator(spaces=("production",)) as (
            production, _):
        yield {"staging": staging, "production": production}


@pytest.fixture
def example_tree(example_accounts: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/environments, its environments on ``example_accounts``: the working directory."""
    root = tmp_path / "environments"
    shutil.copytree(ROOT / "examples/environments", root)
    config = root / "reconciler.yaml"
    for env in ("staging", "production"):
        config.write_text(config.read_text().replace(
            f"emulator: {env}.db", f"base_url: {example_accounts[env]}\n    api_key: {{env: MAIN_API_KEY}}"))
    monkeypatch.chdir(root)
    monkeypatch.setenv("VENDOR_A_KEY", "example-vendor-key")
    return root


def api(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def project(accounts: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A tree with its reconciler.yaml in the working directory: staging and production (after
    staging) in spaces of their own in ``main``, research in one of ``lab``. Returns the spaces
    by environment and the accounts' URLs."""
    n = next(_unique)
    spaces = {"staging": f"staging-{os.getpid()}-{n}", "production": f"production-{os.getpid()}-{n}",
              "research": f"research-{os.getpid()}-{n}"}
    homes = {"staging": "main", "production": "main", "research": "lab"}
    for env, space in spaces.items():
        with api(accounts[homes[env]]) as c:
            c.post("/v2/spaces", json={"name": space}).raise_for_status()
    write(tmp_path / "base" / "prompts.yaml", PROMPT)
    for env, space in spaces.items():
        write(tmp_path / "vars" / f"{env}.yaml", f"env: {env}\nspace: {space}\n")
    write(tmp_path / "reconciler.yaml", f"""\
        environments:
          staging:
            base_url: {accounts['main']}
            api_key: {{env: MAIN_API_KEY}}
            paths: [base]
            var_files: [vars/staging.yaml]
          production:
            base_url: {accounts['main']}
            api_key: {{env: MAIN_API_KEY}}
            paths: [base]
            var_files: [vars/production.yaml]
            after: [staging]
          research:
            base_url: {accounts['lab']}
            api_key: {{env: LAB_API_KEY}}
            paths: [base]
            var_files: [vars/research.yaml]
        """)
    monkeypatch.chdir(tmp_path)
    return {"spaces": spaces, "accounts": accounts, "homes": homes, "root": tmp_path}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """The CLI in-process, with the keys' variables set and nothing else configured."""
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)
    for k in ("RECONCILER_BASE_URL", "RECONCILER_API_KEY", "RECONCILER_LOG_FORMAT"):
        monkeypatch.delenv(k, raising=False)

    def run(*args: str) -> Result:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return run


def prompts_in(url: str, space: str) -> list[str]:
    """The names of the prompts live in a space (one page: a test's space holds a few)."""
    with api(url) as c:
        listed = c.get("/v2/spaces", params={"limit": 100}).json()
        space_id = next(s["id"] for s in next(v for v in listed.values() if isinstance(v, list)) if s["name"] == space)
        found = c.get("/v2/prompts", params={"space_id": space_id}).json()
    return [p["name"] for p in next(v for v in found.values() if isinstance(v, list))]


def stats(url: str) -> dict[str, int]:
    counts: dict[str, int] = httpx.get(f"{url}/_emulator/stats", headers=EMULATOR_ADMIN).json()["requests"]
    return counts
