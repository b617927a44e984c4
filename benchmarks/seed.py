"""What the benchmark puts in the account outside the measured runs, through the API with the admin
key: the spaces (the manifests do not manage spaces) and the experiments (not a manifest kind; their
datasets declare retention). Experiments are backdated (``X-Emulator-Backdate: 1``) to 40 days and
more, so the retention rule's age test holds for all of them and only ``keep_last`` decides."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.account import AccountSpec
from benchmarks.server import admin_client, json_of


def seed_spaces(url: str, spec: AccountSpec) -> None:
    with admin_client(url) as api:
        for name in spec.space_names:
            json_of(api.post("/v2/spaces", json={"name": name}))


def seed_experiments(url: str, spec: AccountSpec) -> int:
    """``experiments_per_dataset`` experiments on every dataset of the account; returns how many."""
    with admin_client(url) as api:
        spaces = json_of(api.get("/v2/spaces", params={"limit": 100}))["spaces"]
        ids = [s["id"] for s in spaces if s["name"] in spec.space_names]
        datasets: list[dict[str, Any]] = []
        for space_id in ids:
            cursor = None
            while True:
                params: dict[str, Any] = {"space_id": space_id, "limit": 100}
                if cursor:
                    params["cursor"] = cursor
                page = json_of(api.get("/v2/datasets", params=params))
                datasets += page["datasets"]
                if not page["pagination"]["has_more"]:
                    break
                cursor = page["pagination"]["next_cursor"]
        base = datetime.now(UTC) - timedelta(days=40)

        def seed(dataset: dict[str, Any]) -> int:
            first = json_of(api.get(f"/v2/datasets/{dataset['id']}/examples", params={"limit": 1}))["examples"][0]
            for k in range(spec.experiments_per_dataset):
                stamp = (base - timedelta(days=k)).isoformat()
                json_of(api.post("/v2/experiments", headers={"X-Emulator-Backdate": "1"}, json={
                    "name": f"run-{k:03d}", "dataset_id": dataset["id"], "created_at": stamp,
                    "experiment_runs": [{"example_id": first["id"], "output": "bug"}]}))
            return spec.experiments_per_dataset

        with ThreadPoolExecutor(max_workers=8) as pool:
            return sum(pool.map(seed, datasets))
