"""Stateful property: two trees share one account. Hypothesis edits each tree at random
(its Ownership and protect globs, integrations with aliases, providers and ``protect``, prompts
with ``restricted``, a dataset, an evaluator that may use the other tree's integration, a ``kind:
Patch`` that sets or removes a field), applies them with or without ``--prune``,
``--allow-replace`` and ``--allow-empty``, and edits the account by hand through the API in
between. After every step:

- a tree never writes outside its ownership: every object of the emulator outside it (the other
  tree's space and integrations, the spaces nobody owns) is exactly as it was;
- a protected resource is never deleted or replaced: its id is still there;
- a successful apply converges: a fresh plan made right after is empty;
- no secret (canary values) is in any output: the plan in every format, the apply report, errors;
- a plan that is refused (a protected replacement, the integration guard, an alias outside the
  ownership) writes nothing at all.

In-process (the emulator as an httpx transport) to keep it fast. ``make test`` runs a bounded
number of examples; ``make soak`` runs many more (``RECONCILER_STATEFUL_EXAMPLES``)."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from starlette.testclient import TestClient

from reconciler.client.http import EMULATOR_BASE_URL, ApiClient, build_http_client
from reconciler.client.inprocess import InProcessTransport
from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings
from reconciler.errors import ManifestError, PlanError
from reconciler.plan.model import PlanOptions
from reconciler.plan.render import render
from reconciler.workflow import check_plan_secrets, confirm_converged, load, plan_against, run_apply

EXAMPLES = int(os.environ.get("RECONCILER_STATEFUL_EXAMPLES", "12"))
STEPS = int(os.environ.get("RECONCILER_STATEFUL_STEPS", "12"))
CANARIES = {"TREE_A_KEY": "canary-tree-a-6f1d0c", "TREE_B_KEY": "canary-tree-b-93ae41"}
TREES = {"a": ("alpha", "TREE_A_KEY"), "b": ("beta", "TREE_B_KEY")}
SPACED = ("prompt", "dataset", "evaluator")
MESSAGES = [{"role": "user", "content": "{q}"}]


def _env(values: dict[str, str]) -> dict[str, str | None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    return saved


@st.composite
def tree_design(draw: st.DrawFn, tree: str) -> list[dict[str, Any]]:
    """One tree's documents: what a team might commit next."""
    space, var = TREES[tree]
    other = "b" if tree == "a" else "a"
    protect_globs = draw(st.lists(st.sampled_from([
        f"Integration/{tree}-one", f"Prompt/{space}/p1", "Prompt/p2", f"Dataset/{space}/*", f"Integration/{tree}-o*"]),
        unique=True, max_size=2))
    docs: list[dict[str, Any]] = [{"kind": "Ownership", "name": f"team-{tree}", "spaces": [space],
                                   "integrations": [f"{tree}-*"], "protect": protect_globs}]
    names = draw(st.lists(st.sampled_from([f"{tree}-one", f"{tree}-two"]), unique=True, max_size=2))
    for name in names:
        doc: dict[str, Any] = {"kind": "Integration", "name": name, "type": "LLM", "config": {
            "provider": draw(st.sampled_from(["VENDOR_A", "VENDOR_C"])), "api_key": {"env": var}}}
        if draw(st.booleans()):
            doc["config"]["is_function_calling_enabled"] = draw(st.booleans())
        if name.endswith("-two") and draw(st.booleans()):  # a rename from a name only a hand edit makes, or
            doc["aliases"] = [draw(st.sampled_from([f"{tree}-old", f"{other}-one"]))]  # one outside: refused
        if draw(st.integers(0, 4)) == 0:
            doc["protect"] = True
        docs.append(doc)
    for name in draw(st.lists(st.sampled_from(["p1", "p2"]), unique=True, max_size=2)):
        prompt: dict[str, Any] = {"kind": "Prompt", "space": space, "name": name,
                                  "version": {"commit_message": "c", "provider": "VENDOR_A", "messages": MESSAGES}}
        if draw(st.booleans()):
            prompt["description"] = draw(st.sampled_from(["first", "second"]))
        restricted = draw(st.sampled_from([None, True, False]))
        if restricted is not None:
            prompt["restricted"] = restricted
        docs.append(prompt)
    if draw(st.booleans()):
        docs.append({"kind": "Dataset", "space": space, "name": "d1", "key": "k",
                     "examples": [{"k": i, "v": draw(st.sampled_from(["x", "y"]))} for i in range(draw(st.integers(1, 3)))]})
    if draw(st.booleans()):
        target = draw(st.sampled_from([*names, f"{other}-one"])) if names else f"{other}-one"
        docs.append({"kind": "Evaluator", "space": space, "name": "e1", "commit_message": "c", "template_config": {
            "name": "judge", "template": "Is {{output}} right?", "classification_choices": {"yes": 1, "no": 0},
            "llm_config": {"integration": target, "model_name": "m"}}})
    prompts = [d for d in docs if d["kind"] == "Prompt"]
    if prompts and draw(st.booleans()):  # an overlay: set a field, or remove it (RFC 7396 null: unmanaged)
        p = draw(st.sampled_from(prompts))
        docs.append({"kind": "Patch", "target": f"Prompt/{p['name']}", "space": space,
                     "patch": {"description": draw(st.sampled_from(["patched", None]))}})
    return docs


