"""The benchmark account: its shape at a scale, the manifests that declare it, and the 5% change.

One ``AccountSpec`` drives everything: the manifest tree (``write_manifests``), the experiments
seeded through the API (``benchmarks.seed``) and the writes a change forces (``benchmarks.bounds``).
Every resource is declared, so a plan reads the whole account; the manifests are deterministic
(same scale, same files), so runs can be compared.

At scale 1.0 (``large``): 2,000 LLM integrations over every provider, 500 AGENT integrations with 3
presets, 1,000 prompts, 200 datasets of 500 examples, 200 evaluators and 10 experiments per
dataset (2,000), in 10 spaces. Every other count is multiplied by the scale (at least 1); examples
per dataset stay 500 (one full page: a dataset keeps its real shape), spaces are at least 2.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.providers import PROVIDERS

SCALES = {"small": 0.1, "large": 1.0}

#: The environment variables the manifests reference; the benchmark sets them in its processes.
SECRET_ENV = {"BENCH_VENDOR_KEY": "bench-vendor-key-0f3a", "BENCH_AGENT_TOKEN": "bench-agent-token-77c1"}

RETENTION = {"keep_last": 10, "older_than_days": 30}
CHANGED_KEEP_LAST = 7  # a dataset whose retention the change tightens keeps 7 of its 10 experiments
CHANGE_EVERY = 20  # one resource in 20 (5%) of each kind changes


@dataclass(frozen=True)
class AccountSpec:
    llm: int
    agent: int
    prompts: int
    datasets: int
    examples: int
    evaluators: int
    experiments_per_dataset: int
    spaces: int
    restricted_every: int = 10  # every 10th prompt is restricted (a resource restriction)

    @classmethod
    def at(cls, scale: float, examples: int = 500) -> AccountSpec:
        def n(base: int) -> int:
            return max(1, round(base * scale))

        return cls(llm=n(2000), agent=n(500), prompts=n(1000), datasets=n(200), examples=examples,
                   evaluators=n(200), experiments_per_dataset=10, spaces=max(2, round(10 * scale)))

    @property
    def space_names(self) -> list[str]:
        return [f"bench-{i:02d}" for i in range(self.spaces)]

    def space_of(self, i: int) -> str:
        return self.space_names[i % self.spaces]

    @property
    def resources(self) -> int:
        """Declared resources (what the manifests hold)."""
        return self.llm + self.agent + self.prompts + self.datasets + self.evaluators

    def as_json(self) -> dict[str, int]:
        return {"llm_integrations": self.llm, "agent_integrations": self.agent, "prompts": self.prompts,
                "datasets": self.datasets, "examples_per_dataset": self.examples, "evaluators": self.evaluators,
                "experiments": self.datasets * self.experiments_per_dataset, "spaces": self.spaces}


def changed(i: int) -> bool:
    """Whether resource ``i`` of a kind is in the 5% the change touches."""
    return i % CHANGE_EVERY == CHANGE_EVERY - 1


@dataclass
class Change:
    """What the 5% change edits, by kind, with the writes each edit forces (``benchmarks.bounds``)."""

    llm: list[str] = field(default_factory=list)
    agent: list[str] = field(default_factory=list)
    prompt_descriptions: list[tuple[str, str]] = field(default_factory=list)  # (space, name)
    prompt_versions: list[tuple[str, str]] = field(default_factory=list)
    dataset_examples: list[tuple[str, str]] = field(default_factory=list)
    dataset_retention: list[tuple[str, str]] = field(default_factory=list)
    evaluators: list[tuple[str, str]] = field(default_factory=list)

    @property
    def resources(self) -> int:
        return sum(len(v) for v in (self.llm, self.agent, self.prompt_descriptions, self.prompt_versions,
                                    self.dataset_examples, self.dataset_retention, self.evaluators))


def change_of(spec: AccountSpec) -> Change:
    c = Change()
    c.llm = [llm_name(i) for i in range(spec.llm) if changed(i)]
    c.agent = [agent_name(i) for i in range(spec.agent) if changed(i)]
    for i in range(spec.prompts):
        if changed(i):
            (c.prompt_versions if (i // CHANGE_EVERY) % 2 else c.prompt_descriptions).append(
                (spec.space_of(i), prompt_name(i)))
    for i in range(spec.datasets):
        if changed(i):
            (c.dataset_retention if (i // CHANGE_EVERY) % 2 else c.dataset_examples).append(
                (spec.space_of(i), dataset_name(i)))
    c.evaluators = [(spec.space_of(i), evaluator_name(i)) for i in range(spec.evaluators) if changed(i)]
    return c


# ---------------------------------------------------------------- names


def llm_name(i: int) -> str:
    return f"llm-{i:05d}"


def agent_name(i: int) -> str:
    return f"agent-{i:05d}"


def prompt_name(i: int) -> str:
    return f"prompt-{i:05d}"


def dataset_name(i: int) -> str:
    return f"dataset-{i:05d}"


def evaluator_name(i: int) -> str:
    return f"evaluator-{i:05d}"


_PROVIDER_ORDER = sorted(PROVIDERS)


def provider_of(i: int) -> str:
    return _PROVIDER_ORDER[i % len(_PROVIDER_ORDER)]


# ---------------------------------------------------------------- documents


def _llm(i: int, edit: bool) -> dict[str, Any]:
    provider = provider_of(i)
    secret = {"env": "BENCH_VENDOR_KEY"}
    config: dict[str, Any] = {"provider": provider}
    if provider in ("VENDOR_A", "VENDOR_B", "VENDOR_C"):
        config.update(api_key=secret, is_function_calling_enabled=not edit)
    elif provider == "CLOUD_D":
        config.update(auth={"auth_type": "DEFAULT", "role_arn": f"arn:aws:iam::1234:role/bench-{i}"},
                      model_names=["model-a", "model-b"] + (["model-c"] if edit else []))
    elif provider == "CUSTOM":
        config.update(base_url=f"https://custom-{i}.example.com/v1", api_key=secret,
                      model_names=["model-a"], is_function_calling_enabled=not edit)
    elif provider == "CLOUD_E":
        config.update(project_id=f"project-{i}", location="europe-west4" if edit else "us-central1",
                      project_access_label=f"label-{i}")
    elif provider == "NIM_F":
        config.update(base_url=f"https://nim-{i}.example.com/v1", is_default_models_enabled=False,
                      model_names=["llama-guard"], is_function_calling_enabled=not edit)
    else:  # a provider added later: the table's required fields are not known here
        raise ValueError(f"benchmark: no config recipe for provider {provider}")
    return {"kind": "Integration", "name": llm_name(i), "type": "LLM", "scopings": [], "config": config}


def _agent(i: int, edit: bool) -> dict[str, Any]:
    return {
        "kind": "Integration", "name": agent_name(i), "type": "AGENT",
        "description": f"Replays support conversations {i}" + (" (edited)" if edit else ""),
        "config": {
            "endpoint": f"https://agent-{i}.example.com/v1/run",
            "headers": {"X-Agent-Token": {"env": "BENCH_AGENT_TOKEN"}},
            "input_schema": {"type": "object", "properties": {"question": {"type": "string"},
                                                              "temperature": {"type": "number"}},
                             "required": ["question"]},
            "request_presets": [
                {"name": "cold", "description": "deterministic replay", "config": {"temperature": 0}},
                {"name": "warm", "config": {"temperature": 0.7}},
                {"name": "hot", "description": "exploration", "config": {"temperature": 1.2, "question": "hi"}},
            ],
        },
    }


def _prompt(spec: AccountSpec, i: int, c: Change | None) -> dict[str, Any]:
    key = (spec.space_of(i), prompt_name(i))
    description = f"Summarize support ticket kind {i}"
    system = "You summarize support tickets."
    if c is not None and key in c.prompt_descriptions:
        description += " (edited)"
    if c is not None and key in c.prompt_versions:
        system = "You summarize support tickets in two sentences."
    return {
        "kind": "Prompt", "space": key[0], "name": key[1], "description": description,
        "restricted": i % spec.restricted_every == 0,
        "version": {
            "commit_message": "benchmark version", "provider": "VENDOR_A", "model": "model-large",
            "input_variable_format": "f_string",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "{ticket}"}],
            "invocation_params": {"temperature": 0.2},
            "labels": ["production"],
        },
    }


def example(d: int, j: int, edit: bool = False) -> dict[str, Any]:
    return {"ticket_id": f"T-{d}-{j}", "ticket": f"Ticket {j} of dataset {d}: the export button does nothing.",
            "expected": "defect" if edit else "bug", "priority": j % 5}


def _dataset(spec: AccountSpec, i: int, c: Change | None) -> dict[str, Any]:
    key = (spec.space_of(i), dataset_name(i))
    keep_last = CHANGED_KEEP_LAST if c is not None and key in c.dataset_retention else RETENTION["keep_last"]
    return {"kind": "Dataset", "space": key[0], "name": key[1], "key": "ticket_id",
            "examples_file": f"data/{key[1]}.jsonl",
            "experiment_retention": {"keep_last": keep_last, "older_than_days": RETENTION["older_than_days"]}}


def _evaluator(spec: AccountSpec, i: int, c: Change | None) -> dict[str, Any]:
    key = (spec.space_of(i), evaluator_name(i))
    edit = c is not None and key in c.evaluators
    vendor = [j for j in range(spec.llm) if provider_of(j) == "VENDOR_A"]
    integration = llm_name(vendor[i % len(vendor)]) if vendor else llm_name(0)
    return {
        "kind": "Evaluator", "space": key[0], "name": key[1], "commit_message": "benchmark version",
        "template_config": {
            "name": key[1],
            "template": "Is {{output}} supported by {{context}}?" + (" Be strict." if edit else ""),
            "include_explanations": True, "use_function_calling_if_available": True,
            "classification_choices": {"faithful": 1, "unfaithful": 0}, "direction": "maximize",
            "data_granularity": "span",
            "llm_config": {"integration": integration, "model_name": "model-large",
                           "invocation_parameters": {"temperature": 0}, "provider_parameters": {}},
        },
    }


def write_manifests(spec: AccountSpec, root: Path, change: Change | None = None) -> Path:
    """The manifest tree of the account (with ``change`` applied when given); returns ``root``.
    Documents are JSON-style YAML (YAML is a superset of JSON), one file per kind."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    c = change

    def dump(name: str, docs: list[dict[str, Any]]) -> None:
        with (root / name).open("w", encoding="utf-8") as out:
            for doc in docs:
                out.write("---\n" + json.dumps(doc) + "\n")

    dump("llm.yaml", [_llm(i, c is not None and llm_name(i) in c.llm) for i in range(spec.llm)])
    dump("agents.yaml", [_agent(i, c is not None and agent_name(i) in c.agent) for i in range(spec.agent)])
    dump("prompts.yaml", [_prompt(spec, i, c) for i in range(spec.prompts)])
    dump("datasets.yaml", [_dataset(spec, i, c) for i in range(spec.datasets)])
    dump("evaluators.yaml", [_evaluator(spec, i, c) for i in range(spec.evaluators)])
    for i in range(spec.datasets):
        edit = c is not None and (spec.space_of(i), dataset_name(i)) in c.dataset_examples
        with (root / "data" / f"{dataset_name(i)}.jsonl").open("w", encoding="utf-8") as out:
            for j in range(spec.examples):
                out.write(json.dumps(example(i, j, edit and j == 0)) + "\n")
    return root


def pages(n: int, limit: int = 100) -> int:
    """Pages of a list of ``n`` items at ``limit`` (an empty list is one page)."""
    return max(1, math.ceil(n / limit))
