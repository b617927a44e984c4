"""watch --all serves the figures of every environment as one registry (``ByEnvironment``): every
sample carries the label ``environment``, each environment's values its own, in the Prometheus text
format and in OpenMetrics alike."""

from __future__ import annotations

from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from reconciler.telemetry import ByEnvironment, Telemetry


def test_every_sample_is_labelled_with_its_environment_and_keeps_its_own_value() -> None:
    staging, production = Telemetry(environment="staging"), Telemetry(environment="production")
    staging.cycle_done("ok", 0.2, success=True)
    staging.cycle_done("ok", 0.2, success=True)
    production.cycle_done("error", 0.2, success=False)
    served = ByEnvironment({"staging": staging, "production": production}).registry

    for text, parse in ((generate_latest(served).decode(), text_string_to_metric_families),
                        (generate_openmetrics(served).decode(), parse_openmetrics)):
        samples = [s for family in parse(text) for s in family.samples]
        assert samples and all(s.labels["environment"] in ("staging", "production") for s in samples)
        cycles = {(s.labels["environment"], s.labels["outcome"]): s.value for s in samples
                  if s.name == "reconciler_cycles_total"}
        assert (cycles[("staging", "ok")], cycles[("production", "ok")], cycles[("production", "error")]) == (2, 0, 1)
