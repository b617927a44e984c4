"""Round trip, as a property over the emulator: whatever hand edits the platform's UI makes (fields
of every kind, examples changed, deleted and added, a prompt version and a label moved, a resource
deleted), ``pull --write --remove-absent`` then ``plan --detailed-exitcode`` exits 0: the tree describes live again."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.cli.main import main
from tests.pull.helpers import ENV, UI, ui

TREE = """\
kind: Ownership
name: research
spaces: [research]
integrations: ["*"]
---
kind: Integration
name: llm-a
type: LLM
config:
  provider: VENDOR_A
  api_key: {env: A_KEY}
  is_function_calling_enabled: true   # a comment
---
kind: Integration
name: agent
type: AGENT
description: replays
config:
  endpoint: https://agent.example.com/run
  input_schema: {type: object, properties: {q: {type: string}}}
  request_presets:
    - name: cold
      config: {temperature: 0}
---
kind: Prompt
space: research
name: triage
description: "Triage ${var.env} tickets"
restricted: false
version:
  commit_message: first
  provider: VENDOR_A
  model: {var: model}
  messages:
    - role: system
      content: |
        You triage tickets.
    - {role: user, content: "{ticket}"}
  invocation_params: {temperature: 0.2}
  labels: [production]
---
kind: Dataset
space: research
name: keyed
key: tid
examples_file: keyed.jsonl
---
kind: Dataset
space: research
name: inline
examples:
  - {q: one}
  - {q: two}
---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: >-
    Is {{output}} right?
  classification_choices: {right: 1, wrong: 0}
  llm_config:
    integration: llm-a
    model_name: m
    invocation_parameters: {temperature: 0}
"""
PATCH = """\
kind: Patch
target: Evaluator/judge
space: research
patch:
  description: the judge   # set by the overlay
"""
VARS = "env: support\nmodel: model-large\n"
KEYED = '{"tid": 1, "q": "a"}\n{"tid": 2, "q": "b"}\n{"tid": 3, "q": "c"}\n'

WORDS = st.sampled_from(["alpha", "beta", "gamma 2", "it's", "x: y", "#tag", "multi\nline\n", "true", "12"])
NUMBERS = st.sampled_from([0, 0.5, 1, 7, 0.25])


def _prompt_description(api: UI, word: str, _: Any) -> None:
    p = api.prompt("research", "triage")
    api.c.patch(f"/v2/prompts/{p['id']}", json={"description": f"Triage {word} tickets"}).raise_for_status()


def _prompt_version(api: UI, word: str, number: Any) -> None:
    messages = api.prompt("research", "triage")["version"]["messages"]
    messages[0]["content"] = f"You triage {word} tickets.\n"
    api.new_prompt_version("research", "triage", labels=["production"], messages=messages,
                           invocation_params={"temperature": number, "top_p": 1})


def _model(api: UI, word: str, _: Any) -> None:
    api.new_prompt_version("research", "triage", labels=["production"], model=f"model-{word.split()[0]}")


def _label_moved(api: UI, _: str, __: Any) -> None:
    first = api.prompt("research", "triage")["version"]["id"]
    api.new_prompt_version("research", "triage", messages=[{"role": "user", "content": "new"}])
    api.move_label(first, ["production", "staging"])


def _restricted(api: UI, _: str, __: Any) -> None:
    p = api.prompt("research", "triage")
    api.c.post("/v2/resource-restrictions", json={"resource_id": p["id"]}).raise_for_status()


def _llm(api: UI, _: str, __: Any) -> None:
    api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})


def _agent(api: UI, word: str, number: Any) -> None:
    api.patch_integration("agent", {"description": word, "config": {
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "number"}}},
        "request_presets": [{"name": "cold", "config": {"temperature": number}},
                            {"name": "warm", "description": word, "config": {"temperature": 1}}]}}, "AGENT")


def _evaluator(api: UI, word: str, number: Any) -> None:
    def change(tc: dict[str, Any]) -> None:
        tc["template"] = f"Is {{{{output}}}} {word}?"
        tc["classification_choices"] = {"right": 1, "wrong": 0, "unsure": number}
        tc["llm_config"]["invocation_parameters"] = {"temperature": number}
    api.new_evaluator_version("research", "judge", change)


def _evaluator_description(api: UI, word: str, _: Any) -> None:
    e = api.evaluator("research", "judge")
    api.c.patch(f"/v2/evaluators/{e['id']}", json={"description": word}).raise_for_status()


def _examples(api: UI, word: str, _: Any) -> None:
    live = {x["tid"]: x for x in api.examples("research", "keyed")}
    api.update_examples("research", "keyed", [{"id": live[2]["id"], "tid": 2, "q": word}])
    api.delete_examples("research", "keyed", [live[1]["id"]])
    api.append_examples("research", "keyed", [{"tid": 9, "q": word}])


def _inline_examples(api: UI, word: str, _: Any) -> None:
    live = {x["q"]: x for x in api.examples("research", "inline")}
    api.delete_examples("research", "inline", [live["two"]["id"]])
    api.append_examples("research", "inline", [{"q": word}, {"q": "more", "n": 2}])


def _delete_dataset(api: UI, _: str, __: Any) -> None:
    api.delete("datasets", "inline", space_id=api.space_id("research"))


def _delete_evaluator(api: UI, _: str, __: Any) -> None:
    api.delete("evaluators", "judge", space_id=api.space_id("research"))


EDITS: list[Callable[[UI, str, Any], None]] = [
    _prompt_description, _prompt_version, _model, _label_moved, _restricted, _llm, _agent, _evaluator,
    _evaluator_description, _examples, _inline_examples, _delete_dataset, _delete_evaluator]
ORDER = {f: i for i, f in enumerate(EDITS)}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)


@settings(max_examples=int(os.environ.get("PULL_PROPERTY_EXAMPLES", "6")), deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(edits=st.lists(st.sampled_from(EDITS), min_size=1, max_size=5, unique=True), word=WORDS, number=NUMBERS)
def test_pull_then_plan_is_empty_whatever_the_hand_edits(environment: None, edits: list[Any], word: str,
                                                         number: Any) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="pull-property-"))
    cwd = os.getcwd()
    try:
        os.chdir(tmp)
        (tmp / "base").mkdir()
        (tmp / "base" / "tree.yaml").write_text(TREE)
        (tmp / "base" / "keyed.jsonl").write_text(KEYED)
        (tmp / "overlay.yaml").write_text(PATCH)
        (tmp / "vars.yaml").write_text(VARS)
        args = ["base", "overlay.yaml", "--var-file", "vars.yaml", "--emulator", str(tmp / "live.db")]

        def run(*extra: str) -> Any:
            return CliRunner().invoke(main, [*extra, *args], catch_exceptions=False)

        assert run("apply", "--auto-approve").exit_code == 0
        with ui(tmp) as api:
            for edit in sorted(edits, key=ORDER.__getitem__):
                edit(api, word, number)
        pulled = run("pull", "--write", "--remove-absent")  # a resource deleted in the UI: its document too
        assert pulled.exit_code == 2, pulled.output
        plan = run("plan", "--detailed-exitcode")
        assert plan.exit_code == 0, f"after {[e.__name__ for e in edits]} ({word!r}, {number}):\n" \
                                    f"{pulled.output}\n{plan.output}"
        again = run("pull", "--write")
        assert (again.exit_code, again.output) == (0, "")
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
