"""Pull's promise over two environments sharing a base, as a property: a tree
drawn at random (variables shared by several declarations or not, Patches, var files, aliases, ignore
rules, an examples file or inline examples), applied to staging and production (one account each),
then UI edits, deletes and creates drawn at random in staging. After staging's ``pull --write``:
staging plans empty or every resource left different is listed with its reason; production's plan is
byte-identical to before; both trees load; a second pull writes nothing.

Small in ``make test``; ``make soak`` runs it long (``RECONCILER_PULL_ENV_EXAMPLES``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.cli.main import main
from tests.pull.helpers import ENV, UI, ui_on

EXAMPLES = int(os.environ.get("RECONCILER_PULL_ENV_EXAMPLES", "5"))
KEYED = '{"tid": 1, "q": "a"}\n{"tid": 2, "q": "b"}\n'


@dataclass(frozen=True)
class Shape:
    """The tree drawn: which values come from variables, what the overlays patch, which rules ignore."""

    shared_temperature: bool  # both prompts take {var: temperature}
    description_var: bool  # "${var.tag} tickets" inside a string, also in the Ownership's name
    patch_second: bool  # each overlay patches the second prompt's description
    patch_file: bool  # the overlays have a Patch file at all (else only a var file)
    examples_file: bool  # the dataset's examples in base/keyed.jsonl, else inline
    ignore_sub_key: bool  # the first prompt ignores version.invocation_params.temperature
    ignore_evaluator: bool  # the Ownership ignores the evaluator's template
    aliases: bool  # the integration declares a former name


def base_tree(s: Shape) -> str:
    temperature = "{var: temperature}" if s.shared_temperature else "0.5"
    description = '"${var.tag} tickets"' if s.description_var else "first tickets"
    ignore = "ignore_changes: [version.invocation_params.temperature]\n" if s.ignore_sub_key else ""
    examples = "examples_file: keyed.jsonl\n" if s.examples_file else \
        'examples:\n  - {tid: 1, q: a}\n  - {tid: 2, q: b}\n'
    owner_ignore = ('ignore_changes:\n  - match: ["Evaluator/research/*"]\n    fields: [template_config.template]\n'
                    if s.ignore_evaluator else "")
    return f"""\
kind: Ownership
name: {"team-${var.tag}" if s.description_var else "{var: env}"}
spaces: [research]
integrations: ["llm-*"]
{owner_ignore}---
kind: Integration
name: llm-a
{"aliases: [llm-old]" + chr(10) if s.aliases else ""}type: LLM
config:
  provider: VENDOR_A
  api_key: {{env: A_KEY}}
  is_function_calling_enabled: true
---
kind: Prompt
space: research
name: first
{ignore}description: {description}
version:
  commit_message: first
  provider: VENDOR_A
  messages:
    - {{role: user, content: "{{ticket}}"}}
  invocation_params: {{temperature: {{var: temperature}}, max_tokens: 100}}
---
kind: Prompt
space: research
name: second
description: the second
version:
  commit_message: first
  provider: VENDOR_A
  messages: [{{role: user, content: "{{ticket}}"}}]
  invocation_params: {{temperature: {temperature}}}
---
kind: Dataset
space: research
name: keyed
key: tid
{examples}---
kind: Evaluator
space: research
name: judge
commit_message: first
template_config:
  name: judge
  template: "Is {{{{output}}}} right?"
  classification_choices: {{right: 1, wrong: 0}}
  llm_config: {{integration: llm-a, model_name: m}}
