"""State in a SQLite file survives a restart: a second Emulator on the same file sees what the
first one wrote (the CLI restart is in test_server_cli.py); in memory, nothing survives."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings

from . import CANARY, agent_config, bearer, create_llm, llm_config


@contextmanager
def emulator_on(db: str | None) -> Iterator[TestClient]:
    emu = Emulator(EmulatorSettings(db=db))
    try:
        with TestClient(create_app(emu), base_url="http://testserver", headers=bearer("admin-key")) as c:
            yield c
    finally:
        emu.store.close()


def snapshot(c: TestClient) -> dict[str, Any]:
    return {"integrations": c.get("/v2/integrations").json(), "spaces": c.get("/v2/spaces").json(),
            "organizations": c.get("/v2/organizations").json()}


def test_a_second_emulator_on_the_same_file_sees_what_the_first_wrote(tmp_path: Path) -> None:
    db = str(tmp_path / "state.db")
    with emulator_on(db) as first:
        assert first.post("/v2/spaces", json={"name": "kept"}).status_code == 201
        llm = create_llm(first, "CUSTOM")
        r = first.patch(f"/v2/integrations/{llm['id']}", json={"type": "LLM", "config": {"model_names": ["x"]}})
        assert r.status_code == 200
        agent = first.post("/v2/integrations", json={"type": "AGENT", "name": "kept-agent", "config": agent_config(
            request_presets=[{"name": "p", "config": {"query": "q"}}])}).json()
        deleted = create_llm(first, "VENDOR_A")
        assert first.delete(f"/v2/integrations/{deleted['id']}").status_code == 204
        before = snapshot(first)
    with emulator_on(db) as second:
        after = snapshot(second)
        assert after == before
        assert len(after["organizations"]["organizations"]) == 1  # the seed ran once
        assert second.get(f"/v2/integrations/{agent['id']}").json() == agent
        assert second.get(f"/v2/integrations/{deleted['id']}").status_code == 404
        kept = second.get(f"/v2/integrations/{llm['id']}").json()
        assert kept["config"]["has_api_key"] is True and kept["config"]["model_names"] == ["x"]
        newer = create_llm(second, "VENDOR_A")
        assert newer["id"] not in {llm["id"], agent["id"], deleted["id"]}
        assert second.post("/v2/spaces", json={"name": "kept"}).status_code == 409


def test_secrets_are_kept_in_the_file_for_the_service_role_but_never_served(tmp_path: Path) -> None:
    db = str(tmp_path / "state.db")
    with emulator_on(db) as first:
        created = create_llm(first, "VENDOR_A", config=llm_config("VENDOR_A", api_key=f"{CANARY}-kept"))
    with emulator_on(db) as second:
        assert CANARY not in second.get(f"/v2/integrations/{created['id']}").text
        r = second.patch(f"/v2/integrations/{created['id']}", json={"type": "LLM", "name": "renamed"})
        assert r.json()["config"]["has_api_key"] is True


def test_without_a_file_nothing_survives() -> None:
    with emulator_on(None) as first:
        created = create_llm(first, "VENDOR_A")
    with emulator_on(None) as second:
        assert second.get(f"/v2/integrations/{created['id']}").status_code == 404
