"""``/metrics`` speaks OpenMetrics when the scraper's Accept header asks for it (Prometheus does
when its scrape protocols allow), the Prometheus text format otherwise; and no ``*_created`` series
unless PROMETHEUS_DISABLE_CREATED_SERIES says they are wanted."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from reconciler.telemetry import Telemetry
from reconciler.watch import HealthServer

OPENMETRICS = "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5"


@pytest.fixture
def served() -> Iterator[tuple[str, Telemetry]]:
    telemetry = Telemetry()
    telemetry.cycle_done("ok", 0.3, success=True)
    telemetry.observe_outcome("create", "applied")
    server = HealthServer(("127.0.0.1", 0), telemetry, healthy=lambda: True, ready=lambda: True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics", telemetry
    finally:
        server.close()


def test_openmetrics_when_the_accept_header_asks(served: tuple[str, Telemetry]) -> None:
    url, _ = served
    response = httpx.get(url, headers={"Accept": OPENMETRICS})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")
    assert 'reconciler_apply_operations_total{action="create",outcome="applied"} 1.0' in response.text


def test_the_prometheus_text_format_otherwise(served: tuple[str, Telemetry]) -> None:
    url, _ = served
    response = httpx.get(url)
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "# EOF" not in response.text and "reconciler_cycles_total{outcome=\"ok\"} 1.0" in response.text


def test_no_created_series_in_either_format(served: tuple[str, Telemetry]) -> None:
    url, _ = served
    for accept in (OPENMETRICS, "*/*"):
        text = httpx.get(url, headers={"Accept": accept}).text
        assert "reconciler_cycles_total" in text and "_created" not in text


def test_created_series_when_wanted() -> None:
    code = ("from reconciler.telemetry import Telemetry; t = Telemetry(); t.cycle_done('ok', 1.0, success=True); "
            "from prometheus_client import generate_latest; print(generate_latest(t.registry).decode())")
    env = {**os.environ, "PROMETHEUS_DISABLE_CREATED_SERIES": "false"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "reconciler_cycles_created" in out
    env.pop("PROMETHEUS_DISABLE_CREATED_SERIES")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "reconciler_cycles_total" in out and "_created" not in out
