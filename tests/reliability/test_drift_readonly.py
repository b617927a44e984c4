"""``drift`` is read-only: whatever it finds (nothing to do, everything missing, fields changed by
hand) and whatever the service does to it (5xx, resets, 429), it sends nothing but GET. Counted by
the emulator's own stats and by what crossed the socket."""

from __future__ import annotations

import json
from pathlib import Path

from tests.reliability.generators import API_KEY_ENV, desired_state
from tests.reliability.harness import FAULTS, admin_client, run_cli, serve


def test_drift_sends_nothing_but_get_whether_in_sync_missing_or_changed(tmp_path: Path) -> None:
    state = desired_state(150, 5)
    tree = str(state.write(tmp_path / "m"))
    env = {**state.env(), API_KEY_ENV: "admin-key"}
    with serve(faults=f"seed=5,{FAULTS}", rate_limit=200) as served:
        empty = run_cli(["drift", tree, "--base-url", served.url], env)
        assert empty.exit_code == 2, empty.output
        assert "Plan: 150 to create" in empty.stdout
        assert all(k.startswith("GET ") for k in served.stats()), served.stats()
        assert run_cli(["apply", tree, "--auto-approve", "--base-url", served.url], env).exit_code == 0

        served.reset_stats()
        in_sync = run_cli(["drift", tree, "--base-url", served.url], env)
        assert in_sync.exit_code == 0, in_sync.output

        with admin_client(served.url, "admin-key") as api:
            agent = next(i for i in api.run(api.paginate("/v2/integrations", "integrations", {"type": "AGENT"})))
            api.run(api.patch(f"/v2/integrations/{agent['id']}", {"type": "AGENT", "description": "changed by hand"}))
        hand_writes = 1
        drifted = run_cli(["drift", tree, "--base-url", served.url, "--format", "json", "-v"], env)
        assert drifted.exit_code == 2, drifted.output
        ops = json.loads(drifted.stdout)["operations"]
        assert [(op["address"], op["method"]) for op in ops] == [(f"Integration/{agent['name']}", "PATCH")]

        writes = {k: v for k, v in served.stats().items() if not k.startswith("GET ")}
        assert writes == {"PATCH /v2/integrations/{integration_id}": hand_writes}
        sent = [e for e in served.recorder.api() if e.method != "GET"]
        assert [(e.method, e.headers) for e in sent if ("x-emulator-no-faults", "1") not in e.headers] == []
        assert served.recorder.figures()["faults"] > 0  # drift was retried through faults, with GETs only