"""


def write_tree(root: Path, s: Shape) -> None:
    (root / "base").mkdir(parents=True)
    (root / "base" / "all.yaml").write_text(base_tree(s))
    if s.examples_file:
        (root / "base" / "keyed.jsonl").write_text(KEYED)
    for env, temperature in (("staging", 0.7), ("production", 0.2)):
        folder = root / "overlays" / env
        folder.mkdir(parents=True)
        (folder / "vars.yaml").write_text(f"env: {env}\ntag: {env}\ntemperature: {temperature}\n")
        if s.patch_file:
            body = f"  description: the {env} second\n" if s.patch_second else f"  version: {{model: m-{env}}}\n"
            (folder / "patches.yaml").write_text(
                "kind: Patch\ntarget: Prompt/second\nspace: research\npatch:\n" + body)


# ---------------------------------------------------------------- UI edits in staging


def _description(api: UI, word: str, _: float) -> None:
    p = api.prompt("research", "first")
    api.c.patch(f"/v2/prompts/{p['id']}", json={"description": f"{word} tickets"}).raise_for_status()


def _second_description(api: UI, word: str, _: float) -> None:
    p = api.prompt("research", "second")
    api.c.patch(f"/v2/prompts/{p['id']}", json={"description": f"second {word}"}).raise_for_status()


def _temperature(api: UI, _: str, number: float) -> None:
    api.new_prompt_version("research", "first", invocation_params={"temperature": number, "max_tokens": 100})


def _max_tokens(api: UI, _: str, number: float) -> None:
    params = api.prompt("research", "first")["version"].get("invocation_params") or {}
    api.new_prompt_version("research", "first", invocation_params={**params, "max_tokens": int(number * 10) + 1})


def _second_temperature(api: UI, _: str, number: float) -> None:
    api.new_prompt_version("research", "second", invocation_params={"temperature": number})


def _integration(api: UI, _: str, __: float) -> None:
    api.patch_integration("llm-a", {"config": {"is_function_calling_enabled": False}})


def _examples(api: UI, word: str, _: float) -> None:
    live = {x["tid"]: x for x in api.examples("research", "keyed")}
    api.update_examples("research", "keyed", [{"id": live[1]["id"], "tid": 1, "q": word}])
    api.append_examples("research", "keyed", [{"tid": 3, "q": word}])


def _evaluator(api: UI, word: str, _: float) -> None:
    api.new_evaluator_version("research", "judge", lambda tc: tc.update(template=f"Is {{{{output}}}} {word}?"))


def _delete_second(api: UI, _: str, __: float) -> None:
    api.delete("prompts", "second", space_id=api.space_id("research"))


def _create(api: UI, word: str, _: float) -> None:
    api.c.post("/v2/prompts", json={"space_id": api.space_id("research"), "name": "made-in-ui", "version": {
        "commit_message": word, "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}) \
        .raise_for_status()


EDITS: list[Callable[[UI, str, float], None]] = [
    _description, _second_description, _temperature, _max_tokens, _second_temperature, _integration, _examples,
    _evaluator, _delete_second, _create]
ORDER = {f: i for i, f in enumerate(EDITS)}
SHAPES = st.builds(Shape, *(st.booleans() for _ in range(8)))
WORDS = st.sampled_from(["alpha", "beta 2", "it's", "x: y", "true", "12"])
NUMBERS = st.sampled_from([0.0, 0.3, 0.9, 1.0])


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RECONCILER_BASE_URL", raising=False)
    for k in [k for k in os.environ if k.startswith("RECONCILER_VAR_")]:
        monkeypatch.delenv(k)


def texts(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith((".db", "-wal", "-shm"))}


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("RECONCILER_PULL_ENV_EXAMPLES"),
          database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(shape=SHAPES, edits=st.lists(st.sampled_from(EDITS), min_size=1, max_size=4, unique=True), word=WORDS,
       number=NUMBERS)
def test_staging_pull_keeps_its_promise_and_leaves_production_alone(
        environment: None, shape: Shape, edits: list[Any], word: str, number: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="pull-two-envs-"))
    cwd = os.getcwd()
    try:
        os.chdir(tmp)
        write_tree(tmp / "tree", shape)

        def run(env: str, command: str, *extra: str) -> Result:
            args = ["tree/base", f"tree/overlays/{env}", "--var-file", f"tree/overlays/{env}/vars.yaml"]
            db = () if command == "validate" else ("--emulator", str(tmp / f"{env}.db"))
            return CliRunner().invoke(main, [command, *args, *extra, *db], catch_exceptions=False)

        for env in ("staging", "production"):
            applied = run(env, "apply", "--auto-approve")
            assert applied.exit_code == 0, applied.output
        before = run("production", "plan", "--format", "json")
        with _FileUI(tmp / "staging.db") as api:
            for edit in sorted(edits, key=ORDER.__getitem__):
                edit(api, word, number)

        pulled = run("staging", "pull", "--write")
        story = f"{shape}, {[e.__name__ for e in edits]} ({word!r}, {number}):\n{pulled.output}"
        assert pulled.exit_code in (0, 2), story
        for env in ("staging", "production"):
            assert run(env, "validate").exit_code == 0, story
        after = run("production", "plan", "--format", "json")
        assert _plan_of(after.stdout) == _plan_of(before.stdout), story
        plan = run("staging", "plan", "--format", "json")
        listed = {line.split(": ")[1] for line in pulled.output.splitlines() if line.startswith("Not written: ")}
        left = {op["address"] for op in json.loads(plan.stdout)["operations"]}
        assert left <= listed, f"{story}\nleft different and not listed: {sorted(left - listed)}"

        tree = texts(tmp / "tree")
        again = run("staging", "pull", "--write")
        assert again.exit_code in (0, 2) and "Pulled" not in again.output, f"{story}\n{again.output}"
        assert texts(tmp / "tree") == tree
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)


def _plan_of(stdout: str) -> Any:
    """A JSON plan without what differs between two runs of the same plan (when it was made)."""
    plan = json.loads(stdout)
    for key in ("created_at", "generated_at", "workdir"):
        plan.pop(key, None)
    return plan


class _FileUI:
    """``helpers.ui`` on an emulator file of another name than live.db."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def __enter__(self) -> UI:
        self.opened = ui_on(self.db)
        return self.opened.__enter__()

    def __exit__(self, *_: object) -> None:
        self.opened.__exit__(None, None, None)
