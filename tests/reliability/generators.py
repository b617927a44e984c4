"""Desired-state generators for the reliability suite and the soak.

``desired_state(total, seed)`` spreads ``total`` manifest documents over every kind the reconciler
manages: LLM integrations of every provider in the provider table (every CLOUD_D auth mode) and
AGENT integrations with presets, prompts with labels and ``restricted``, datasets with keyed
examples and experiment retention, evaluators naming LLM integrations, and dashboard/project
restrictions. Every secret is an ``{env: NAME}`` reference whose value is a canary: a string that
must never show up anywhere but in the request that is meant to carry it.

The same (total, seed) always gives the same documents, so a failure in the soak replays.
"""

from __future__ import annotations

import base64
import random
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reconciler.providers import AUTH_MODES, PROVIDERS

SPACES = ("default", "research")
#: the share of each kind in a generated state (sums to 1)
KIND_SHARES = {"Integration": 0.25, "Prompt": 0.22, "Dataset": 0.15, "Evaluator": 0.2, "ResourceRestriction": 0.18}
#: the environment variable the API key is read from
API_KEY_ENV = "RECONCILER_API_KEY"


class _NoAliasDumper(yaml.SafeDumper):
    """The reconciler refuses YAML aliases, so the generated files must never contain one."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def canary(label: str) -> str:
    """A secret value nobody could write by chance (random, so a test can never pass by luck)."""
    return f"CANARY-{label}-{secrets.token_hex(8)}"


@dataclass
class DesiredState:
    """Manifest documents plus the canary value of every secret they reference."""

    documents: list[dict[str, Any]]
    secrets: dict[str, str] = field(default_factory=dict)  # env var -> canary value
    #: env var -> the integration names whose requests may carry it
    carriers: dict[str, set[str]] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return dict(self.secrets)

    def write(self, directory: Path, files: int = 6) -> Path:
        """Write the documents as multi-document YAML files (``part-NN.yaml``) under ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        chunk = max(1, -(-len(self.documents) // files))
        for n, start in enumerate(range(0, len(self.documents), chunk)):
            text = yaml.dump_all(self.documents[start:start + chunk], Dumper=_NoAliasDumper, sort_keys=False,
                                 allow_unicode=True, explicit_start=True)
            (directory / f"part-{n:02d}.yaml").write_text(text, encoding="utf-8")
        return directory


def _share(total: int) -> dict[str, int]:
    counts = {kind: max(1, int(total * share)) for kind, share in KIND_SHARES.items()}
    counts["Integration"] += total - sum(counts.values())
    return counts


class _Secrets:
    """A small pool of secret env vars, shared by several integrations (as teams do)."""

    def __init__(self, state: DesiredState, rng: random.Random) -> None:
        self.state = state
        self.rng = rng

    def ref(self, pool: str, size: int, carrier: str) -> dict[str, str]:
        name = f"{pool}_{self.rng.randrange(size)}"
        if name not in self.state.secrets:
            self.state.secrets[name] = canary(name.lower().replace("_", "-"))
        self.state.carriers.setdefault(name, set()).add(carrier)
        return {"env": name}

    def headers(self, carrier: str, names: list[str]) -> dict[str, dict[str, str]]:
        return {h: self.ref("HEADER_TOKEN", 4, carrier) for h in names}


def _llm_config(provider: str, i: int, rng: random.Random, sec: _Secrets, name: str) -> dict[str, Any]:
    config: dict[str, Any] = {"provider": provider}
    fields = PROVIDERS[provider].fields
    if "api_key" in fields and (fields["api_key"].required_on_create or rng.random() < 0.7):
        config["api_key"] = sec.ref("VENDOR_KEY", 5, name)
    if "is_function_calling_enabled" in fields:
        config["is_function_calling_enabled"] = rng.random() < 0.5
    if "base_url" in fields and (fields["base_url"].required_on_create or rng.random() < 0.6):
        config["base_url"] = f"https://llm-{i}.example.com/v{rng.randint(1, 3)}"
    if "headers" in fields and rng.random() < 0.7:
        config["headers"] = sec.headers(name, rng.sample(["X-Tenant", "X-Team", "X-Trace"], rng.randint(1, 2)))
    if "model_names" in fields:
        models = rng.sample(["m-small", "m-large", "m-code", "m-vision"], rng.randint(0, 3))
        config["model_names"] = models
        config["is_default_models_enabled"] = not models or rng.random() < 0.5
    if provider == "CLOUD_D":
        mode = sorted(AUTH_MODES)[i % len(AUTH_MODES)]
        if mode == "DEFAULT":
            config["auth"] = {"auth_type": mode, "role_arn": f"arn:aws:iam::1234:role/r{i}", "external_id": f"x{i}"}
        elif mode == "BEARER_TOKEN":
            config["auth"] = {"auth_type": mode, "api_key": sec.ref("BEDROCK_TOKEN", 2, name)}
        else:
            config["auth"] = {"auth_type": mode, "base_url": f"https://proxy-{i}.example.com",
                              "headers": sec.headers(name, ["X-Proxy-Auth"])}
    if provider == "CLOUD_E":
        config.update(project_id=f"project-{i}", location=rng.choice(["us-central1", "europe-west4"]),
                      project_access_label=f"label-{i}")
    return config


def _agent(i: int, rng: random.Random, sec: _Secrets) -> dict[str, Any]:
    name = f"agent-{i:04d}"
    presets = [{"name": "cold", "description": "deterministic replay", "config": {"temperature": 0}}]
    if rng.random() < 0.5:
        presets.append({"name": f"warm-{i}", "config": {"temperature": round(rng.uniform(0.1, 1.5), 2)}})
    doc: dict[str, Any] = {"kind": "Integration", "name": name, "type": "AGENT",
                           "description": f"Replays conversations for team {i % 7}"}
    if rng.random() < 0.5:
        doc["scopings"] = []
    doc["config"] = {
        "endpoint": f"https://agent-{i}.example.com/v1/run",
        "headers": {"X-Agent-Token": sec.ref("AGENT_TOKEN", 3, name)},
        "input_schema": {"type": "object",
                         "properties": {"question": {"type": "string"}, "temperature": {"type": "number"}},
                         "required": ["question"]},
        "request_presets": presets,
    }
    return doc


def _integrations(count: int, rng: random.Random, sec: _Secrets) -> list[dict[str, Any]]:
    providers = sorted(PROVIDERS)
    docs: list[dict[str, Any]] = []
    for i in range(count):
        if i % (len(providers) + 1) == len(providers):
            docs.append(_agent(i, rng, sec))
            continue
        provider = providers[i % (len(providers) + 1)]
        name = f"llm-{provider.lower().replace('_', '-')}-{i:04d}"
        doc: dict[str, Any] = {"kind": "Integration", "name": name, "type": "LLM"}
        if rng.random() < 0.5:
            doc["scopings"] = []
        doc["config"] = _llm_config(provider, i, rng, sec, name)
        docs.append(doc)
    return docs


def _prompt(i: int, rng: random.Random) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": "Prompt", "space": SPACES[i % 2], "name": f"prompt-{i:04d}",
                           "description": f"Summarize ticket kind {i % 11}"}
    if rng.random() < 0.6:
        doc["restricted"] = rng.random() < 0.5
    version: dict[str, Any] = {
        "commit_message": f"version for {i}",
        "provider": rng.choice(["VENDOR_A", "VENDOR_B", "CUSTOM"]),
        "model": rng.choice(["model-large", "model-small"]),
        "input_variable_format": "f_string",
        "messages": [{"role": "system", "content": f"You summarize tickets of queue {i}."},
                     {"role": "user", "content": "{ticket}"}],
        "invocation_params": {"temperature": round(rng.uniform(0, 1), 2)},
    }
    labels = rng.sample(["production", "staging", "canary", "v2"], rng.randint(0, 2))
    if labels or rng.random() < 0.5:
        version["labels"] = labels
    doc["version"] = version
    return doc


def _dataset(i: int, rng: random.Random) -> dict[str, Any]:
    size = rng.randint(1, 6)
    examples = [{"ticket_id": f"T-{i}-{n}", "ticket": f"text {n} of {i}", "label": rng.choice(["bug", "question"])}
                for n in range(size)]
    doc: dict[str, Any] = {"kind": "Dataset", "space": SPACES[i % 2], "name": f"dataset-{i:04d}",
                           "key": "ticket_id", "examples": examples}
    if rng.random() < 0.7:
        doc["experiment_retention"] = {"keep_last": rng.randint(1, 20), "older_than_days": rng.randint(1, 90)}
    return doc


def _evaluator(i: int, rng: random.Random, llm_names: list[str]) -> dict[str, Any]:
    return {
        "kind": "Evaluator", "space": SPACES[i % 2], "name": f"evaluator-{i:04d}",
        "commit_message": "first version",
        "template_config": {
            "name": f"faithfulness-{i}",
            "template": "Is {{output}} supported by {{context}}? Answer faithful or unfaithful.",
            "include_explanations": rng.random() < 0.5,
            "use_function_calling_if_available": True,
            "classification_choices": {"faithful": 1, "unfaithful": 0},
            "direction": "maximize",
            "data_granularity": "span",
            "llm_config": {"integration": rng.choice(llm_names), "model_name": "model-large",
                           "invocation_parameters": {"temperature": 0}, "provider_parameters": {}},
        },
    }


def _restriction(i: int) -> dict[str, Any]:
    kind = ("Dashboard", "Project")[i % 2]
    resource_id = base64.b64encode(f"{kind}:{1000 + i}".encode()).decode().rstrip("=")
    return {"kind": "ResourceRestriction", "name": f"{kind.lower()}-{i:04d}", "resource_type": kind.upper(),
            "resource_id": resource_id}


def desired_state(total: int, seed: int | random.Random) -> DesiredState:
    """``total`` documents over every kind (see the module docstring), reproducible from ``seed``
    (or drawn from the given generator: hypothesis's ``st.randoms()`` makes the draws shrinkable)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    state = DesiredState([])
    sec = _Secrets(state, rng)
    share = _share(total)
    integrations = _integrations(share["Integration"], rng, sec)
    llm_names = [d["name"] for d in integrations if d["type"] == "LLM"]
    state.documents = [
        *integrations,
        *(_prompt(i, rng) for i in range(share["Prompt"])),
        *(_dataset(i, rng) for i in range(share["Dataset"])),
        *(_evaluator(i, rng, llm_names) for i in range(share["Evaluator"])),
        *(_restriction(i) for i in range(share["ResourceRestriction"])),
    ]
    rng.shuffle(state.documents)
    return state


def api_key_canary() -> str:
    return canary("api-key")
