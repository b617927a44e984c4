"""The secrets apply sends (reconciler/plan/context.py ``parse_secret_spec``, read by apply for every
secret of a plan): an ``env:NAME`` and a ``file:PATH`` are both resolved into the request body, and a
file path that holds ``:`` is read whole (only the first ``:`` ends the source)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.plan.model import SENSITIVE, Plan
from tests.apply.runs import run_plan
from tests.apply.test_executor import Recorder, client, op


def test_env_and_file_secrets_are_sent_in_the_body_and_a_path_may_hold_a_colon(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A_KEY", "canary-env-7d1")
    secret = tmp_path / "keys:v2" / "token:b"
    secret.parent.mkdir()
    secret.write_text("canary-file-4c2\n")
    body = {"config": {"api_key": SENSITIVE, "headers": {"X-T": SENSITIVE}}}
    plan = Plan(operations=(op("a", "POST", "/v2/integrations", body, action="create",
                               secrets={"/config/api_key": "env:A_KEY", "/config/headers/X-T": f"file:{secret}"}),))
    rec = Recorder()
    report = run_plan(plan, client(rec), parallelism=1)
    assert report.ok
    assert rec.calls == [("POST", "/v2/integrations",
                          {"config": {"api_key": "canary-env-7d1", "headers": {"X-T": "canary-file-4c2"}}})]
