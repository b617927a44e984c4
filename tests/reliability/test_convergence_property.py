"""Property: for random desired states of every kind, apply then plan is empty. Each example
applies one random state to an empty service, then a second random state over the same names
(so creates, PATCHes, new prompt and evaluator versions, label moves, restriction changes and
dataset example updates all happen), and after each apply a full, fresh plan is empty and the
apply's own convergence check (which re-reads only what it touched) agrees.

In-process (the emulator as an httpx transport) so that many examples fit in a few seconds."""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.apply.executor import describe
from reconciler.client.http import EMULATOR_BASE_URL, ApiClient, build_http_client
from reconciler.client.inprocess import InProcessTransport
from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings
from reconciler.plan.model import Plan, PlanOptions
from reconciler.workflow import confirm_converged, load, plan_against, run_apply
from tests.reliability.generators import DesiredState, desired_state


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def in_process_service() -> Iterator[ApiClient]:
    emu = Emulator(EmulatorSettings())
    transport = InProcessTransport(create_app(emu), on_close=emu.store.close)
    with ApiClient(build_http_client(EMULATOR_BASE_URL, "admin-key", transport=transport), parallelism=4) as client:
        yield client


def unconverged(plan: Plan) -> list[str]:
    return [describe(op) + " " + ", ".join(c.path for c in op.changes or ()) for op in plan.operations]


def apply_and_check(state: DesiredState, directory: Path, client: ApiClient, version: str) -> None:
    with environment(state.env()):
        manifests = load([str(state.write(directory, files=2))])
        options = PlanOptions(version_name=version)
        live, plan = plan_against(manifests, client, options)
        report = run_apply(plan, client, parallelism=4, fail_fast=False)
        assert report.ok, report.lines()
        assert unconverged(confirm_converged(manifests, client, plan, live, report)) == []
        _, fresh = plan_against(manifests, client, PlanOptions())
        assert unconverged(fresh) == []


@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(6, 40), first=st.randoms(use_true_random=False), second=st.randoms(use_true_random=False))
def test_apply_then_plan_is_empty_for_random_desired_states_of_every_kind(
        size: int, first: random.Random, second: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp, in_process_service() as client:
        apply_and_check(desired_state(size, first), Path(tmp) / "first", client, "v1")
        apply_and_check(desired_state(size, second), Path(tmp) / "second", client, "v2")
