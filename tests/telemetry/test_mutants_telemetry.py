"""Telemetry at edges mutation testing found unpinned (reconciler/telemetry.py): the ``*_created``
series of the metrics file, on by the environment's choice only, and the error for a figure that
does not exist."""

from __future__ import annotations

from pathlib import Path

import prometheus_client.metrics
import pytest

from reconciler.telemetry import Telemetry


def series(tmp_path: Path) -> set[str]:
    t = Telemetry()
    t.cycle_done("ok", 1.0, success=True)
    path = tmp_path / "reconciler.prom"
    t.write_textfile(str(path))
    return {line.split("{")[0].split(" ")[0] for line in path.read_text().splitlines() if not line.startswith("#")}


def test_the_metrics_file_has_no_created_series_unless_the_environment_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_client.metrics, "_use_created", True)  # a fresh process's default
    monkeypatch.delenv("PROMETHEUS_DISABLE_CREATED_SERIES", raising=False)
    names = series(tmp_path)
    assert "reconciler_cycles_total" in names
    assert not any(n.endswith("_created") for n in names)


def test_the_created_series_are_written_when_the_environment_asks_for_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_client.metrics, "_use_created", True)  # what prometheus_client read from it
    monkeypatch.setenv("PROMETHEUS_DISABLE_CREATED_SERIES", "false")
    assert "reconciler_cycles_created" in series(tmp_path)


def test_a_figure_that_does_not_exist_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"^'Telemetry' object has no attribute 'nope'$"):
        Telemetry().nope  # noqa: B018
    assert getattr(Telemetry(), "nope", None) is None
