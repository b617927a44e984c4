"""Benchmark: validate a directory of 5,000 resources (the target: under 2 s).

Run as ``python -m benchmarks.validate_bench [--resources N] [--files N]``. It writes a manifest
tree to a temporary directory (all five kinds, equal shares; AGENT integrations with presets and
each its own input_schema; datasets with inline examples or a JSONL examples_file), then times
``load_manifests`` on the directory (best of a few runs) and prints the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from reconciler.manifests import load_manifests
from reconciler.providers import PROVIDERS

_LLM_PROVIDERS = [p for p in PROVIDERS if p in ("VENDOR_A", "VENDOR_B", "VENDOR_C")]


def _integration(i: int) -> str:
    if i % 2:
        return f"""kind: Integration
name: llm-{i}
type: LLM
scopings: []
config:
  provider: {_LLM_PROVIDERS[i % len(_LLM_PROVIDERS)]}
  api_key: {{env: VENDOR_KEY_{i % 7}}}
  is_function_calling_enabled: true
"""
    return f"""kind: Integration
name: agent-{i}
type: AGENT
description: Replays support conversations {i}
scopings:
  - {{organization_id: T3JnOjE=, space_id: U3BhY2U6{i}}}
config:
  endpoint: https://agent-{i}.example.com/v1/run
  headers: {{X-Agent-Token: {{env: AGENT_TOKEN}}, X-Team: {{file: secrets/team-{i % 5}.txt}}}}
  input_schema:
    type: object
    properties:
      question: {{type: string, maxLength: {1000 + i}}}
      temperature: {{type: number, minimum: 0, maximum: 2}}
    required: [question]
  request_presets:
    - name: cold
      description: deterministic replay
      config: {{temperature: 0}}
    - name: warm
      config: {{temperature: 0.7, question: hello}}
"""


def _prompt(i: int) -> str:
    return f"""kind: Prompt
space: space-{i % 10}
name: prompt-{i}
description: Summarize a support ticket
restricted: {str(i % 3 == 0).lower()}
version:
  commit_message: version {i}
  provider: VENDOR_A
  model: model-large
  input_variable_format: f_string
  messages:
    - {{role: system, content: You summarize support tickets.}}
    - {{role: user, content: "{{ticket}}"}}
  invocation_params: {{temperature: 0.2, max_tokens: 400}}
  labels: [production, v{i}]
"""


def _dataset(i: int, directory: str) -> str:
    head = f"""kind: Dataset
space: space-{i % 10}
name: dataset-{i}
key: ticket_id
experiment_retention: {{keep_last: 10, older_than_days: 30}}
"""
    if i % 2:
        name = f"dataset-{i}.jsonl"
        with open(os.path.join(directory, name), "w", encoding="utf-8") as fh:
            for n in range(20):
                fh.write(json.dumps({"ticket_id": f"T-{n}", "ticket": f"text {n}", "label": n % 3}) + "\n")
        return head + f"examples_file: {name}\n"
    rows = "".join(f"  - {{ticket_id: T-{n}, ticket: text {n}, label: {n % 3}}}\n" for n in range(5))
    return head + "examples:\n" + rows


def _evaluator(i: int) -> str:
    return f"""kind: Evaluator
space: space-{i % 10}
name: evaluator-{i}
commit_message: first version
template_config:
  name: faithfulness
  template: "Is {{{{output}}}} supported by {{{{context}}}}? Answer faithful or unfaithful."
  include_explanations: true
  use_function_calling_if_available: true
  classification_choices: {{faithful: 1, unfaithful: 0}}
  direction: maximize
  data_granularity: span
  llm_config:
    integration: llm-{i | 1}
    model_name: model-large
    invocation_parameters: {{temperature: 0}}
    provider_parameters: {{}}
"""


def _restriction(i: int) -> str:
    return f"""kind: ResourceRestriction
name: restriction-{i}
resource_type: {("PROJECT", "DASHBOARD", "PROMPT")[i % 3]}
resource_id: UmVzb3VyY2U6{i:06d}
"""


def write_tree(directory: str, resources: int, files: int) -> None:
    makers = [_integration, _prompt, lambda i: _dataset(i, directory), _evaluator, _restriction]
    per_file = max(1, resources // files)
    docs: list[str] = []
    for i in range(resources):
        docs.append(makers[i % len(makers)](i // len(makers) * 2 + (i % len(makers) == 0)))
    for f in range(0, resources, per_file):
        with open(os.path.join(directory, f"part-{f // per_file:03d}.yaml"), "w", encoding="utf-8") as fh:
            fh.write("---\n".join(docs[f:f + per_file]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--resources", type=int, default=5000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        write_tree(directory, args.resources, args.files)
        timings = []
        for _ in range(args.runs):
            start = time.perf_counter()
            ms = load_manifests([directory])
            timings.append(time.perf_counter() - start)
        assert len(ms.resources) == args.resources, len(ms.resources)
    print(f"validated {len(ms.resources):,} resources in {args.files} files: "
          f"best {min(timings):.3f} s, first {timings[0]:.3f} s ({args.runs} runs; target < 2 s)")


if __name__ == "__main__":
    main()
