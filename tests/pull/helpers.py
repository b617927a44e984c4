"""Shared by the pull tests: a CLI runner over an emulator persisted in a file, and an admin API
client on the same file (the "platform's UI" making hand edits)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from click.testing import Result

ENV = {"RECONCILER_API_KEY": "admin-key", "A_KEY": "canary-a-key-5f1e", "AGENT_TOKEN": "canary-agent-9c2d"}

Cli = Callable[..., Result]


@contextmanager
def ui(tmp_path: Path) -> Iterator[UI]:
    """The platform's UI: an admin client on the emulator's file (``live.db``)."""
    with ui_on(tmp_path / "live.db") as it:
        yield it


@contextmanager
def ui_on(db: Path) -> Iterator[UI]:
    """The platform's UI on the emulator file ``db``: a client of its own (the CLI's runs are others)."""
    from starlette.testclient import TestClient

    from reconciler.emulator.app import create_app
    from reconciler.emulator.core import Emulator, EmulatorSettings

    emu = Emulator(EmulatorSettings(db=str(db)))
    try:
        with TestClient(create_app(emu), base_url="http://emulator", headers={"Authorization": "Bearer admin-key"}) as c:
            yield UI(c)
    finally:
        emu.store.close()


class UI:
    def __init__(self, c: httpx.Client) -> None:
        self.c = c

    def space_id(self, name: str) -> str:
        return next(s["id"] for s in self.c.get("/v2/spaces").json()["spaces"] if s["name"] == name)

    def find(self, collection: str, name: str, **params: Any) -> dict[str, Any]:
        items = self.c.get(f"/v2/{collection}", params={"name": name, **params}).json()[collection]
        return next(i for i in items if i["name"] == name)

    def prompt(self, space: str, name: str) -> dict[str, Any]:
        p = self.find("prompts", name, space_id=self.space_id(space))
        return dict(self.c.get(f"/v2/prompts/{p['id']}").json())

    def new_prompt_version(self, space: str, name: str, labels: list[str] | None = None, **fields: Any) -> str:
        p = self.prompt(space, name)
        v = p["version"]
        body = {k: v[k] for k in ("provider", "model", "input_variable_format", "messages", "invocation_params",
                                  "provider_params") if v.get(k) is not None}
        body.update(fields)
        body.setdefault("commit_message", "edited in the UI")
        made = self.c.post(f"/v2/prompts/{p['id']}/versions", json=body)
        made.raise_for_status()
        if labels is not None:
            self.c.put(f"/v2/prompt-versions/{made.json()['id']}/labels", json={"labels": labels}).raise_for_status()
        return str(made.json()["id"])

    def move_label(self, version_id: str, labels: list[str]) -> None:
        self.c.put(f"/v2/prompt-versions/{version_id}/labels", json={"labels": labels}).raise_for_status()

    def integration(self, name: str, type_: str = "LLM") -> dict[str, Any]:
        return self.find("integrations", name, type=type_)

    def patch_integration(self, name: str, body: dict[str, Any], type_: str = "LLM") -> None:
        i = self.integration(name, type_)
        self.c.patch(f"/v2/integrations/{i['id']}", json={"type": type_, **body}).raise_for_status()

    def evaluator(self, space: str, name: str) -> dict[str, Any]:
        e = self.find("evaluators", name, space_id=self.space_id(space))
        return dict(self.c.get(f"/v2/evaluators/{e['id']}").json())

    def new_evaluator_version(self, space: str, name: str, change: Callable[[dict[str, Any]], None]) -> None:
        e = self.evaluator(space, name)
        tc = e["version"]["template_config"]
        change(tc)
        self.c.post(f"/v2/evaluators/{e['id']}/versions",
                    json={"commit_message": "tuned in the UI", "template_config": tc}).raise_for_status()

    def dataset(self, space: str, name: str) -> dict[str, Any]:
        return self.find("datasets", name, space_id=self.space_id(space))

    def examples(self, space: str, name: str) -> list[dict[str, Any]]:
        d = self.dataset(space, name)
        return list(self.c.get(f"/v2/datasets/{d['id']}/examples", params={"limit": 500}).json()["examples"])

    def update_examples(self, space: str, name: str, examples: list[dict[str, Any]]) -> None:
        d = self.dataset(space, name)
        self.c.patch(f"/v2/datasets/{d['id']}/examples", json={"examples": examples}).raise_for_status()

    def append_examples(self, space: str, name: str, examples: list[dict[str, Any]]) -> None:
        d = self.dataset(space, name)
        self.c.post(f"/v2/datasets/{d['id']}/examples", json={"examples": examples}).raise_for_status()

    def delete_examples(self, space: str, name: str, ids: list[str]) -> None:
        d = self.dataset(space, name)
        version = self.c.get(f"/v2/datasets/{d['id']}").json()["versions"][0]["id"]
        self.c.request("DELETE", f"/v2/datasets/{d['id']}/examples",
                       json={"dataset_version_id": version, "example_ids": ids}).raise_for_status()

    def delete(self, collection: str, name: str, **params: Any) -> None:
        obj = self.find(collection, name, **params)
        self.c.delete(f"/v2/{collection}/{obj['id']}").raise_for_status()


# ---------------------------------------------------------------- the engine alone, on live values given


class Missing:
    """Live has no such resource (``pulled(live={address: MISSING})``)."""


MISSING = Missing()


def pulled(monkeypatch: Any, tree: Any, live: Mapping[str, Any], **options: Any) -> Any:
    """``puller(...)``, run: its result."""
    return puller(monkeypatch, tree, live, **options).run()


def puller(monkeypatch: Any, tree: Any, live: Mapping[str, Any], *, files: Sequence[str] | None = None,
           others: Sequence[Any] = (), base: Any = None, remove_absent: bool = False,
           notes: Mapping[str, list[str]] | None = None, examples: Mapping[str, Any] | None = None) -> Any:
    """One pull by the engine alone (no emulator): ``live`` gives, per address, the live value of each
    declared path that differs (``{path: value}``, ``ABSENT`` for a field live lacks), or the edits
    themselves (a list of ``FieldEdit``), or ``MISSING``; an address not given is live as declared.
    ``notes``: write-only differences; ``examples``: an ``ExamplesEdit`` per address (the same after the edits).
    The tree loaded again after the edits is compared the same way (a value written is a value equal).
    Not run: ``pulled`` runs it."""
    from reconciler.model import LiveState
    from reconciler.plan import liveview
    from reconciler.pull import engine
    from reconciler.pull.engine import Puller

    def diff(r: Any, _: Any) -> Any:
        out = liveview.ResourceDiff(r)
        given = live.get(r.address, {})
        out.notes = list((notes or {}).get(r.address, []))
        out.examples = (examples or {}).get(r.address)
        if given is MISSING:
            out.missing = True
        elif isinstance(given, list):
            out.edits = list(given)
        else:
            for path, value in given.items():
                old = engine._get(r.spec, path)
                if engine._canon(old) != engine._canon(value):
                    out.edits.append(liveview.FieldEdit(path, old, value))
        return out

    monkeypatch.setattr(engine, "resource_diff", diff)
    if files is None:  # as the command line lists them: every manifest but the var files
        from reconciler.manifests.loader import manifest_files

        var_files = {os.path.realpath(v) for v in tree.var_files}
        files = [f for f in manifest_files(tree.paths, []) if os.path.realpath(f) not in var_files]
    stdin = "-" in tree.paths  # read once, as the command line does: no tree to load again
    return Puller(tree.load(), LiveState(), list(files), base, tree=None if stdin else tree,
                  others=others, remove_absent=remove_absent)
