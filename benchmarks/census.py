"""The account's shape, counted straight from the emulator's SQLite file (not through the API and
not with the reconciler's code), so the lower bound does not trust what it measures."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Census:
    integrations: Counter[str] = field(default_factory=Counter)  # type -> count
    spaces: dict[str, str] = field(default_factory=dict)  # name -> id
    organizations: int = 0
    restrictions: int = 0
    prompts: dict[tuple[str, str], str] = field(default_factory=dict)  # (space_id, name) -> id
    prompt_versions: Counter[str] = field(default_factory=Counter)  # prompt id -> versions
    datasets: dict[tuple[str, str], str] = field(default_factory=dict)  # (space_id, name) -> id
    examples: Counter[str] = field(default_factory=Counter)  # dataset id -> examples in its latest version
    experiments: dict[str, list[str]] = field(default_factory=dict)  # dataset id -> created_at, newest first
    evaluators: dict[tuple[str, str], str] = field(default_factory=dict)  # (space_id, name) -> id

    def in_space(self, kind: str, space_id: str) -> int:
        table = {"Prompt": self.prompts, "Dataset": self.datasets, "Evaluator": self.evaluators}[kind]
        return sum(1 for sid, _ in table if sid == space_id)

    def space_id(self, name: str) -> str | None:
        return self.spaces.get(name)


def take(db: Path) -> Census:
    c = Census()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT kind, id, parent, data FROM docs ORDER BY seq")
        latest_version: dict[str, str] = {}  # dataset id -> its newest version id
        version_examples: Counter[str] = Counter()
        experiments: list[tuple[str, str]] = []
        for kind, id_, parent, data in rows:
            if kind == "example":
                version_examples[str(parent)] += 1
                continue
            doc = json.loads(data)
            if kind == "integration":
                c.integrations[str(doc.get("type"))] += 1
            elif kind == "space":
                c.spaces[str(doc["name"])] = str(id_)
            elif kind == "organization":
                c.organizations += 1
            elif kind == "restriction":
                c.restrictions += 1
            elif kind == "prompt":
                c.prompts[(str(doc["space_id"]), str(doc["name"]))] = str(id_)
            elif kind == "prompt_version":
                c.prompt_versions[str(parent)] += 1
            elif kind == "dataset":
                c.datasets[(str(doc["space_id"]), str(doc["name"]))] = str(id_)
            elif kind == "dataset_version":
                latest_version[str(parent)] = str(id_)  # rows come oldest first
            elif kind == "evaluator":
                c.evaluators[(str(doc["space_id"]), str(doc["name"]))] = str(id_)
            elif kind == "experiment":
                experiments.append((str(doc["dataset_id"]), str(doc["created_at"])))
    finally:
        con.close()
    for dataset_id, version_id in latest_version.items():
        c.examples[dataset_id] = version_examples[version_id]
    for dataset_id, created in reversed(experiments):
        c.experiments.setdefault(dataset_id, []).append(created)
    return c