class TwoTrees(RuleBasedStateMachine):
    """Two teams' trees against one in-process emulator."""

    @initialize(first_a=tree_design("a"), first_b=tree_design("b"))
    def start(self, first_a: list[dict[str, Any]], first_b: list[dict[str, Any]]) -> None:
        self.saved_env = _env(CANARIES)
        self.tmp = Path(tempfile.mkdtemp(prefix="two-trees-"))
        self.emu = Emulator(EmulatorSettings(spaces=("alpha", "beta", "shared")))
        transport = InProcessTransport(create_app(self.emu), on_close=self.emu.store.close)
        self.client = ApiClient(build_http_client(EMULATOR_BASE_URL, "admin-key", transport=transport), parallelism=2)
        self.api = TestClient(create_app(self.emu), base_url=EMULATOR_BASE_URL,  # the UI: a client of its own
                              headers={"Authorization": "Bearer admin-key"})
        self.spaces = {s["name"]: s["id"] for s in self.api.get("/v2/spaces").json()["spaces"]}
        self.designs: dict[str, list[dict[str, Any]]] = {}
        self.outputs: list[str] = []
        self.hand_made = 0  # objects made "in the UI": each gets a name of its own, even after a delete
        self.write("a", first_a)
        self.write("b", first_b)

    def teardown(self) -> None:
        if hasattr(self, "client"):
            self.api.close()
            self.client.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            for k, v in self.saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    # ------------------------------------------------------------ what the emulator holds

    def _rows(self, kind: str) -> list[dict[str, Any]]:
        return [doc for _, doc in self.emu.store.scan(kind)]

    def _owned(self, tree: str, kind: str, doc: dict[str, Any]) -> bool:
        space_id = self.spaces[TREES[tree][0]]
        if kind == "integration":
            return fnmatch.fnmatchcase(str(doc["name"]), f"{tree}-*")
        if kind in SPACED or kind == "restriction":
            return doc.get("space_id") == space_id
        return False

    def outside(self, tree: str) -> str:
        """Every object outside ``tree``'s ownership, with its versions' count: must not change."""
        out: dict[str, Any] = {}
        for kind in ("integration", *SPACED, "restriction"):
            for doc in self._rows(kind):
                if not self._owned(tree, kind, doc):
                    children = {c: self.emu.store.count(c, parent=doc["id"])
                                for c in ("prompt_version", "dataset_version", "evaluator_version")}
                    out[f"{kind}/{doc['id']}"] = [doc, children]
        return json.dumps(out, sort_keys=True, default=str)

    def everything(self) -> str:
        return json.dumps({k: self._rows(k) for k in ("integration", *SPACED, "restriction")}, sort_keys=True,
                          default=str)

    def protected_ids(self, tree: str) -> set[str]:
        """Live ids of what the tree protects (``protect: true``, or an Ownership glob)."""
        design = self.designs.get(tree, [])
        space, space_id = TREES[tree][0], self.spaces[TREES[tree][0]]
        globs = next((d["protect"] for d in design if d["kind"] == "Ownership"), [])
        flagged = {(d["kind"], d["name"]) for d in design if d.get("protect") is True}
        ids: set[str] = set()
        for doc in self._rows("integration"):
            name = str(doc["name"])
            if ("Integration", name) in flagged or any(fnmatch.fnmatchcase(f"Integration/{name}", g) for g in globs):
                ids.add(doc["id"])
        for kind in SPACED:
            for doc in self._rows(kind):
                address = f"{kind.title()}/{space}/{doc['name']}"
                if doc.get("space_id") == space_id and (
                        (kind.title(), doc["name"]) in flagged
                        or any(fnmatch.fnmatchcase(a, g) for g in globs
                               for a in (address, f"{kind.title()}/{doc['name']}"))):
                    ids.add(doc["id"])
        return ids

    def all_ids(self) -> set[str]:
        return {doc["id"] for kind in ("integration", *SPACED) for doc in self._rows(kind)}

    # ------------------------------------------------------------ rules

    def write(self, tree: str, design: list[dict[str, Any]]) -> None:
        self.designs[tree] = design
        directory = self.tmp / tree
        directory.mkdir(exist_ok=True)
        (directory / "manifests.yaml").write_text(yaml.safe_dump_all(design, sort_keys=False))

    @rule(tree=st.sampled_from(sorted(TREES)), data=st.data(), prune=st.booleans(), allow_replace=st.booleans(),
          allow_empty=st.booleans())
    def commit_and_apply(self, tree: str, data: st.DataObject, prune: bool, allow_replace: bool,
                         allow_empty: bool) -> None:
        """The team commits a new version of its tree, and the merge applies it."""
        self.write(tree, data.draw(tree_design(tree)))
        self.apply(tree, prune, allow_replace, allow_empty)

    @rule(tree=st.sampled_from(sorted(TREES)), prune=st.booleans(), allow_replace=st.booleans(),
          allow_empty=st.booleans())
    def apply(self, tree: str, prune: bool, allow_replace: bool, allow_empty: bool) -> None:
        """The tree as it is, applied again (after hand edits: it heals them)."""
        before_outside, before_all = self.outside(tree), self.everything()
        protected = self.protected_ids(tree)
        options = PlanOptions(prune=prune, allow_replace=allow_replace, allow_empty=allow_empty,
                              restrictions="compare")
        try:
            manifests = load([str(self.tmp / tree)])
            live, plan = plan_against(manifests, self.client, options)
            self.outputs.extend(render(plan, fmt) for fmt in ("text", "json", "markdown"))
            self.outputs.append(plan.dumps())
            check_plan_secrets(plan, manifests)
            report = run_apply(plan, self.client, parallelism=2, fail_fast=False)
        except (ManifestError, PlanError) as exc:  # refused: nothing at all was written
            self.outputs.append(str(exc))
            assert self.everything() == before_all, str(exc)
            return
        self.outputs.extend(report.lines())
        assert self.outside(tree) == before_outside, "a tree wrote outside its ownership"
        assert protected <= self.all_ids(), "a protected resource was deleted or replaced"
        assert report.ok, report.lines()
        again = confirm_converged(manifests, self.client, plan, live, report)
        assert again.empty, [op.id for op in again.operations]
        _, fresh = plan_against(manifests, self.client, PlanOptions(prune=prune, allow_empty=True,
                                                                     restrictions="compare"))
        assert fresh.empty, [(op.id, [c.path for c in op.changes]) for op in fresh.operations]

    @rule(tree=st.sampled_from(sorted(TREES)), what=st.sampled_from(["prompt", "integration", "old-name", "flag",
                                                                      "delete-prompt", "shared"]))
    def hand_edit(self, tree: str, what: str) -> None:
        """Someone edits the account in the UI (the API here)."""
        space, _ = TREES[tree]
        if what in ("prompt", "shared"):
            where = self.spaces[space if what == "prompt" else "shared"]
            self.hand_made += 1
            name = f"by-hand-{self.hand_made}"
            self.api.post("/v2/prompts", json={"space_id": where, "name": name, "version": {
                "commit_message": "hand", "provider": "VENDOR_A", "messages": MESSAGES}}).raise_for_status()
        elif what in ("integration", "old-name"):
            name = f"{tree}-old" if what == "old-name" else f"{tree}-hand-{len(self._rows('integration'))}"
            if not any(d["name"] == name for d in self._rows("integration")):
                self.api.post("/v2/integrations", json={"type": "LLM", "name": name, "config": {
                    "provider": "VENDOR_A", "api_key": "hand-made-key"}}).raise_for_status()
        elif what == "flag":
            for doc in self._rows("integration"):
                if str(doc["name"]).startswith(f"{tree}-") and doc["config"].get("provider") == "VENDOR_A":
                    self.api.patch(f"/v2/integrations/{doc['id']}", json={"type": "LLM", "config": {
                        "is_function_calling_enabled": not doc["config"].get("is_function_calling_enabled", True)}})
                    break
        else:
            for doc in self._rows("prompt"):
                if doc.get("space_id") == self.spaces[space]:
                    self.api.delete(f"/v2/prompts/{doc['id']}")
                    break

    @invariant()
    def no_secret_in_any_output(self) -> None:
        if hasattr(self, "outputs"):
            leaks = [v for text in self.outputs for v in CANARIES.values() if v in text]
            assert leaks == []


TwoTrees.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                                      derandomize=not os.environ.get("RECONCILER_STATEFUL_EXAMPLES"), database=None,
                                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_two_trees_sharing_one_account = TwoTrees.TestCase

